"""Questions whose answer needs a definition or another provision: the share of the needed provisions an answer
cites, with and without following references (`retrieval.follow_references`), adding the definitions an answer
depends on (`retrieval.add_definitions`) and quoting the provisions its cited words refer to
(`retrieval.add_references`), asked through the service's graph.

Reads `evaluation/legal_depth_questions.jsonl` (gold: every provision the answer needs) and the shared Zimbabwe QA
set's multi-hop questions (`../shared/data/zim_qa/questions.jsonl`, kind `multi_hop`: two gold sections each) and
asks each question of the orchestrator over an ingested data dir: with all off, with following on, with following
and definitions, and with all three; no model (quote-only answers).
Recall is cited gold provisions over needed ones, counted by section; "all" is the share of questions whose every
needed provision is cited.

    .venv/bin/python benchmarks/legal_depth.py --data-dir D --out benchmarks/results/legal_depth.md
"""

from __future__ import annotations

import argparse
import asyncio
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
Config = tuple[int, int, int]


async def ask_all(
    data_dir: Path, config: Config, questions: list[dict[str, object]]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The sections each question's answer cites, and the sections its evidence held (what every research step
    added), with following, definitions and references set to ``config``."""
    follow, definitions, references = config
    retrieval = {"follow_references": follow, "add_definitions": definitions, "add_references": references}
    settings = Settings(data_dir=data_dir, retrieval=retrieval)
    cited: dict[str, set[str]] = {}
    evidence: dict[str, set[str]] = {}
    async with open_services(settings) as services:
        for q in questions:
            request = QueryRequest(q=str(q["question"]), session_id=f"ld-{follow}-{definitions}-{references}-{q['id']}")
            final = [e async for e in services.orchestrator.stream(request)][-1]
            qid = str(q["id"])
            cited[qid] = {c.section_id for c in final.citations} if isinstance(final, FinalEvent) else set()
            added = [cid for step in final.research for cid in step.added] if isinstance(final, FinalEvent) else []
            evidence[qid] = {cid.rsplit("/c", 1)[0] for cid in added}
    return cited, evidence


def gold_of(questions: list[dict[str, object]]) -> dict[str, set[str]]:
    return {str(q["id"]): {f"{g['law_id']}#{g['section']}" for g in q["gold"]} for q in questions}  # type: ignore[attr-defined]


def recall(gold: dict[str, set[str]], cited: dict[str, set[str]]) -> str:
    hit, needed = sum(len(gold[i] & cited[i]) for i in gold), sum(len(g) for g in gold.values())
    return f"{hit}/{needed} = {hit / needed:.2f}"


def in_child(args: argparse.Namespace, config: Config) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``ask_all`` for ``config`` in a process of its own: the embedded vector store is opened once a process."""
    command = [sys.executable, __file__, "--data-dir", str(args.data_dir), "--questions", str(args.questions),
               "--zim-qa", str(args.zim_qa), "--one", ",".join(str(n) for n in config)]  # fmt: skip
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    return ({k: set(v) for k, v in answers["cited"].items()}, {k: set(v) for k, v in answers["held"].items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--zim-qa", type=Path, default=ZIM_QA, help="the shared QA set (its multi_hop questions)")
    parser.add_argument("--follow", type=int, default=3, help="follow_references for the 'on' runs")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # "f,d,r": one configuration, its answers as JSON
    args = parser.parse_args()
    if args.one:
        config = tuple(int(n) for n in args.one.split(","))
        asked = [json.loads(line) for path in (args.questions, args.zim_qa) for line in path.read_text().splitlines()
                 if line.strip()]  # fmt: skip
        cited, held = asyncio.run(ask_all(args.data_dir, config, asked))  # type: ignore[arg-type]
        print(json.dumps({"cited": {k: sorted(v) for k, v in cited.items()},  # noqa: T201
                          "held": {k: sorted(v) for k, v in held.items()}}))  # fmt: skip
        return
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    zim = [q for line in args.zim_qa.read_text().splitlines() if line.strip() and
           (q := json.loads(line))["kind"] == "multi_hop"]  # fmt: skip
    gold, zim_gold = gold_of(questions), gold_of(zim)
    rows, zim_rows, runs = [], [], {}
    needed = sum(len(g) for g in gold.values())
    configs: list[Config] = [(0, 0, 0), (args.follow, 0, 0), (args.follow, 2, 0), (args.follow, 2, 2)]
    for config in configs:
        start = time.perf_counter()
        cited_all, held_all = in_child(args, config)
        seconds = time.perf_counter() - start
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
        rows.append(f"| {cells} | {recall(gold, cited)} | {by_kind} | {whole}/{len(gold)} "
                    f"| {recall(gold, held)} | {seconds / (len(gold) + len(zim_gold)):.1f} |")  # fmt: skip
        zim_cited = {i: cited_all[i] for i in zim_gold}
        zim_held = {i: held_all[i] for i in zim_gold}
        zim_whole = sum(zim_gold[i] <= zim_cited[i] for i in zim_gold)
        zim_rows.append(f"| {cells} | {recall(zim_gold, zim_cited)} | {zim_whole}/{len(zim_gold)} "
                        f"| {recall(zim_gold, zim_held)} |")  # fmt: skip
    head = "| follow_references | add_definitions | add_references "
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
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Shared Zimbabwe QA, multi_hop questions ({len(zim)}, two gold sections each):",
        "",
        f"{head}| gold sections cited | questions with all cited | gold sections in the evidence |",
        "| --- | --- | --- | --- | --- | --- |",
        *zim_rows,
    ]
    for label, before, after in (("definitions", configs[1], configs[2]), ("references", configs[2], configs[3])):
        changed = [i for i in gold if runs[before][i] & gold[i] != runs[after][i] & gold[i]]
        lines += ["", f"Questions whose cited gold sections changed with {label} added: {len(changed)}"]
        for i in changed:
            gained = sorted((runs[after][i] - runs[before][i]) & gold[i])
            lost = sorted((runs[before][i] - runs[after][i]) & gold[i])
            lines.append(f"- {i}: gold gained {gained or '-'}, gold lost {lost or '-'}")
    publish(lines, args.out)


if __name__ == "__main__":
    main()
