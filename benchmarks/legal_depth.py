"""Questions whose answer needs a definition or another provision: the share of the needed provisions an answer
cites, with and without following references (`retrieval.follow_references`), adding the definitions an answer
depends on (`retrieval.add_definitions`), quoting the provisions its cited words refer to
(`retrieval.add_references`) and those that refer to a cited one (`retrieval.add_referring`), asked through the
service's graph.

Reads `evaluation/legal_depth_questions.jsonl` (gold: every provision the answer needs) and the shared Zimbabwe QA
set's multi-hop questions (`../shared/data/zim_qa/questions.jsonl`, kind `multi_hop`: two gold sections each) and
asks each question of the orchestrator over an ingested data dir: with all off, then each turned on in turn; no model
(quote-only answers).
Recall is cited gold provisions over needed ones, counted by section; "all" is the share of questions whose every
needed provision is cited. The questions whose id's sha256 is 0 modulo 5 are held out (no rule is tuned on them)
and reported apart; "reference citations" counts the citations of kind reference and, in brackets, those of a needed
section.

    .venv/bin/python benchmarks/legal_depth.py --data-dir D --out benchmarks/results/legal_depth.md
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from report import SHARED, publish

from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import Settings

QUESTIONS = Path(__file__).resolve().parents[1] / "evaluation" / "legal_depth_questions.jsonl"
ZIM_QA = SHARED / "zim_qa" / "questions.jsonl"
Config = tuple[int, int, int, int]


Answers = dict[str, dict[str, list[str]]]


async def ask_all(data_dir: Path, config: Config, questions: list[dict[str, object]]) -> Answers:
    """For each question, the sections its answer cites (``cited``), those its evidence held (``held``: what every
    research step added) and those its reference citations quote (``referred``), with following, definitions,
    references and referring provisions set to ``config``."""
    follow, definitions, references, referring = config
    retrieval = {"follow_references": follow, "add_definitions": definitions, "add_references": references,
                 "add_referring": referring}  # fmt: skip
    settings = Settings(data_dir=data_dir, retrieval=retrieval)
    answers: Answers = {"cited": {}, "held": {}, "referred": {}}
    async with open_services(settings) as services:
        for q in questions:
            # A session of its own for each configuration: the same one again would be asked as a follow-up.
            session = f"ld-{'-'.join(str(n) for n in config)}-{q['id']}"
            final = [e async for e in services.orchestrator.stream(QueryRequest(q=str(q["question"]),
                                                                                session_id=session))][-1]  # fmt: skip
            qid = str(q["id"])
            citations = final.citations if isinstance(final, FinalEvent) else []
            added = [cid for step in final.research for cid in step.added] if isinstance(final, FinalEvent) else []
            answers["cited"][qid] = sorted({c.section_id for c in citations})
            answers["held"][qid] = sorted({cid.rsplit("/c", 1)[0] for cid in added})
            answers["referred"][qid] = [c.section_id for c in citations if c.kind == "reference"]
    return answers


def held_out(qid: str) -> bool:
    """Whether a question is held out: no rule is tuned on it."""
    return int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 5 == 0


def gold_of(questions: list[dict[str, object]]) -> dict[str, set[str]]:
    return {str(q["id"]): {f"{g['law_id']}#{g['section']}" for g in q["gold"]} for q in questions}  # type: ignore[attr-defined]


def recall(gold: dict[str, set[str]], cited: dict[str, set[str]]) -> str:
    hit, needed = sum(len(gold[i] & cited[i]) for i in gold), sum(len(g) for g in gold.values())
    return f"{hit}/{needed} = {hit / needed:.2f}"


def in_child(args: argparse.Namespace, config: Config) -> Answers:
    """``ask_all`` for ``config`` in a process of its own: the embedded vector store is opened once a process."""
    command = [sys.executable, __file__, "--data-dir", str(args.data_dir), "--questions", str(args.questions),
               "--zim-qa", str(args.zim_qa), "--one", ",".join(str(n) for n in config)]  # fmt: skip
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    answers: Answers = json.loads(done.stdout.strip().splitlines()[-1])
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--zim-qa", type=Path, default=ZIM_QA, help="the shared QA set (its multi_hop questions)")
    parser.add_argument("--follow", type=int, default=3, help="follow_references for the 'on' runs")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # "f,d,r,b": one configuration, its answers as JSON
    args = parser.parse_args()
    if args.one:
        config = tuple(int(n) for n in args.one.split(","))
        asked = [json.loads(line) for path in (args.questions, args.zim_qa) for line in path.read_text().splitlines()
                 if line.strip()]  # fmt: skip
        print(json.dumps(asyncio.run(ask_all(args.data_dir, config, asked))))  # type: ignore[arg-type]  # noqa: T201
        return
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    zim = [q for line in args.zim_qa.read_text().splitlines() if line.strip() and
           (q := json.loads(line))["kind"] == "multi_hop"]  # fmt: skip
    gold, zim_gold = gold_of(questions), gold_of(zim)
    rows, zim_rows, split_rows, runs = [], [], [], {}
    needed = sum(len(g) for g in gold.values())
    f = args.follow
    configs: list[Config] = [(0, 0, 0, 0), (f, 0, 0, 0), (f, 2, 0, 0), (f, 2, 2, 0), (f, 2, 2, 1)]
    for config in configs:
        start = time.perf_counter()
        answers = in_child(args, config)
        seconds = time.perf_counter() - start
        cited_all = {k: set(v) for k, v in answers["cited"].items()}
        held_all = {k: set(v) for k, v in answers["held"].items()}
        referred = answers["referred"]
        cited = runs[config] = {i: cited_all[i] for i in gold}
        held = {i: held_all[i] for i in gold}
        whole = sum(gold[i] <= cited[i] for i in gold)
        kinds = {
            kind: (sum(len(gold[i] & cited[i]) for i in ids), sum(len(gold[i]) for i in ids))
            for kind in ("definition", "reference")
            if (ids := [str(q["id"]) for q in questions if q.get("kind") == kind])
        }  # fmt: skip
        by_kind = " | ".join(f"{h}/{n} = {h / n:.2f}" for h, n in kinds.values())
        cells = " | ".join(str(c) for c in config)
        both = {**gold, **zim_gold}
        quoted = sum(len(referred[i]) for i in both)
        quoted_needed = sum(len([s for s in referred[i] if s in both[i]]) for i in both)
        tuned = {i: g for i, g in gold.items() if not held_out(i)}
        kept = {i: g for i, g in gold.items() if held_out(i)}
        split_rows.append(f"| {cells} | {recall(tuned, cited)} | {recall(kept, cited)} "
                          f"| {quoted} ({quoted_needed}) |")  # fmt: skip
        rows.append(f"| {cells} | {recall(gold, cited)} | {by_kind} | {whole}/{len(gold)} "
                    f"| {recall(gold, held)} | {seconds / (len(gold) + len(zim_gold)):.1f} |")  # fmt: skip
        zim_cited = {i: cited_all[i] for i in zim_gold}
        zim_held = {i: held_all[i] for i in zim_gold}
        zim_whole = sum(zim_gold[i] <= zim_cited[i] for i in zim_gold)
        zim_rows.append(f"| {cells} | {recall(zim_gold, zim_cited)} | {zim_whole}/{len(zim_gold)} "
                        f"| {recall(zim_gold, zim_held)} |")  # fmt: skip
    head = "| follow_references | add_definitions | add_references | add_referring "
    rule = "| --- | --- | --- | --- "
    lines = [
        "# Questions that need a definition or another provision",
        "",
        f"- questions: {args.questions.name} ({len(questions)}, {needed} needed provisions) and the {len(zim)} "
        f"multi_hop questions of {args.zim_qa.parent.name}/{args.zim_qa.name}; data dir: {args.data_dir}; no model "
        "(quote-only answers)",
        "- command: `python benchmarks/legal_depth.py --data-dir D`",
        "",
        f"{head}| needed provisions cited | of definition questions | of reference questions "
        "| questions with all cited | needed provisions in the evidence | s a question |",
        f"{rule}| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Tuned on and held out ({sum(held_out(i) for i in gold)} questions, sha256 of the id % 5 == 0), and the "
        "reference citations of all the answers (of a needed section, both sets):",
        "",
        f"{head}| needed cited, tuned on | needed cited, held out | reference citations (needed) |",
        f"{rule}| --- | --- | --- |",
        *split_rows,
        "",
        f"Shared Zimbabwe QA, multi_hop questions ({len(zim)}, two gold sections each):",
        "",
        f"{head}| gold sections cited | questions with all cited | gold sections in the evidence |",
        f"{rule}| --- | --- | --- |",
        *zim_rows,
    ]
    changes = (("definitions", configs[1], configs[2]), ("references", configs[2], configs[3]),
               ("referring provisions", configs[3], configs[4]))  # fmt: skip
    for label, before, after in changes:
        changed = [i for i in gold if runs[before][i] & gold[i] != runs[after][i] & gold[i]]
        lines += ["", f"Questions whose cited gold sections changed with {label} added: {len(changed)}"]
        for i in changed:
            gained = sorted((runs[after][i] - runs[before][i]) & gold[i])
            lost = sorted((runs[before][i] - runs[after][i]) & gold[i])
            lines.append(f"- {i}: gold gained {gained or '-'}, gold lost {lost or '-'}")
    publish(lines, args.out)


if __name__ == "__main__":
    main()
