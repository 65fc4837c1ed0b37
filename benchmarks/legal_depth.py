"""Questions whose answer needs a definition or another provision: the share of the needed provisions an answer
cites, with and without following references (`retrieval.follow_references`), asked through the service's graph.

Reads `evaluation/legal_depth_questions.jsonl` (gold: every provision the answer needs) and asks each question of the
orchestrator over an ingested data dir, once with following off and once on, with no model (quote-only answers).
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
    data_dir: Path, follow: int, questions: list[dict[str, object]]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The sections each question's answer cites, and the sections its evidence held (what every research step
    added), with following set to ``follow``."""
    settings = Settings(data_dir=data_dir, retrieval={"follow_references": follow})
    cited: dict[str, set[str]] = {}
    evidence: dict[str, set[str]] = {}
    async with open_services(settings) as services:
        for q in questions:
            request = QueryRequest(q=str(q["question"]), session_id=f"ld-{follow}-{q['id']}")
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
    for follow in (0, args.follow):
        start = time.perf_counter()
        runs[follow], held = asyncio.run(ask_all(args.data_dir, follow, questions))
        seconds = time.perf_counter() - start
        hit = sum(len(gold[i] & runs[follow][i]) for i in gold)
        whole = sum(gold[i] <= runs[follow][i] for i in gold)
        found = sum(len(gold[i] & held[i]) for i in gold)
        rows.append(f"| {follow} | {hit}/{needed} = {hit / needed:.2f} | {whole}/{len(gold)} "
                    f"| {found}/{needed} = {found / needed:.2f} | {seconds / len(gold):.1f} |")  # fmt: skip
    changed = [i for i in gold if runs[0][i] != runs[args.follow][i]]
    lines = [
        "# Questions that need a definition or another provision",
        "",
        f"- questions: {args.questions.name} ({len(questions)}, {sum(len(g) for g in gold.values())} needed "
        f"provisions); data dir: {args.data_dir}; no model (quote-only answers)",
        "- command: `python benchmarks/legal_depth.py --data-dir D`",
        "",
        "| follow_references | needed provisions cited | questions with all cited | needed provisions in the evidence "
        "| s a question |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"Questions whose cited sections changed with following: {len(changed)}",
    ]
    for i in changed:
        gained = sorted((runs[args.follow][i] - runs[0][i]) & gold[i])
        lost = sorted((runs[0][i] - runs[args.follow][i]) & gold[i])
        lines.append(f"- {i}: gold gained {gained or '-'}, gold lost {lost or '-'}")
    publish(lines, args.out)


if __name__ == "__main__":
    main()
