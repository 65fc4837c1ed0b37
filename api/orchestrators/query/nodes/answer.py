"""Answer nodes: reuse a remembered answer, write one from the evidence (the model under a stall watchdog and the
question's deadline, else verbatim quotes), or abstain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable

from langgraph.runtime import Runtime

from api.composer.answerability import missing_laws
from api.composer.citations import CitationTracker, stream_words
from api.composer.extractive import Part, abstention, extractive_answer, extractive_answer_in_parts
from api.composer.llm import is_abstention, source_citations, stream_llm_answer
from api.composer.related import related_quotes, related_text
from api.composer.structured import LLMCall, LLMOutcome
from api.errors import BackendError, UpstreamLLMError
from api.schemas.events import Citation, WarningCode
from api.tools.retrieval import Retrieved

from ..deps import QueryDeps
from ..evidence import searched_note, suggestions
from ..state import Cut, QueryState, QueryUpdate
from .common import depends_on_session, finish, history, memory_key, ms, scope, warn

log = logging.getLogger(__name__)
POLL_S = 0.1


async def recall(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Serve a verified answer given before to a near-identical question (same corpus, filters and tenant)."""
    start = time.perf_counter()
    deps = runtime.context
    if depends_on_session(state):
        return {}
    vector = await deps.retriever.embedder.embed_query(state.asked)
    found = await deps.memory.arecall(memory_key(state, deps), vector)
    if found is None:
        return {"timings": {"recall": ms(start)}}
    tracker = CitationTracker([Citation.model_validate(c) for c in found.citations], runtime.stream_writer)
    stream_words(found.answer, tracker)
    warning = warn(runtime, "cached_answer", f"answered from memory: a verified answer to {found.question!r} "
                   f"(similarity {found.similarity:.2f})")  # fmt: skip
    update = finish(state, tracker, abstained=False)
    update |= QueryUpdate(warnings=[warning], cached=True, verified=True, timings={"recall": ms(start)})
    return update


def evidence_hits(state: QueryState, deps: QueryDeps) -> list[Retrieved]:
    """The hits in the order synthesis reads them: what the corrective or refinement step found first."""
    first = [h for cid in state.focus for h in state.hits if h["chunk_id"] == cid]
    rest = [h for h in state.hits if h["chunk_id"] not in set(state.focus)]
    ordered = list({h["chunk_id"]: h for h in [*first, *rest]}.values())
    return [Retrieved(deps.corpus.chunks[h["chunk_id"]], h["score"], h["ranks"]) for h in ordered]


async def quote_only_evidence(state: QueryState, deps: QueryDeps) -> list[Retrieved] | None:
    """What the quote-only path would quote from, for a model answer that falls short: None when that path would
    abstain. It judges, without the model's grade, each part of the question as that path splits and searches it:
    the parts the model path searched as they are were judged then (the hits found are quoted from); the others
    (the model planned its own steps) are searched and judged now, and an answering part's own hits are quoted."""
    if deps.judge is None or state.answerable_without_grade:
        return evidence_hits(state, deps)
    filters = scope(state, deps)
    found: dict[str, Retrieved] = {}
    judged = {p.casefold() for p in state.judged_parts}
    for part in [p for p in state.parts or [state.asked] if p.casefold() not in judged]:
        try:
            result = await deps.retriever.retrieve_many(part, filters=filters)
        except BackendError:  # no search answered: nothing shows that the quotes would answer
            log.warning("the quote-only path's search failed; the fallback abstains")
            return None
        if deps.judge(part, result, None, state.tenant).without_grade:
            found |= {h.chunk.chunk_id: h for h in result.hits[: deps.settings.retrieval.top_k]}
    return list(found.values()) or None


async def quoted(state: QueryState, deps: QueryDeps, hits: list[Retrieved], start: int) -> tuple[str, list[Citation]]:
    """The quote-only answer from ``hits`` (numbered from ``start``). A question asked in parts also quotes what
    each part's own search adds (``extractive_answer_in_parts``): the research step's search, which the retrieval
    cache serves again. A failed search leaves the answer from ``hits`` alone."""
    embedder = deps.retriever.embedder
    if len(state.parts) > 1 and hits:
        filters, top = scope(state, deps), deps.settings.retrieval.top_k
        try:
            found = await asyncio.gather(*(deps.retriever.retrieve_many(part, filters=filters) for part in state.parts))
        except BackendError:
            log.warning("a part's search failed; the quotes are chosen from all the evidence")
        else:
            parts = [Part(result.hits[:top], result.lay_terms) for result in found]
            return await extractive_answer_in_parts(embedder, state.asked, hits, parts, start, state.lay_terms)
    return await extractive_answer(embedder, state.asked, hits, start, state.lay_terms)


async def watched(
    work: Awaitable[dict[str, int]], tracker: CitationTracker, stall_s: float, deadline: float
) -> tuple[Cut, dict[str, int]]:
    """Run the model's answer; stop it when no token has come for ``stall_s`` or at ``deadline`` (a
    ``time.monotonic()`` reading, 0 for none). Returns why it was stopped ("" when it finished) and the usage it
    reported; its errors propagate."""
    task = asyncio.ensure_future(work)
    seen, last = -1, time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if len(tracker.text) != seen:
                seen, last = len(tracker.text), now
            cut: Cut = "deadline" if deadline and now >= deadline else "stalled" if now - last >= stall_s else ""
            if cut:
                return cut, {}
            done, _ = await asyncio.wait({task}, timeout=POLL_S)
            if done:
                return "", task.result()
    finally:
        if not task.done():
            task.cancel()  # closes the model's stream: the model stops
            with contextlib.suppress(asyncio.CancelledError, UpstreamLLMError):
                await task


