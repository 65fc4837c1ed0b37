"""The query graph's nodes: small async functions that read state and the frozen dependencies, emit stream
events through the graph's writer, and return partial state updates."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from api.composer.citations import CitationTracker, stream_words
from api.composer.extractive import abstention, candidate_units, compose_extractive
from api.composer.llm import is_abstention, source_citations, stream_llm_answer
from api.composer.skills import Skill
from api.composer.structured import ask_json
from api.composer.verification import verify_answer
from api.errors import BackendError, GwetaError, UpstreamLLMError
from api.schemas.documents import Chunk
from api.schemas.events import Citation, WarningEvent
from api.settings import Settings
from api.tools.context import ContextBundler
from api.tools.corpus import Corpus
from api.tools.memory import AnswerMemory
from api.tools.retrieval import HybridRetriever, Retrieved, reciprocal_rank_fusion
from api.tools.vector_store import Hit, SearchFilters

from .screening import MULTI_HOP, SUSPICIOUS, follow_up_query, is_unsure, screen
from .screening import classify_intent as classify_intent_of
from .state import HitRef, LLMCall, QueryState, RouteDecided, Step, Turn

log = logging.getLogger(__name__)
HISTORY_TURNS = 3
HYDE_TOKENS = 120  # a hypothetical passage longer than this is cut: it only has to land near the real provision


@dataclass(frozen=True, slots=True)
class QueryDeps:
    """Everything nodes may use besides state, built once at start-up and passed as the graph's context."""

    settings: Settings
    corpus: Corpus
    retriever: HybridRetriever
    bundler: ContextBundler
    llm: BaseChatModel | None
    skills: dict[str, Skill]
    memory: AnswerMemory


def _calls_left(complexity: str, calls: list[LLMCall], deps: QueryDeps) -> int:
    if deps.llm is None:
        return 0
    cfg = deps.settings.llm
    limit = cfg.max_calls_multi_hop if complexity == "multi_hop" else cfg.max_calls_simple
    return limit - len(calls)


def _llm_calls_left(state: QueryState, deps: QueryDeps) -> int:
    return _calls_left(state.complexity, state.llm, deps)


async def _ask(
    state: QueryState, deps: QueryDeps, skill: str, timeout_s: float | None = None, **values: str
) -> tuple[dict[str, Any] | None, list[LLMCall]]:
    """One structured LLM call within the question's budget, always leaving one call for the answer itself: its
    JSON (None on any failure or when the budget is spent) and the updated call log."""
    if _llm_calls_left(state, deps) <= 1 or deps.llm is None:
        return None, state.llm
    cfg = deps.settings.llm
    call = await ask_json(deps.llm, deps.skills[skill], timeout_s or cfg.call_timeout_s, cfg.call_attempts, values)
    record = LLMCall(skill=call.skill, ms=call.ms, input_tokens=call.input_tokens, output_tokens=call.output_tokens,
                     attempts=call.attempts, outcome=call.outcome)  # fmt: skip
    return call.result, [*state.llm, record]


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
    elif SUSPICIOUS.search(state.question) and runtime.context.llm is not None:
        # The rules saw nothing definite but the wording is unusual: a second opinion from the model.
        verdict, calls = await _ask(state, runtime.context, "guard", message=state.question)
        update["llm"] = calls
        if verdict is not None and verdict.get("attack") is True:
            question = str(verdict.get("question") or "").strip()
            update["injection"] = True
            if question and not SUSPICIOUS.search(question):
                update["query"] = question
                warnings.append(_warn(runtime, "prompt_injection", "I ignored instructions in the message and "
                                      "answer only the question in it"))  # fmt: skip
            else:
                runtime.stream_writer(RouteDecided("blocked", "instructions, not a question"))
                warnings.append(_warn(runtime, "prompt_injection", "the message tries to change how I work; I "
                                      "ignored it"))  # fmt: skip
                update.update(route="blocked", route_reason="instructions, not a question")
    return {**update, "warnings": warnings, "timings": {**state.timings, "guard": _ms(start)}}


