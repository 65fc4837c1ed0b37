"""Are two checkouts' answers identical? Each answers the same questions afresh; every final event is compared.

Usage:
    python benchmarks/same_answers.py --before /tmp/gweta-before --after . --data-dir D \
        [--questions evaluation/dev_questions.jsonl] [--out benchmarks/results/x.md]

Each checkout's `api` package answers in its own process (this virtualenv, run from the checkout), result cache and
QA memory off, over its own copy of the data dir, every question in a fresh session. Compared per question: the
answer text, the citations (every field), abstained and verified; and, for each side, that the token events joined
are the final answer (the stream a client renders is the answer it is given).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from report import publish

ROOT = Path(__file__).resolve().parent.parent

ANSWER = """
import asyncio, json, sys
from pathlib import Path
from api.services import open_services
from api.settings import Settings
from api.schemas.query import QueryRequest
from api.schemas.events import FinalEvent, TokenEvent

async def main() -> None:
    questions = [json.loads(line)["question"] for line in open(sys.argv[2]) if line.strip()]
    async with open_services(Settings(data_dir=Path(sys.argv[1]))) as services:
        for n, question in enumerate(questions):
            tokens, final = [], None
            async for event in services.orchestrator.stream(QueryRequest(q=question, session_id=f"same-{n}")):
                if isinstance(event, TokenEvent):
                    tokens.append(event.text)
                elif isinstance(event, FinalEvent):
                    final = event
            record = {"question": question, "answer": final.answer if final else None,
                      "citations": [c.model_dump() for c in final.citations] if final else [],
                      "abstained": final.abstained if final else None, "verified": final.verified if final else None,
                      "streamed_is_final": final is not None and "".join(tokens) == final.answer}
            print(json.dumps(record), flush=True)

asyncio.run(main())
"""
NO_CACHES = {"GWETA_RETRIEVAL__CACHE_TTL_S": "0", "GWETA_LLM__MEMORY_TTL_S": "0"}


def answers(checkout: Path, data_dir: Path, questions: Path, tmp: Path) -> list[dict[str, object]]:
    own = tmp / checkout.resolve().name
    shutil.copytree(data_dir, own)
    done = subprocess.run(
        [sys.executable, "-c", ANSWER, str(own), str(questions.resolve())],
        cwd=checkout,
        env={**os.environ, **NO_CACHES, "PYTHONPATH": str(checkout.resolve())},
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=ROOT)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=ROOT / "evaluation/dev_questions.jsonl")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = answers(args.before, args.data_dir, args.questions, Path(tmp) / "before")
        after = answers(args.after, args.data_dir, args.questions, Path(tmp) / "after")
    differ = [b["question"] for b, a in zip(before, after, strict=True) if b != a]
    lines = [
        "# Same answers before and after",
        "",
        f"- questions: {args.questions.name} ({len(before)}); data: {args.data_dir}; no LLM, caches off",
        f"- before: {args.before}; after: {args.after}",
        f"- identical (answer, citations, abstained, verified): {len(before) - len(differ)} of {len(before)}",
        f"- token events joined equal the final answer: before {sum(bool(b['streamed_is_final']) for b in before)}, "
        f"after {sum(bool(a['streamed_is_final']) for a in after)} of {len(before)}",
        *(f"- differs: {q}" for q in differ),
    ]
    publish(lines, args.out)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
