"""The query graph's nodes: small async functions that read state and the frozen dependencies, emit stream
events through the graph's writer, and return partial state updates."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from api.composer.citations import CitationTracker, stream_words
from api.composer.extractive import abstention, candidate_units, compose_extractive
from api.composer.llm import is_abstention, source_citations, stream_llm_answer
from api.composer.skills import Skill
from api.composer.verification import verify_answer
from api.errors import BackendError, GwetaError, UpstreamLLMError
from api.schemas.events import Citation, WarningEvent
from api.settings import Settings
from api.tools.corpus import Corpus
from api.tools.retrieval import HybridRetriever, Retrieved
from api.tools.vector_store import SearchFilters

from .screening import classify_intent as classify_intent_of
from .screening import follow_up_query, screen
from .state import HitRef, QueryState, RouteDecided, Turn

log = logging.getLogger(__name__)
HISTORY_TURNS = 3


@dataclass(frozen=True, slots=True)
class QueryDeps:
    """Everything nodes may use besides state, built once at start-up and passed as the graph's context."""

    settings: Settings
    corpus: Corpus
    retriever: HybridRetriever
    llm: BaseChatModel | None
    skills: dict[str, Skill]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _warn(runtime: Runtime[QueryDeps], code: str, message: str) -> tuple[str, str]:
    log.warning("%s: %s", code, message)
    runtime.stream_writer(WarningEvent(code=code, message=message))
    return code, message