async def contextualize(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Make a follow-up question self-contained: the model rewrites it from the session's turns when configured,
    else the previous question's words are added to a question that reads as a follow-up."""
    if not state.turns:
        return {}
    question = state.query or state.question
    previous = state.turns[-1].get("query", state.turns[-1]["question"])
    heuristic = follow_up_query(question, previous)
    if heuristic is None or runtime.context.llm is None:
        return {"query": heuristic} if heuristic else {}
    start = time.perf_counter()
    rewritten, calls = await _ask(state, runtime.context, "rewrite", history=_history(state.turns), question=question)
    text = str((rewritten or {}).get("question") or "").strip()
    query = text if 3 <= len(text) <= 2 * len(heuristic) else heuristic
    return {"query": query, "llm": calls, "timings": {**state.timings, "contextualize": _ms(start)}}


ROUTES = ("rag_qa", "conversational", "clarify", "out_of_scope")


async def classify_intent(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Heuristics first; when they only defaulted (no legal word at all), a quick model call may decide."""
    start = time.perf_counter()
    deps = runtime.context
    covered = deps.corpus.jurisdictions
    route, reason = classify_intent_of(state.query, covered)
    update: dict[str, Any] = {}
    if route == "rag_qa" and is_unsure(state.query) and deps.llm is not None:
        decided, update["llm"] = await _ask(
            state, deps, "route", deps.settings.llm.route_timeout_s, message=state.query,
            covered=", ".join(sorted(covered)) or "no jurisdiction yet",
        )  # fmt: skip
        if decided is not None and decided.get("route") in ROUTES:
            route, reason = decided["route"], str(decided.get("reason") or "decided by the model")[:200]
    runtime.stream_writer(RouteDecided(route, reason))
    return {**update, "route": route, "route_reason": reason, "timings": {**state.timings, "route": _ms(start)}}


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
        case _ if not state.route_reason.startswith("asks about"):
            return (
                f"I answer questions about the law in the documents I hold ({sample or 'none yet'}); your question "
                f"is outside them ({state.route_reason}), so I will not guess at an answer."
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
    return _finish(state, tracker, True, state.warnings, 0.0)


def _scope(state: QueryState, deps: QueryDeps) -> SearchFilters:
    return SearchFilters.from_request(state.filters, deps.corpus.tenant_scope(state.tenant))


def _depends_on_session(state: QueryState) -> bool:
    """A question rewritten from earlier turns means something only in its session: not for QA memory."""
    return bool(state.turns) and (state.query or state.question) != state.question


def _memory_key(state: QueryState, deps: QueryDeps) -> tuple[str, tuple[tuple[str, str], ...], str]:
    return deps.corpus.version, tuple(sorted(state.filters.items())), state.tenant


async def recall(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Serve a verified answer given before to a near-identical question (same corpus, filters and tenant)."""
    start = time.perf_counter()
    deps = runtime.context
    if _depends_on_session(state):
        return {}
    vector = await deps.retriever.embedder.embed_query(state.query or state.question)
    found = await deps.memory.arecall(_memory_key(state, deps), vector)
    if found is None:
        return {"timings": {**state.timings, "recall": _ms(start)}}
    citations = [Citation.model_validate(c) for c in found.citations]
    tracker = CitationTracker(citations, runtime.stream_writer)
    stream_words(found.answer, tracker)
    warnings = [*state.warnings, _warn(runtime, "cached_answer", f"answered from memory: a verified answer to "
                                       f"{found.question!r} (similarity {found.similarity:.2f})")]  # fmt: skip
    update = _finish(state, tracker, False, warnings, 0.0)
    return {**update, "cached": True, "verified": True, "timings": {**state.timings, "recall": _ms(start)}}


def _clip(text: str, limit: int, count_tokens: Callable[[str], int]) -> str:
    """At most ``limit`` tokens of ``text``, cut at a word."""
    words = text.split()
    while len(words) > 1 and count_tokens(" ".join(words)) > limit:
        words = words[: max(1, int(len(words) * 0.9))]
    return " ".join(words)


def split_question(question: str) -> list[str]:
    """Deterministic plan for a question with several parts: one step per part joined by 'and what/how/…'."""
    parts = re.split(r"\s*(?:,\s*)?\b(?:and|or)\s+(?=(?:what|how|when|whether|who|which)\b)", question, flags=re.I)
    return [p.strip(" ,;") for p in parts if len(p.split()) >= 3] or [question]


async def plan(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Simple or multi-hop, and the first research steps: heuristics first, the model only for likely multi-hop."""
    start = time.perf_counter()
    query = state.query or state.question
    if not MULTI_HOP.search(query):
        return {"complexity": "simple", "pending": [query], "timings": {**state.timings, "plan": _ms(start)}}
    steps = split_question(query)
    update: dict[str, Any] = {}
    complexity = "multi_hop" if len(steps) > 1 else "simple"
    planned, update["llm"] = await _ask(state, runtime.context, "plan", question=query)
    if planned is not None and isinstance(planned.get("steps"), list):
        limit = runtime.context.settings.llm.max_steps
        proposed = [str(s).strip() for s in planned["steps"] if str(s).strip()][:limit]
        if planned.get("complexity") == "simple":
            steps, complexity = [query], "simple"
        else:  # multi-hop, even if only the first step is known yet: the replanner adds the rest
            steps, complexity = proposed or steps, "multi_hop"
    return {**update, "complexity": complexity, "pending": steps, "timings": {**state.timings, "plan": _ms(start)}}


def _passages_for_grading(chunks: list[Chunk]) -> str:
    return "\n\n".join(f"[{i}] {c.title}, section {c.section_number} {c.section_heading}\n{c.text[:700]}"
                       for i, c in enumerate(chunks, start=1))  # fmt: skip


async def research(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """One research step: search the step's query and, in parallel, the model's alternative phrasings and
    hypothetical passages (whatever finishes within the expansion time limit); keep what earlier steps did not
    find; grade it; and when it falls short, rewrite the query and go again (a bounded number of times)."""
    start = time.perf_counter()
    deps = runtime.context
    cfg = deps.settings
    query = state.pending[0] if state.pending else state.query or state.question
    filters = _scope(state, deps)
    calls = state.llm
    expansion: asyncio.Task[tuple[dict[str, Any] | None, list[LLMCall]]] | None = None
    # The corrective step after a failed verification searches plainly: its one model call is the new answer.
    guided = deps.llm is not None and not state.corrected
    if guided and not state.rewrites:
        expansion = asyncio.create_task(_ask(state, deps, "expand", cfg.llm.expand_timeout_s, query=query))
    try:
        main = await deps.retriever.retrieve(query, filters=filters)
    except BaseException:
        if expansion is not None:
            expansion.cancel()
        raise
    warnings = [*state.warnings]
    results = [main]
    if expansion is not None:
        expanded, calls = await expansion
        extra_queries = [str(q) for q in (expanded or {}).get("queries", []) if str(q).strip()][:3]
        count = deps.retriever.embedder.count_tokens
        passages = [_clip(str(p), HYDE_TOKENS, count) for p in (expanded or {}).get("passages", []) if str(p).strip()]
        passages = passages[:5]
        results += await asyncio.gather(
            *(deps.retriever.retrieve(q, filters=filters) for q in extra_queries),
            *(deps.retriever.retrieve(p, mode="dense", filters=filters) for p in passages),
        )
    for result in results:
        for code, message in result.warnings:
            if code == "retrieval_unavailable":
                raise BackendError("search is unavailable right now; please try again shortly")
            if code not in {c for c, _ in warnings}:
                warnings.append(_warn(runtime, code, message))
    if len(results) == 1:
        fused = [(h.chunk.chunk_id, h.score, dict(h.ranks)) for h in main.hits]
    else:  # the question's own search counts double against any one expansion
        rankings = {f"q{i}": [Hit(h.chunk.chunk_id, h.score) for h in r.hits] for i, r in enumerate(results)}
        fused = reciprocal_rank_fusion(rankings, cfg.retrieval.rrf_k, {"q0": 2.0})
    seen = {h["chunk_id"] for h in state.hits}
    fresh = [(cid, score, ranks) for cid, score, ranks in fused if cid not in seen][: cfg.retrieval.top_k]
    chunks = [deps.corpus.chunks[cid] for cid, _, _ in fresh]
    relevant, sufficient, rewrite, graded_ok = list(range(len(chunks))), bool(chunks), "", False
    if chunks and guided:
        budget = QueryState(question=state.question, complexity=state.complexity, llm=calls)
        graded, calls = await _ask(budget, deps, "grade", query=query, passages=_passages_for_grading(chunks))
        if graded is not None:
            picked = [int(i) - 1 for i in graded.get("relevant", []) if str(i).isdigit()]
            relevant = [i for i in picked if 0 <= i < len(chunks)]
            sufficient = bool(graded.get("sufficient")) and bool(relevant)
            rewrite = str(graded.get("rewrite") or "").strip()
            graded_ok = True
    added: list[HitRef] = [{"chunk_id": fresh[i][0], "score": fresh[i][1], "ranks": fresh[i][2]} for i in relevant]
    graded_sections = [chunks[i].section_id for i in relevant] if graded_ok else []
    timings = {**state.timings, f"research_{len(state.steps) + 1}": _ms(start)}
    timings.update({k: v for k, v in main.timings.items() if k.startswith(("retrieve_", "fuse", "rerank", "cache"))})
    update: dict[str, Any] = {"hits": [*state.hits, *added], "searched": len(deps.corpus), "warnings": warnings,
                              "llm": calls, "timings": timings,
                              "relevant_sections": [*state.relevant_sections, *graded_sections]}  # fmt: skip
    # A retry needs a grade of its own and still the answer's call.
    retry_left = state.rewrites < cfg.llm.max_rewrites and _calls_left(state.complexity, calls, deps) >= 2
    if not sufficient and rewrite and rewrite.lower() != query.lower() and retry_left:
        return {**update, "pending": [rewrite, *state.pending[1:]], "rewrites": state.rewrites + 1, "retry": True}
    step: Step = {"query": query, "added": [h["chunk_id"] for h in added], "sufficient": sufficient,
                  "expansions": len(results) - 1, "rewrites": state.rewrites}  # fmt: skip
    return {**update, "steps": [*state.steps, step], "pending": state.pending[1:], "rewrites": 0, "retry": False}


async def replan(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Multi-hop: after each step, add the step still missing, or finish; stop at the step limit or when a step
    found nothing new (stagnation)."""
    start = time.perf_counter()
    deps = runtime.context
    done = [s["query"] for s in state.steps]
    stagnant = bool(state.steps) and not state.steps[-1]["added"]
    if len(state.steps) >= deps.settings.llm.max_steps or stagnant:
        return {"pending": [], "timings": {**state.timings, "replan": _ms(start)}}
    evidence = _passages_for_grading([deps.corpus.chunks[h["chunk_id"]] for h in state.hits][:8]) or "(none)"
    decided, calls = await _ask(
        state, deps, "replan", question=state.query or state.question, done="\n".join(f"- {q}" for q in done),
        evidence=evidence,
    )  # fmt: skip
    pending = list(state.pending)
    if decided is not None:
        following = str(decided.get("next") or "").strip()
        if decided.get("complete") is True:
            pending = []
        elif following and following.lower() not in {q.lower() for q in done}:
            pending = [following, *(p for p in pending if p.lower() != following.lower())]
    pending = pending[: deps.settings.llm.max_steps - len(state.steps)]
    return {"pending": pending, "llm": calls, "timings": {**state.timings, "replan": _ms(start)}}


def _history(turns: list[Turn]) -> str:
    return "\n".join(f"Q: {t['question']}\nA: {t['answer'][:400]}" for t in turns[-HISTORY_TURNS:])


async def synthesize(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Answer from the hits: with the LLM when one is configured, else (or when it fails) with direct quotes."""
    start = time.perf_counter()
    deps = runtime.context
    hits = [Retrieved(deps.corpus.chunks[h["chunk_id"]], h["score"], h["ranks"]) for h in state.hits]
    warnings = [*state.warnings]
    if state.corrected and state.answer:
        warnings.append(_warn(runtime, "answer_revised", "the answer above quoted words its sources do not contain; "
                              "a revised answer from a further search follows and replaces it"))  # fmt: skip
    usage: dict[str, int] = {}
    tracker = CitationTracker([], runtime.stream_writer)
    stages: dict[str, float] = {}
    calls = state.llm
    if deps.llm is not None:
        bundle = await deps.bundler.bundle(hits)
        tracker.available = {c.index: c for c in source_citations(bundle)}
        stages["bundle"] = bundle.ms
        call_start = time.perf_counter()
        outcome = "ok"
        try:
            usage = await stream_llm_answer(
                deps.llm, deps.skills["synthesize"], state.query or state.question, _history(state.turns), tracker
            )
        except UpstreamLLMError as exc:
            outcome = "error"
            warnings.append(_warn(runtime, "llm_unavailable", f"{exc.message}; answering with direct quotes instead"))
            if tracker.text:
                tracker.feed("\n\n")
        record = LLMCall(skill="synthesize", ms=_ms(call_start), input_tokens=usage.get("input_tokens", 0),
                         output_tokens=usage.get("output_tokens", 0), attempts=1, outcome=outcome)  # fmt: skip
        calls = [*calls, record]
        if outcome == "ok":
            if not tracker.used and not is_abstention(tracker.text):
                warnings.append(_warn(runtime, "uncited_answer", "the model's answer cites no source; check it"))
            update = _finish(state, tracker, is_abstention(tracker.text), warnings, _ms(start), stages, False)
            return {**update, "llm": calls}
    await _quote_answer(deps, state, hits, tracker)
    update = _finish(state, tracker, not tracker.used, warnings, _ms(start), stages, False)
    return {**update, "llm": calls}


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
        asked = await deps.retriever.embedder.embed_query(question)  # computed once per request, then cached
        vectors = await deps.retriever.embedder.embed_documents(sentences)
    except GwetaError as exc:
        log.warning("sentence similarity unavailable: %s", exc.message)
        return None
    return [float(v) for v in vectors @ asked]


def _finish(
    state: QueryState,
    tracker: CitationTracker,
    abstained: bool,
    warnings: list[tuple[str, str]],
    elapsed: float,
    stages: dict[str, float] | None = None,
    record_turn: bool = True,
) -> dict[str, Any]:
    update = {
        "answer": tracker.text,
        "citations": [c.model_dump() for c in tracker.used],
        "abstained": abstained,
        "warnings": warnings,
        "timings": {**state.timings, **(stages or {}), "synthesize": elapsed},
    }
    if record_turn:
        update["turns"] = [_turn(state, tracker.text)]
    return update


def _turn(state: QueryState, answer: str) -> Turn:
    return Turn(question=state.question, query=state.query or state.question, answer=answer)


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
    result = verify_answer(state.answer, offered, provisions, len(set(state.relevant_sections)))
    warnings = [*state.warnings]
    if result.quotes_failed:
        warnings.append(_warn(runtime, "unverified_quote", f"{len(result.quotes_failed)} quoted passage(s) do not "
                              "appear in the cited provisions; treat them as unverified"))  # fmt: skip
    if result.uncited_paragraphs or result.unknown_markers:
        warnings.append(_warn(runtime, "unsupported_statement", "part of the answer cites no provision it was given; "
                              "treat it as unverified"))  # fmt: skip
    if result.too_few_sources:
        warnings.append(_warn(runtime, "single_source", "the answer rests on one provision although the search found "
                              "several relevant ones; check the others before relying on it"))  # fmt: skip
    update: dict[str, Any] = {
        "verification": result.summary(),
        "verified": result.passed,
        "warnings": warnings,
        "timings": {**state.timings, "verify": _ms(start)},
    }
    if not result.passed and not state.corrected and _llm_calls_left(state, deps) >= 1:
        # One corrective research step: search for the words that could not be found (the provision they come
        # from, if any), or the question again, then answer once more.
        suggestion = result.quotes_failed[0] if result.quotes_failed else state.query or state.question
        update.update(corrected=True, pending=[" ".join(suggestion.split()[:40])])
    return update


async def remember(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    """Close the turn: record it in the session, and keep a verified, cited answer in QA memory."""
    deps = runtime.context
    if (
        state.verified
        and not state.abstained
        and state.citations
        and not state.cached
        and not _depends_on_session(state)
    ):
        vector = await deps.retriever.embedder.embed_query(state.query or state.question)
        await deps.memory.aremember(_memory_key(state, deps), vector, state.query or state.question, state.answer,
                             state.citations)  # fmt: skip
    return {"turns": [_turn(state, state.answer)]}


async def abstain(state: QueryState, runtime: Runtime[QueryDeps]) -> dict[str, Any]:
    tracker = CitationTracker([], runtime.stream_writer)
    stream_words(abstention(state.query or state.question, state.searched), tracker)
    return _finish(state, tracker, True, state.warnings, 0.0)
