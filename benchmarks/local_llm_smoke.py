"""Smoke run against a real local model: what the graph does today, and what the AttributionGate makes of it.

    python scripts/local_llm.py serve &            # http://127.0.0.1:8090/v1 (see README)
    .venv/bin/gweta ingest PATH --data-dir DIR     # the Acts to ask about
    .venv/bin/python benchmarks/local_llm_smoke.py --data-dir DIR [--url http://127.0.0.1:8090/v1]

For each question it (1) streams the whole query graph with the model configured and records the final event, the
structured calls per skill and whether each gave valid JSON, tokens and time; then (2) asks the model for a
synthesis of the same question over the same retrieval's context bundle, runs that answer through
``gate_model_answer`` and ``choose_final`` (the extractive answer as the fallback), and prints what the gate kept,
removed and re-attributed. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from api.composer.citations import CitationTracker
from api.composer.extractive import abstention, candidate_units, compose_extractive
from api.composer.llm import source_citations, stream_llm_answer
from api.composer.verification import ExtractiveAnswer, choose_final, gate_model_answer
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import LLMSettings, Settings

QUESTIONS = [
    "What is the minimum age of marriage?",
    "The business I work for has been sold to new owners. Do I keep my job?",
    "What is the speed limit for cars in urban areas?",
    "What is the penalty for marrying a child?",
    "Who is responsible for registering marriages?",
]


class CallLog(logging.Handler):
    """Counts structured calls that did not give a JSON object, by skill and outcome (structured.py logs them)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.failed: Counter[tuple[str, str]] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "%s call %s after %.0f ms" and isinstance(record.args, tuple):
            self.failed[(str(record.args[0]), str(record.args[1]))] += 1


async def graph_run(services: Any, question: str, n: int) -> tuple[FinalEvent | None, list[str], float]:
    start = time.perf_counter()
    final, warnings = None, []
    async for event in services.orchestrator.stream(QueryRequest(q=question, session_id=f"smoke-{n}")):
        if isinstance(event, FinalEvent):
            final = event
        elif getattr(event, "event", "") == "warning":
            warnings.append(event.code)
        elif getattr(event, "event", "") == "error":
            warnings.append(f"error:{event.code}")
    return final, warnings, time.perf_counter() - start


async def gate_run(services: Any, question: str) -> dict[str, Any]:
    deps = services.orchestrator.deps
    result = await deps.retriever.retrieve(question, top_k=deps.settings.retrieval.top_k)
    bundle = await deps.bundler.bundle(result.hits)
    tracker = CitationTracker(source_citations(bundle), lambda _event: None)
    start = time.perf_counter()
    usage = await stream_llm_answer(deps.llm, deps.skills["synthesize"], question, "", tracker)
    seconds = time.perf_counter() - start
    provisions: dict[str, str] = {}
    for citation in tracker.available.values():
        document = await deps.corpus.document(citation.doc_key)
        section = document.section(citation.section_id) if document else None
        if section is not None:
            provisions[citation.section_id] = section.text
    gate = gate_model_answer(tracker.text, tracker.available, provisions)
    candidates = candidate_units(result.hits)
    text, citations = compose_extractive(question, candidates)
    extractive = ExtractiveAnswer(text, citations, not text)
    final = choose_final(gate, extractive, abstention(question, 1))
    return {"answer": tracker.text, "gate": gate, "final": final, "usage": usage, "seconds": seconds}


def short(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--url", default="http://127.0.0.1:8090/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    args = parser.parse_args()
    # Time limits for a slow CPU model: ~7 s to first token, 10-15 tokens/s with one thread.
    llm = LLMSettings(backend="openai", base_url=args.url, model=args.model, timeout_s=240, max_tokens=400,
                      call_timeout_s=90, route_timeout_s=60, expand_timeout_s=90, call_attempts=1)  # fmt: skip
    settings = Settings(data_dir=args.data_dir, llm=llm)
    calls = CallLog()
    logging.getLogger("api.composer.structured").addHandler(calls)
    logging.getLogger("api.composer.structured").setLevel(logging.WARNING)
    lines = [f"model: {args.model} at {args.url}; data dir {args.data_dir}", ""]
    by_skill: Counter[str] = Counter()
    async with open_services(settings) as services:
        lines.append(f"corpus: {len(services.corpus.manifest.documents)} documents, {len(services.corpus)} chunks\n")
        lines += ["## 1. The query graph as it stands (verify node: paragraph markers and 8-word quotes)", "",
                  "| question | s | verified | citations | LLM calls (by skill) | tokens in/out | warnings |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for n, question in enumerate(QUESTIONS[: args.questions]):
            final, warnings, seconds = await graph_run(services, question, n)
            if final is None:
                lines.append(f"| {short(question, 60)} | {seconds:.0f} | no final event | | | | {warnings} |")
                continue
            skills = {k.removeprefix("calls_"): v for k, v in final.usage.items() if k.startswith("calls_")}
            by_skill.update(skills)
            cited = ", ".join(c.section_id for c in final.citations) or "none"
            lines.append(f"| {short(question, 60)} | {seconds:.0f} | {final.verified} | {cited} | {skills} | "
                         f"{final.usage.get('input_tokens', 0)}/{final.usage.get('output_tokens', 0)} | "
                         f"{', '.join(warnings) or '-'} |")  # fmt: skip
            lines.append(f"|  | answer: {short(final.answer)} | | | | | |")
        lines += ["", "Structured calls by skill (valid JSON object = neither unparsable, error nor timeout):", ""]
        lines += ["| skill | calls | valid JSON | unparsable | timeout | error |", "|---|---|---|---|---|---|"]
        for skill, count in sorted(by_skill.items()):
            if skill == "synthesize":
                continue
            bad = {o: calls.failed[(skill, o)] for o in ("unparsable", "timeout", "error")}
            lines.append(f"| {skill} | {count} | {count - sum(bad.values())} | {bad['unparsable']} | "
                         f"{bad['timeout']} | {bad['error']} |")  # fmt: skip
        lines += ["", "## 2. The same model's synthesis through the sentence-level AttributionGate", "",
                  "| question | s | tokens in/out | claims | supported | removed (why) | how cited | shown |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for question in QUESTIONS[: args.questions]:
            run = await gate_run(services, question)
            gate, final = run["gate"], run["final"]
            why = "; ".join(f"{s.verdict}: {short(s.text, 90)} {s.missing_facts or ''}" for s in gate.failed) or "-"
            how = dict(Counter(s.how for s in gate.claims if s.how))
            tokens = f"{run['usage'].get('input_tokens')}/{run['usage'].get('output_tokens')}"
            supported = len(gate.claims) - len(gate.failed)
            lines.append(f"| {short(question, 60)} | {run['seconds']:.0f} | {tokens} | {len(gate.claims)} | {supported}"
                         f" | {why} | {how or '-'} | {final.source} {[c for c, _ in final.warnings]} |")  # fmt: skip
            lines.append(f"|  | model: {short(run['answer'])} | | | | | | |")
            lines.append(f"|  | shown: {short(final.answer)} | | | | | | |")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