async def guard(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Screen for prompt injection; keep any genuine question embedded in it, block the rest."""
    start = time.perf_counter()
    screened = screen(state.question)
    warnings = [*state.warnings]
    update: dict[str, Any] = {"query": screened.question or state.question, "injection": screened.injection}
    if screened.injection:
        log.warning("prompt injection screened (blocked=%s)", screened.blocked)
    if screened.blocked:
        runtime.stream_writer(RouteDecided("blocked", "instructions, not a question"))
        warnings.append(_warn(runtime, "prompt_injection", "the message tries to change how I work; I ignored it"))
        update.update(route="blocked", route_reason="instructions, not a question")
    elif screened.injection:
        warnings.append(_warn(runtime, "prompt_injection", "I ignored instructions in the message and answer only "
                              "the question in it"))  # fmt: skip
    return {**update, "warnings": warnings, "timings": {**state.timings, "guard": _ms(start)}}


async def contextualize(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Make a follow-up question self-contained with the session's previous question."""
    previous = state.turns[-1].get("query", state.turns[-1]["question"]) if state.turns else ""
    rewritten = follow_up_query(state.query or state.question, previous)
    return {"query": rewritten} if rewritten else {}


async def classify_intent(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    start = time.perf_counter()
    covered = runtime.context.corpus.jurisdictions
    route, reason = classify_intent_of(state.query, covered)
    runtime.stream_writer(RouteDecided(route, reason))
    return {"route": route, "route_reason": reason, "timings": {**state.timings, "route": _ms(start)}}


def _reply(state: QueryState, deps: QueryDeps) -> str:
    titles = deps.corpus.titles
    sample = ", ".join(titles[:3]) + (" and others" if len(titles) > 3 else "")
    match state.route:
        case "blocked":
            return (
                "I answer questions about the law in the documents I hold, with a citation for every statement. "
                "Your message asks me to change how I work, reveal my set-up or produce fixed text, which I do not "
                "do. Ask me a legal question and I will answer it."
            )
        case "conversational":
            return (
                f"Hello. I answer questions about the law in the documents I hold ({sample or 'none yet'}), and "
                "every answer quotes and cites the provision it comes from. What would you like to know?"
            )
        case "clarify":
            return (
                "Could you tell me a little more? Name the situation or the right you are asking about, for example "
                f"'How much notice must an employer give?'. The documents I hold include {sample or 'none yet'}."
            )
        case _:
            covered = ", ".join(sorted(deps.corpus.jurisdictions)) or "no jurisdiction yet"
            return (
                f"The documents I hold cover {covered} law only, and your question is about another jurisdiction "
                f"({state.route_reason.removeprefix('asks about ')}), so I cannot answer it and will not guess."
            )


async def respond(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Answer without retrieval: a blocked message, a greeting, a request to clarify, or out of scope."""
    tracker = CitationTracker([], runtime.stream_writer)
    stream_words(_reply(state, runtime.context), tracker)
    return _finish(state, tracker, True, state.warnings, {}, 0.0)


async def retrieve(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    start = time.perf_counter()
    filters = SearchFilters.from_request(state.filters)
    result = await runtime.context.retriever.retrieve(state.query or state.question, filters=filters)
    warnings = [*state.warnings]
    for code, message in result.warnings:
        if code == "retrieval_unavailable":
            raise BackendError("search is unavailable right now; please try again shortly")
        warnings.append(_warn(runtime, code, message))
    hits: list[HitRef] = [{"chunk_id": h.chunk.chunk_id, "score": h.score, "ranks": dict(h.ranks)} for h in result.hits]
    timings = {**state.timings, **result.timings, "retrieve": _ms(start)}
    return {"hits": hits, "searched": len(runtime.context.corpus), "warnings": warnings, "timings": timings}


def _history(turns: list[Turn]) -> str:
    return "\n".join(f"Q: {t['question']}\nA: {t['answer'][:400]}" for t in turns[-HISTORY_TURNS:])


async def synthesize(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Answer from the hits: with the LLM when one is configured, else (or when it fails) with direct quotes."""
    start = time.perf_counter()
    deps = runtime.context
    hits = [Retrieved(deps.corpus.chunks[h["chunk_id"]], h["score"], h["ranks"]) for h in state.hits]
    warnings = [*state.warnings]
    usage: dict[str, int] = {}
    tracker = CitationTracker(source_citations(hits) if deps.llm else [], runtime.stream_writer)
    if deps.llm is not None:
        try:
            usage = await stream_llm_answer(
                deps.llm,
                deps.skills["synthesize"],
                state.query or state.question,
                _history(state.turns),
                hits,
                tracker,
            )
        except UpstreamLLMError as exc:
            usage = {"llm_calls": 1}
            warnings.append(_warn(runtime, "llm_unavailable", f"{exc.message}; answering with direct quotes instead"))
            if tracker.text:
                tracker.feed("\n\n")
        else:
            if not tracker.used and not is_abstention(tracker.text):
                warnings.append(_warn(runtime, "uncited_answer", "the model's answer cites no source; check it"))
            return _finish(state, tracker, is_abstention(tracker.text), warnings, usage, _ms(start))
    await _quote_answer(deps, state, hits, tracker)
    return _finish(state, tracker, not tracker.used, warnings, usage, _ms(start))


async def _quote_answer(deps: QueryDeps, state: QueryState, hits: list[Retrieved], tracker: CitationTracker) -> None:
    """Stream the extractive answer (numbered after any citations already offered), or an abstention."""
    candidates = candidate_units(hits)
    question = state.query or state.question
    similarity = await _similarity(deps, question, [unit for _, _, unit in candidates])
    first_index = len(tracker.available) + 1
    text, citations = compose_extractive(question, candidates, similarity, start=first_index)
    tracker.available.update({c.index: c for c in citations})
    stream_words(text or abstention(question, state.searched), tracker)


async def _similarity(deps: QueryDeps, question: str, sentences: list[str]) -> list[float] | None:
    """Cosine of each sentence to the question; None (lexical scoring only) if the embedder fails."""
    if not sentences:
        return []
    try:
        vectors = await deps.retriever.embedder.embed_documents([question, *sentences])
    except GwetaError as exc:
        log.warning("sentence similarity unavailable: %s", exc.message)
        return None
    return [float(v) for v in vectors[1:] @ vectors[0]]


def _finish(
    state: QueryState,
    tracker: CitationTracker,
    abstained: bool,
    warnings: list[tuple[str, str]],
    usage: dict[str, int],
    elapsed: float,
) -> dict[str, Any]:
    return {
        "answer": tracker.text,
        "citations": [c.model_dump() for c in tracker.used],
        "abstained": abstained,
        "warnings": warnings,
        "usage": usage,
        "timings": {**state.timings, "synthesize": elapsed},
        "turns": [Turn(question=state.question, query=state.query or state.question, answer=tracker.text)],
    }


async def verify(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Check the answer's quotes against the cited provisions and that every paragraph cites; warn on failures."""
    start = time.perf_counter()
    if state.abstained:
        return {"timings": {**state.timings, "verify": 0.0}}  # an abstention states nothing to check
    deps = runtime.context
    offered = {c["index"]: Citation.model_validate(c) for c in state.citations}
    provisions: dict[str, str] = {}
    for citation in offered.values():
        document = await deps.corpus.document(citation.doc_key)
        section = document.section(citation.section_id) if document else None
        if section is not None:
            provisions[citation.section_id] = section.text
    result = verify_answer(state.answer, offered, provisions)
    warnings = [*state.warnings]
    if result.quotes_failed:
        warnings.append(_warn(runtime, "unverified_quote", f"{len(result.quotes_failed)} quoted passage(s) do not "
                              "appear in the cited provisions; treat them as unverified"))  # fmt: skip
    if result.uncited_paragraphs or result.unknown_markers:
        warnings.append(_warn(runtime, "unsupported_statement", "part of the answer cites no provision it was given; "
                              "treat it as unverified"))  # fmt: skip
    return {
        "verification": result.summary(),
        "verified": result.passed,
        "warnings": warnings,
        "timings": {**state.timings, "verify": _ms(start)},
    }


async def abstain(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    tracker = CitationTracker([], runtime.stream_writer)
    stream_words(abstention(state.query or state.question, state.searched), tracker)
    return _finish(state, tracker, True, state.warnings, {}, 0.0)
