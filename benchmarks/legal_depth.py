"""Questions whose answer needs a definition or another provision: the share of the needed provisions an answer
cites, with and without following references (`retrieval.follow_references`) and adding the definitions an answer
depends on (`retrieval.add_definitions`), asked through the service's graph.

Reads `evaluation/legal_depth_questions.jsonl` (gold: every provision the answer needs) and asks each question of the
orchestrator over an ingested data dir: with both off, with following on, and with both on; no model (quote-only
answers).
Recall is cited gold provisions over needed ones, counted by section; "all" is the share of questions whose every
needed provision is cited.

    .venv/bin/python benchmarks/legal_depth.py --data-dir D --out benchmarks/results/legal_depth.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from report import publish

from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import Settings

QUESTIONS = Path(__file__).resolve().parents[1] / "evaluation" / "legal_depth_questions.jsonl"


async def ask_all(
    data_dir: Path, follow: int, definitions: int, questions: list[dict[str, object]]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The sections each question's answer cites, and the sections its evidence held (what every research step
    added), with following set to ``follow`` and ``definitions`` added at most."""
    settings = Settings(data_dir=data_dir, retrieval={"follow_references": follow, "add_definitions": definitions})
    cited: dict[str, set[str]] = {}
    evidence: dict[str, set[str]] = {}
    async with open_services(settings) as services:
        for q in questions:
            request = QueryRequest(q=str(q["question"]), session_id=f"ld-{follow}-{definitions}-{q['id']}")
            final = [e async for e in services.orchestrator.stream(request)][-1]
            qid = str(q["id"])
            cited[qid] = {c.section_id for c in final.citations} if isinstance(final, FinalEvent) else set()
            added = [cid for step in final.research for cid in step.added] if isinstance(final, FinalEvent) else []
            evidence[qid] = {cid.rsplit("/c", 1)[0] for cid in added}
    return cited, evidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--follow", type=int, default=3, help="follow_references for the 'on' run")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    gold = {str(q["id"]): {f"{g['law_id']}#{g['section']}" for g in q["gold"]} for q in questions}
    rows, runs = [], {}
    needed = sum(len(g) for g in gold.values())
    configs = [(0, 0), (args.follow, 0), (args.follow, 2)]
    for follow, definitions in configs:
        start = time.perf_counter()
        runs[follow, definitions], held = asyncio.run(ask_all(args.data_dir, follow, definitions, questions))
        cited = runs[follow, definitions]
        seconds = time.perf_counter() - start
        hit = sum(len(gold[i] & cited[i]) for i in gold)
        whole = sum(gold[i] <= cited[i] for i in gold)
        found = sum(len(gold[i] & held[i]) for i in gold)
        kinds = {
            kind: (sum(len(gold[i] & cited[i]) for i in ids), sum(len(gold[i]) for i in ids))
            for kind in ("definition", "reference")
            if (ids := [str(q["id"]) for q in questions if q.get("kind") == kind])
        }  # fmt: skip
        by_kind = " | ".join(f"{h}/{n} = {h / n:.2f}" for h, n in kinds.values())
        rows.append(f"| {follow} | {definitions} | {hit}/{needed} = {hit / needed:.2f} | {by_kind} "
                    f"| {whole}/{len(gold)} | {found}/{needed} = {found / needed:.2f} "
                    f"| {seconds / len(gold):.1f} |")  # fmt: skip
    before, after = runs[configs[0]], runs[configs[-1]]
    changed = [i for i in gold if before[i] != after[i]]
    lines = [
        "# Questions that need a definition or another provision",
        "",
        f"- questions: {args.questions.name} ({len(questions)}, {needed} needed provisions); data dir: "
        f"{args.data_dir}; no model (quote-only answers)",
        "- command: `python benchmarks/legal_depth.py --data-dir D`",
        "",
        "| follow_references | add_definitions | needed provisions cited | of definition questions | of reference "
        "questions | questions with all cited | needed provisions in the evidence | s a question |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Questions whose cited sections changed with both on: {len(changed)}",
    ]
    for i in changed:
        gained = sorted((after[i] - before[i]) & gold[i])
        lost = sorted((before[i] - after[i]) & gold[i])
        lines.append(f"- {i}: gold gained {gained or '-'}, gold lost {lost or '-'}")
    publish(lines, args.out)


if __name__ == "__main__":
    main()