def finish_by(state: QueryState, deps: QueryDeps) -> float:
    """When the model must stop for the question to end on time: its deadline less a margin to verify and finish."""
    if not state.deadline:
        return 0.0
    return state.deadline - min(3.0, 0.25 * deps.settings.question_deadline_s)


async def synthesize(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Answer from the hits: with the LLM when one is configured and time and budget allow, else (or when it fails)
    with direct quotes."""
    start = time.perf_counter()
    deps = runtime.context
    hits = evidence_hits(state, deps)
    warnings = []
    if state.answer:
        warnings.append(warn(runtime, "answer_revised", "the answer above could not be verified in full; a revised "
                             "answer from a further search follows and replaces it"))  # fmt: skip
    tracker = CitationTracker([], runtime.stream_writer)
    stages: dict[str, float] = {}
    calls: list[LLMCall] = []
    in_time = not state.deadline or time.monotonic() < finish_by(state, deps)
    if deps.chat is not None and in_time and deps.llm_calls_left(state.complexity, state.llm) >= 1:
        bundle = await deps.bundler.bundle(hits)
        tracker.available = {c.index: c for c in source_citations(bundle)}
        offered = [c.model_dump() for c in tracker.available.values()]
        stages["bundle"] = bundle.ms
        call_start = time.perf_counter()
        outcome: LLMOutcome = "ok"
        usage: dict[str, int] = {}
        cut: Cut = ""
        work = stream_llm_answer(deps.chat, deps.skills["synthesize"], state.asked, history(state), tracker)
        try:
            cut, usage = await watched(work, tracker, deps.settings.llm.stall_timeout_s, finish_by(state, deps))
        except UpstreamLLMError as exc:
            tracker.flush()  # the model's last words go out before the warning about it
            outcome = "error"
            warnings.append(warn(runtime, "llm_unavailable", f"{exc.message}; answering with direct quotes instead"))
            if tracker.text:
                tracker.feed("\n\n")
        tracker.flush()
        if cut:
            outcome = "timeout"
            why = "no word came from the language model" if cut == "stalled" else "the question's time ran out"
            code: WarningCode = "llm_stalled" if cut == "stalled" else "deadline_reached"
            warnings.append(warn(runtime, code, f"{why}, so it was stopped; only what could be verified is kept"))
        calls.append(LLMCall(skill="synthesize", ms=ms(call_start), input_tokens=usage.get("input_tokens", 0),
                             output_tokens=usage.get("output_tokens", 0), attempts=1, outcome=outcome))  # fmt: skip
        if outcome == "ok" and not tracker.used and not is_abstention(tracker.text):
            warnings.append(warn(runtime, "uncited_answer", "the model's answer cites no source; check it"))
        if outcome != "error":
            update = finish(state, tracker, is_abstention(tracker.text) and not cut, ms(start), record_turn=False)
            update |= QueryUpdate(warnings=warnings, llm=calls, composer="model", offered=offered, cut=cut,
                                  timings={**stages, **update.get("timings", {})})  # fmt: skip
            return update
    if deps.chat is not None:  # the model failed or had no time or calls left: the quote-only path's answer
        hits = await quote_only_evidence(state, deps) or []
    start_at = len(tracker.available) + 1
    text, cited = await quoted(state, deps, hits, start_at)
    tracker.available.update({c.index: c for c in cited})
    stream_words(text or abstention_text(state, deps), tracker)
    update = finish(state, tracker, not tracker.used, ms(start), record_turn=False)
    update |= QueryUpdate(warnings=warnings, llm=calls, composer="extractive", offered=[],
                          timings={**stages, **update.get("timings", {})})  # fmt: skip
    return update


def abstention_text(state: QueryState, deps: QueryDeps) -> str:
    """Say that nothing found answers the question, what was searched, and what to ask instead (``suggestions``)."""
    found = [deps.corpus.chunks[h["chunk_id"]] for h in state.hits if h["chunk_id"] in deps.corpus.chunks]
    absent = missing_laws(state.asked, deps.corpus.titles_for(state.tenant))
    parts = [abstention(state.asked, state.searched),
             f"The documents I hold include no law named {', '.join(f'“{n}”' for n in absent)}." if absent else "",
             searched_note([s["query"] for s in state.steps]), suggestions(state.asked, found)]  # fmt: skip
    return " ".join(p for p in parts if p)


async def abstain(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Say that the corpus holds nothing that answers the question: with the closest provisions, quoted and cited
    (``related``), when the evidence was judged close enough to show; else what was searched and what to ask instead
    (``not_found``)."""
    deps = runtime.context
    tracker = CitationTracker([], runtime.stream_writer)
    quotes = await related_quotes(deps.retriever.embedder, state.asked, evidence_hits(state, deps), state.lay_terms) \
        if state.related and state.hits else []  # fmt: skip
    text, cited = related_text(quotes)
    tracker.available.update({c.index: c for c in cited})
    stream_words(text or abstention_text(state, deps), tracker)
    update = finish(state, tracker, abstained=True)
    update["composer"] = "extractive"
    update["outcome"] = "related" if tracker.used else "not_found"
    return update
