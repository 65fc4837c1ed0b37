"""Research nodes: plan the steps, search each (with the model's expansions), grade what came back, replan."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langgraph.runtime import Runtime

from api.composer.prompts import HYDE_TOKENS, clip_tokens, format_passages
from api.composer.structured import LLMCall
from api.observability import describe_question
from api.schemas.documents import Chunk
from api.text.sentences import split_sentences
from api.tools.retrieval import Expansions, RetrievalResult, Retrieved, normalize_query, with_provisions

from ..deps import QueryDeps
from ..evidence import settled
from ..following import dependencies
from ..routing import research_calls
from ..screening import MULTI_HOP, split_question
from ..state import Complexity, HitRef, QueryState, QueryUpdate, Step
from .common import ms, scope, warn

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_EXPANSION_QUERIES = 3
MAX_EXPANSION_PASSAGES = 5
MAX_QUERY_WORDS = 40
"""A search query the model writes (a plan's step, a replan's next, a grade's rewrite, an expansion) is one sentence
of at most this many words; anything longer is an answer, not a query."""


def as_query(value: object) -> str:
    """``value`` as a search query the model wrote, or "" when it is not one: not text, or more than one sentence or
    ``MAX_QUERY_WORDS`` words.

    A small model may write a plan step that is a question followed by claims about the law; searched as it is, an
    abstention would list it to the asker as a search run — uncited claims in the service's own reply."""
    query = " ".join(value.split()) if isinstance(value, str) else ""
    if len(query.split()) > MAX_QUERY_WORDS or len(split_sentences(query)) > 1:
        return ""
    return query


async def plan(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Simple or multi-hop, and the first research steps: heuristics first, the model only for likely multi-hop
    questions the heuristics cannot split.

    A question that asks two things ("… and when does …?") is researched one part at a time, as asked and as the
    quote-only path researches it, with no plan call: the evidence is judged per part, the replanner writes any
    further step with the first part's evidence in hand, and the call would hold up the first search (a plan call
    costs about a second, and small models' plans drop a part or turn one into claims)."""
    start = time.perf_counter()
    query = state.asked
    if not MULTI_HOP.search(query):
        return {"complexity": "simple", "pending": [query], "parts": [query], "timings": {"plan": ms(start)}}
    parts = split_question(query)
    if len(parts) > 1:
        return {"complexity": "multi_hop", "pending": parts, "parts": parts, "timings": {"plan": ms(start)}}
    steps = [query]
    complexity: Complexity = "simple"  # unless the model's plan comes back multi-hop
    planned, calls = await runtime.context.ask("plan", state.complexity, state.llm, question=query)
    if planned is not None and isinstance(planned.get("steps"), list) and planned.get("complexity") != "simple":
        limit = runtime.context.settings.llm.max_steps
        proposed = [written for step in planned["steps"] if (written := as_query(step))][:limit]
        # Multi-hop, even if only the first step is known yet: the replanner adds the rest.
        steps, complexity = proposed or steps, "multi_hop"
    return {"llm": calls, "complexity": complexity, "pending": steps, "parts": parts, "timings": {"plan": ms(start)}}


async def _expand(deps: QueryDeps, state: QueryState, query: str, made: list[LLMCall]) -> Expansions:
    """The model's alternative phrasings and hypothetical passages for ``query`` (its call record goes in ``made``)."""
    expanded, calls = await deps.ask("expand", state.complexity, state.llm, deps.settings.llm.expand_timeout_s,
                                     query=query)  # fmt: skip
    made += calls
    return expansions_of(expanded or {}, deps.retriever.embedder.count_tokens)


def expansions_of(reply: dict[str, Any], count: Callable[[str], int]) -> Expansions:
    """The ``expand`` skill's reply as searches: phrasings that read as one query, passages cut to ``HYDE_TOKENS``."""
    queries = [written for q in reply.get("queries", []) if (written := as_query(q))]
    passages = [clip_tokens(str(p), HYDE_TOKENS, count) for p in reply.get("passages", []) if str(p).strip()]
    return Expansions(queries[:MAX_EXPANSION_QUERIES], passages[:MAX_EXPANSION_PASSAGES])


async def research(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """One research step: search the step's query; unless that search already settles the evidence verdict, the
    model's alternative phrasings and hypothetical passages are searched too (whatever finishes within the expansion
    time limit) while the model grades the search's passages; keep what earlier steps did not find; and when the
    grade finds it short, rewrite the query and go again (a bounded number of times)."""
    start = time.perf_counter()
    deps = runtime.context
    cfg = deps.settings
    query = state.pending[0] if state.pending else state.asked
    made: list[LLMCall] = []
    # The corrective and refinement steps search plainly: their one model call is the new answer.
    planned = state.step_kind == "research"
    filters = scope(state, deps)
    own = await deps.retriever.retrieve_many(query, filters=filters)
    seen = {h["chunk_id"] for h in state.hits}

    def fresh_of(result: RetrievalResult) -> list[Retrieved]:
        # A corrective or refinement step searches for what it verifies, so what earlier steps found may come back.
        return [h for h in result.hits if h.chunk.chunk_id not in seen or not planned]

    calls_left = deps.llm_calls_left(state.complexity, state.llm)  # 0 without a model
    skip = calls_left > 1 and planned and cfg.llm.skip_settled
    calls = research_calls(state, calls_left, skip and settled(deps.judge, query, own, state.tenant))
    top, per_section = cfg.retrieval.top_k, cfg.retrieval.section_chunks
    graded_own = with_provisions(fresh_of(own), top, per_section)
    relevant, sufficient, rewrite, graded = list(range(len(graded_own))), bool(graded_own), "", False
    found = own
    if calls != "none":
        expanding = calls == "expand_and_grade"
        expansion = _expand(deps, state, query, made) if expanding else None
        searching = deps.retriever.retrieve_many(query, expansion, filters, first=own) if expanding else None
        grading = _grade(deps, state, query, [h.chunk for h in graded_own], made) if graded_own else None
        found, grade = await asyncio.gather(_maybe(searching, own), _maybe(grading, None))
        if grade is not None:
            relevant, sufficient, rewrite, graded = grade
    if graded and sufficient:  # the passages the grade found relevant are enough: what it kept, in its order
        kept_hits = [graded_own[i] for i in relevant]
    else:  # the fused ranking less what the grade turned down: the expansions fill in for a search that fell short
        rejected = {h.chunk.chunk_id for h in graded_own} - {graded_own[i].chunk.chunk_id for i in relevant}
        kept_hits = with_provisions([h for h in fresh_of(found) if h.chunk.chunk_id not in rejected], top, per_section)
    sent = {code for code, _ in state.warnings}
    warnings = [warn(runtime, code, message) for code, message in found.warnings if code not in sent]

    kept = [HitRef(chunk_id=h.chunk.chunk_id, score=h.score, ranks=dict(h.ranks)) for h in kept_hits]
    added = [h for h in kept if h["chunk_id"] not in seen]
    timings = {f"research_{len(state.steps) + 1}": ms(start)}
    timings.update({k: v for k, v in found.timings.items() if k.startswith(("retrieve_", "fuse", "rerank", "cache"))})
    update = QueryUpdate(
        hits=added, searched=deps.corpus.view_for(state.tenant).chunks, warnings=warnings, llm=made, timings=timings,
        relevant_sections=[graded_own[i].chunk.section_id for i in relevant] if graded else [],
    )  # fmt: skip
    if planned:
        share = len(relevant) / len(graded_own) if graded and graded_own else None
        update |= _judged(deps, state, query, found, share)
    elif state.step_kind == "corrective":  # what it verifies comes first; a refinement only adds evidence
        update["focus"] = [h["chunk_id"] for h in kept]
    # A retry needs a grade of its own and still the answer's call.
    retry_left = (
        state.rewrites < cfg.llm.max_rewrites and deps.llm_calls_left(state.complexity, [*state.llm, *made]) >= 2
    )
    # A rewrite that only adds a question mark or changes case asks the same question again: not a retry.
    if not sufficient and rewrite and normalize_query(rewrite) != normalize_query(query) and retry_left:
        update |= QueryUpdate(pending=[rewrite, *state.pending[1:]], rewrites=state.rewrites + 1, retry=True)
        return update
    step = Step(query=query, added=[h["chunk_id"] for h in added], sufficient=sufficient,
                expansions=found.expansions, rewrites=state.rewrites, kind=state.step_kind)  # fmt: skip
    steps = [step]
    if planned:
        depended = dependencies(deps.corpus, [h.chunk for h in kept_hits], state.tenant,
                                cfg.retrieval.follow_references, seen | {h["chunk_id"] for h in kept})  # fmt: skip
        if depended:
            # After the step's own hits, so what the search ranked first still leads the evidence.
            floor = min((h["score"] for h in kept), default=0.0)
            update["hits"] = [*added, *(HitRef(chunk_id=c.chunk_id, score=floor, ranks={}) for _, c in depended)]
            steps.append(Step(query="; ".join(dict.fromkeys(r.words for r, _ in depended)),
                              added=[c.chunk_id for _, c in depended], sufficient=sufficient, expansions=0,
                              rewrites=0, kind="reference"))  # fmt: skip
    update |= QueryUpdate(steps=steps, pending=state.pending[1:], rewrites=0, retry=False)
    return update


async def _maybe(work: Awaitable[T] | None, default: T) -> T:
    """``work``'s result, or ``default`` when there is no work to do."""
    return default if work is None else await work


def _judged(deps: QueryDeps, state: QueryState, query: str, found: RetrievalResult, grade: float | None) -> QueryUpdate:
    """The evidence verdict after a planned step (any step's evidence answering is enough), and the lay terms the
    thesaurus added to the question's search."""
    update = QueryUpdate(lay_terms=found.lay_terms) if not state.steps else QueryUpdate()
    if deps.judge is None:
        return update
    # The judge was fitted on one search's evidence: fused expansions' hits carry no dense/BM25 ranks (best_rank 0),
    # so judged on them, a question the extractive path answers could be abstained on.
    verdict = deps.judge(query, found.own or found, grade, state.tenant)
    log.info("evidence for %s: %s", describe_question(query, deps.settings.privacy), verdict.reason)
    update |= QueryUpdate(answerable=bool(state.answerable) or verdict.answerable, evidence_note=verdict.reason,
                          related=state.related or verdict.related)  # fmt: skip
    if query.casefold() in {p.casefold() for p in state.parts}:  # as the quote-only path searches: not a rewrite
        without_grade = bool(state.answerable_without_grade) or verdict.without_grade
        update |= QueryUpdate(answerable_without_grade=without_grade, judged_parts=[*state.judged_parts, query])
    return update


async def _grade(
    deps: QueryDeps, state: QueryState, query: str, chunks: list[Chunk], made: list[LLMCall]
) -> tuple[list[int], bool, str, bool]:
    """The model's grade of ``chunks``: which are relevant, whether they suffice, a rewrite of the query if not,
    and whether the grade came back at all (else every chunk counts and none is marked relevant)."""
    graded, calls = await deps.ask("grade", state.complexity, [*state.llm, *made], query=query,
                                   passages=format_passages(chunks))  # fmt: skip
    made += calls
    if graded is None:
        return list(range(len(chunks))), True, "", False
    picked = [int(i) - 1 for i in graded.get("relevant", []) if str(i).isdigit()]
    relevant = [i for i in picked if 0 <= i < len(chunks)]
    sufficient = bool(graded.get("sufficient")) and bool(relevant)
    return relevant, sufficient, as_query(graded.get("rewrite")), True


async def replan(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Multi-hop: after each step, add the step still missing, or finish; stop at the step limit or when a step
    found nothing new (stagnation)."""
    start = time.perf_counter()
    deps = runtime.context
    done = [s["query"] for s in state.steps]
    stagnant = bool(state.steps) and not state.steps[-1]["added"]
    if len(state.steps) >= deps.settings.llm.max_steps or stagnant:
        return {"pending": [], "timings": {"replan": ms(start)}}
    evidence = format_passages([deps.corpus.chunks[h["chunk_id"]] for h in state.hits][:8]) or "(none)"
    decided, calls = await deps.ask(
        "replan", state.complexity, state.llm, question=state.asked, done="\n".join(f"- {q}" for q in done),
        evidence=evidence,
    )  # fmt: skip
    pending = list(state.pending)
    if decided is not None:
        following = as_query(decided.get("next"))
        if decided.get("complete") is True:
            pending = []
        elif following and normalize_query(following) not in {normalize_query(q) for q in done}:
            pending = [following, *(p for p in pending if normalize_query(p) != normalize_query(following))]
    pending = pending[: deps.settings.llm.max_steps - len(state.steps)]
    return {"pending": pending, "llm": calls, "timings": {"replan": ms(start)}}
