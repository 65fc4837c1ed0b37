"""Where one answer's CPU goes: cProfile over answering questions in-process, with the graph's own timings.

Usage:
    python benchmarks/profile_answer.py [--data-dir D] [--repeat 3] [--top 25] [--out results/x.md]

Opens the same services `gweta serve` builds (result cache and QA memory off), answers each of the sample
questions once to warm up, then ``--repeat`` more times under cProfile, and prints process CPU per answer, the mean
of each node's time from `final.timings`, and the functions with the most cumulative time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from first_token import SAMPLE_QUESTIONS
from report import publish

ROOT = Path(__file__).resolve().parent.parent


async def answer_all(
    orchestrator: Any, questions: list[str], timings: dict[str, list[float]], answers: dict[str, Any]
) -> None:
    from api.schemas.events import FinalEvent
    from api.schemas.query import QueryRequest

    for n, question in enumerate(questions):
        request = QueryRequest(q=question, session_id=f"profile-{n}-{time.monotonic_ns()}")
        async for event in orchestrator.stream(request):
            if isinstance(event, FinalEvent):
                for node, ms in event.timings.items():
                    timings[node].append(ms)
                answers[question] = {"answer": event.answer, "citations": [c.model_dump() for c in event.citations]}


async def run(args: argparse.Namespace, data_dir: Path) -> list[str]:
    sys.path.insert(0, str(args.root.resolve()))  # the checkout to profile (before/after)
    from api.services import open_services
    from api.settings import LLMSettings, RetrievalSettings, Settings

    settings = Settings(
        data_dir=data_dir, retrieval=RetrievalSettings(cache_ttl_s=0), llm=LLMSettings(memory_ttl_s=0)
    )  # fmt: skip
    async with open_services(settings) as services:
        questions = list(SAMPLE_QUESTIONS)
        if args.questions:
            lines = args.questions.read_text().splitlines()
            questions = [json.loads(line)["question"] for line in lines if line.strip()]
        questions = questions[: args.limit]
        answers: dict[str, Any] = {}
        await answer_all(services.orchestrator, questions, defaultdict(list), answers)  # warm-up
        timings: dict[str, list[float]] = defaultdict(list)
        profiler = cProfile.Profile()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        profiler.enable()
        await answer_all(services.orchestrator, questions * args.repeat, timings, answers)
        profiler.disable()
        count = len(questions) * args.repeat
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if args.answers:
        args.answers.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer).sort_stats("cumulative")
    stats.print_stats(args.top)
    nodes = sorted(timings.items(), key=lambda kv: -sum(kv[1]))
    return [
        f"# One answer's CPU ({count} answers, {data_dir if args.data_dir else 'sample corpus'}, no LLM)",
        "",
        f"- process CPU per answer: {cpu / count * 1000:.0f} ms (all threads; wall {wall / count * 1000:.0f} ms"
        " per answer, one at a time; the profiler itself adds some)",
        "- mean ms per node (`final.timings`): "
        + ", ".join(f"{k} {sum(v) / len(v):.1f}" for k, v in nodes if k != "total"),
        "",
        "```",
        *buffer.getvalue().strip().splitlines()[: args.top + 12],
        "```",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose api package is profiled")
    parser.add_argument("--questions", type=Path, help="JSONL with a 'question' field per line")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--answers", type=Path, help="write every answer and its citations here (to compare)")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    data_dir = args.data_dir or Path(tmp.name)
    if args.data_dir is None:
        subprocess.run(
            [sys.executable, "-m", "api.cli", "ingest", str(ROOT / "sample_corpus"), "--data-dir", str(data_dir)],
            check=True, capture_output=True, cwd=ROOT,
        )  # fmt: skip
    try:
        publish(asyncio.run(run(args, data_dir)), args.out)
    finally:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
