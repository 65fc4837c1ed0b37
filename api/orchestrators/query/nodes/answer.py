"""Answer nodes: reuse a remembered answer, write one from the evidence, check it, keep it, or abstain."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from api.composer.citations import CitationTracker, stream_words
from api.composer.extractive import abstention, quote_answer
from api.composer.llm import is_abstention, source_citations, stream_llm_answer
from api.composer.structured import LLMCall, LLMOutcome
from api.composer.verification import verify_answer
from api.errors import UpstreamLLMError
from api.schemas.events import Citation
from api.tools.retrieval import Retrieved

from ..deps import QueryDeps
from ..state import QueryState, QueryUpdate
from .common import depends_on_session, finish, history, ms, turn, warn

MemoryKey = tuple[str, tuple[tuple[str, str], ...], str]


def _memory_key(state: QueryState, deps: QueryDeps) -> MemoryKey:
    """QA memory answers again only for the same corpus, filters and tenant."""
    return deps.corpus.version, tuple(sorted(state.filters.items())), state.tenant


async def recall(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Serve a verified answer given before to a near-identical question (same corpus, filters and tenant)."""
    start = time.perf_counter()
    deps = runtime.context
    if depends_on_session(state):
        return {}
    vector = await deps.retriever.embedder.embed_query(state.asked)
    found = await deps.memory.arecall(_memory_key(state, deps), vector)
    if found is None:
        return {"timings": {"recall": ms(start)}}
    tracker = CitationTracker([Citation.model_validate(c) for c in found.citations], runtime.stream_writer)
    stream_words(found.answer, tracker)
    warning = warn(runtime, "cached_answer", f"answered from memory: a verified answer to {found.question!r} "
                   f"(similarity {found.similarity:.2f})")  # fmt: skip
    update = finish(state, tracker, abstained=False)
    update |= QueryUpdate(warnings=[warning], cached=True, verified=True, timings={"recall": ms(start)})
    return update


async def synthesize(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Answer from the hits: with the LLM when one is configured, else (or when it fails) with direct quotes."""
    start = time.perf_counter()
    deps = runtime.context
    hits = [Retrieved(deps.corpus.chunks[h["chunk_id"]], h["score"], h["ranks"]) for h in state.hits]
    warnings = []
    if state.corrected and state.answer:
        warnings.append(warn(runtime, "answer_revised", "the answer above quoted words its sources do not contain; "
                             "a revised answer from a further search follows and replaces it"))  # fmt: skip
    tracker = CitationTracker([], runtime.stream_writer)
    stages: dict[str, float] = {}
    calls: list[LLMCall] = []
    if deps.llm is not None:
        bundle = await deps.bundler.bundle(hits)
        tracker.available = {c.index: c for c in source_citations(bundle)}
        stages["bundle"] = bundle.ms
        call_start = time.perf_counter()
        outcome: LLMOutcome = "ok"
        usage: dict[str, int] = {}
        try:
            usage = await stream_llm_answer(deps.llm, deps.skills["synthesize"], state.asked, history(state), tracker)
        except UpstreamLLMError as exc:
            outcome = "error"
            warnings.append(warn(runtime, "llm_unavailable", f"{exc.message}; answering with direct quotes instead"))
            if tracker.text:
                tracker.feed("\n\n")
        calls.append(LLMCall(skill="synthesize", ms=ms(call_start), input_tokens=usage.get("input_tokens", 0),
                             output_tokens=usage.get("output_tokens", 0), attempts=1, outcome=outcome))  # fmt: skip
        if outcome == "ok":
            if not tracker.used and not is_abstention(tracker.text):
                warnings.append(warn(runtime, "uncited_answer", "the model's answer cites no source; check it"))
            update = finish(state, tracker, is_abstention(tracker.text), ms(start), record_turn=False)
            update |= QueryUpdate(warnings=warnings, llm=calls, timings={**stages, **update.get("timings", {})})
            return update
    await quote_answer(deps.retriever.embedder, state.asked, hits, state.searched, tracker)
    update = finish(state, tracker, not tracker.used, ms(start), record_turn=False)
    update |= QueryUpdate(warnings=warnings, llm=calls, timings={**stages, **update.get("timings", {})})
    return update


async def verify(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Check the answer's quotes against the cited provisions and that every paragraph cites; warn on failures."""
    start = time.perf_counter()
    if state.abstained:
        return {"timings": {"verify": 0.0}}  # an abstention states nothing to check
    deps = runtime.context
    offered = {c["index"]: Citation.model_validate(c) for c in state.citations}
    provisions: dict[str, str] = {}
    for citation in offered.values():
        document = await deps.corpus.document(citation.doc_key)
        section = document.section(citation.section_id) if document else None
        if section is not None:
            provisions[citation.section_id] = section.text
    result = verify_answer(state.answer, offered, provisions, len(set(state.relevant_sections)))
    warnings = []
    if result.quotes_failed:
        warnings.append(warn(runtime, "unverified_quote", f"{len(result.quotes_failed)} quoted passage(s) do not "
                             "appear in the cited provisions; treat them as unverified"))  # fmt: skip
    if result.uncited_paragraphs or result.unknown_markers:
        warnings.append(warn(runtime, "unsupported_statement", "part of the answer cites no provision it was given; "
                             "treat it as unverified"))  # fmt: skip
    if result.too_few_sources:
        warnings.append(warn(runtime, "single_source", "the answer rests on one provision although the search found "
                             "several relevant ones; check the others before relying on it"))  # fmt: skip
    update = QueryUpdate(
        verification=result.summary(), verified=result.passed, warnings=warnings, timings={"verify": ms(start)}
    )
    if not result.passed and not state.corrected and deps.llm_calls_left(state.complexity, state.llm) >= 1:
        # One corrective research step: search for the words that could not be found (the provision they come
        # from, if any), or the question again, then answer once more.
        suggestion = result.quotes_failed[0] if result.quotes_failed else state.asked
        update |= QueryUpdate(corrected=True, pending=[" ".join(suggestion.split()[:40])])
    return update


async def remember(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Close the turn: record it in the session, and keep a verified, cited answer in QA memory."""
    deps = runtime.context
    if (
        state.verified
        and not state.abstained
        and state.citations
        and not state.cached
        and not depends_on_session(state)
    ):
        vector = await deps.retriever.embedder.embed_query(state.asked)
        await deps.memory.aremember(_memory_key(state, deps), vector, state.asked, state.answer, state.citations)
    return {"turns": [turn(state, state.answer)]}


async def abstain(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Say that the corpus holds nothing that answers the question, and what was searched."""
    tracker = CitationTracker([], runtime.stream_writer)
    stream_words(abstention(state.asked, state.searched), tracker)
    return finish(state, tracker, abstained=True)
