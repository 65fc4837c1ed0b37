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
import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from api.composer.citations import CitationTracker
from api.composer.extractive import abstention, candidate_units, compose_extractive
from api.composer.judge.choice import ExtractiveAnswer, choose_final
from api.composer.judge.gate import gate_model_answer
from api.composer.llm import source_citations, stream_llm_answer
from api.composer.structured import ask_json
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import LLMSettings, Settings

QUESTIONS = [
    "What is the minimum age of marriage?",
    "What is the speed limit for cars in urban areas?",
    "The business I work for has been sold to new owners. Do I keep my job?",
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
    assert deps.chat is not None
    usage = await stream_llm_answer(deps.chat, deps.skills["synthesize"], question, "", tracker)
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


class Emitter:
    """Prints each line of the report as soon as it is known (a slow model's run is long; a cut run still reports)."""

    def __call__(self, line: str) -> None:
        print(line, flush=True)


async def json_probe(services: Any, question: str, out: Emitter) -> None:
    """One structured call per skill on ``question``, in JSON mode, with the outcome and the server's usage."""
    deps = services.orchestrator.deps
    hits = (await deps.retriever.retrieve(question, top_k=2)).hits
    passages = "\n\n".join(h.chunk.text[:600] for h in hits) or "(none)"
    values = {"query": question, "question": question, "message": question, "passages": passages,
              "evidence": passages, "done": "(none)", "history": "(none)", "covered": "Zimbabwe Acts"}  # fmt: skip
    out(f"JSON probe on {question!r} (one call per skill, JSON mode, not streamed):\n")
    out("| skill | outcome | s | tokens in/out (server) | reply |\n|---|---|---|---|---|")
    for name in ("guard", "route", "rewrite", "plan", "expand", "grade", "replan"):
        skill = deps.skills[name]
        call = await ask_json(deps.llm, skill, 300, 1, {v: values.get(v, "(none)") for v in skill.variables})
        out(f"| {name} | {call.outcome} | {call.ms / 1000:.0f} | {call.input_tokens}/{call.output_tokens} | "
            f"{short(json.dumps(call.result), 160) if call.result else '-'} |")  # fmt: skip
    out("")


def short(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--url", default="http://127.0.0.1:8090/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--skip", type=int, default=0, help="start at this question")
    parser.add_argument("--gate-only", action="store_true", help="skip the graph run (a slow machine)")
    parser.add_argument("--context-tokens", type=int, default=0, help="a smaller context bundle (a slow machine)")
    parser.add_argument("--json-probe", action="store_true", help="one structured call per skill, JSON checked")
    args = parser.parse_args()
    # Time limits for a slow CPU model: ~7 s to first token, 10-15 tokens/s with one thread.
    llm = LLMSettings(backend="openai", base_url=args.url, model=args.model, timeout_s=240, max_tokens=400,
                      call_timeout_s=90, route_timeout_s=60, expand_timeout_s=90, call_attempts=1)  # fmt: skip
    settings = Settings(data_dir=args.data_dir, llm=llm)
    if args.context_tokens:
        retrieval = settings.retrieval.model_copy(update={"context_tokens": args.context_tokens})
        settings = settings.model_copy(update={"retrieval": retrieval})
    calls = CallLog()
    logging.getLogger("api.composer.structured").addHandler(calls)
    logging.getLogger("api.composer.structured").setLevel(logging.WARNING)
    out = Emitter()
    out(f"model: {args.model} at {args.url}; data dir {args.data_dir}\n")
    by_skill: Counter[str] = Counter()
    async with open_services(settings) as services:
        out(f"corpus: {len(services.corpus.manifest.documents)} documents, {len(services.corpus)} chunks\n")
        for n, question in enumerate(QUESTIONS[args.skip : args.skip + args.questions]):
            out(f"### {question}\n")
            if args.gate_only:
                final, warnings, seconds = None, ["graph run skipped (--gate-only)"], 0.0
            else:
                final, warnings, seconds = await graph_run(services, question, n)
            out("1. The query graph as it stands (verify node: paragraph markers, 8-word quotes, cited facts):\n")
            if final is None:
                out(f"   no final event after {seconds:.0f} s; warnings {warnings}\n")
            else:
                skills = {k.removeprefix("calls_"): v for k, v in final.usage.items() if k.startswith("calls_")}
                by_skill.update(skills)
                cited = ", ".join(c.section_id for c in final.citations) or "none"
                out(f"   - {seconds:.0f} s; verified {final.verified}; citations: {cited}; LLM calls {skills}; "
                    f"tokens in/out {final.usage.get('input_tokens', 0)}/{final.usage.get('output_tokens', 0)}; "
                    f"verification {final.verification}; warnings {', '.join(warnings) or '-'}")  # fmt: skip
                out(f"   - answer: {short(final.answer, 700)}\n")
            run = await gate_run(services, question)
            gate, shown = run["gate"], run["final"]
            out("2. A synthesis over the same retrieval, through the sentence-level AttributionGate:\n")
            out(
                f"   - {run['seconds']:.0f} s; tokens in/out {run['usage'].get('input_tokens')}/"
                f"{run['usage'].get('output_tokens')} (estimated: {bool(run['usage'].get('usage_estimated'))})"
            )
            out(f"   - model: {short(run['answer'], 900)}")
            for check in gate.claims:
                out(f"   - claim [{check.verdict}{', ' + check.how if check.how else ''}; support {check.score:.2f}"
                    f"{'; missing ' + str(check.missing_facts) if check.missing_facts else ''}"
                    f"{'; quotes failed ' + str(len(check.quotes_failed)) if check.quotes_failed else ''}]: "
                    f"{short(check.text, 200)}")  # fmt: skip
            out(f"   - gate: {gate.summary()}")
            out(f"   - shown: {shown.source} {[c for c, _ in shown.warnings]}: {short(shown.answer, 500)}")
            out(f"   - citations shown: {[(c.index, c.section_id, short(c.quote, 90)) for c in shown.citations]}\n")
        if args.json_probe:
            await json_probe(services, QUESTIONS[args.skip], out)
        out("Structured calls by skill (valid JSON object = neither unparsable, error nor timeout):\n")
        out("| skill | calls | valid JSON | unparsable | timeout | error |\n|---|---|---|---|---|---|")
        for skill, count in sorted(by_skill.items()):
            if skill == "synthesize":
                continue
            bad = {o: calls.failed[(skill, o)] for o in ("unparsable", "timeout", "error")}
            out(f"| {skill} | {count} | {count - sum(bad.values())} | {bad['unparsable']} | "
                f"{bad['timeout']} | {bad['error']} |")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
