"""Screening nodes: block or clean a message, make a follow-up self-contained, decide the route, and answer the
messages that need no retrieval."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import get_args

from langgraph.runtime import Runtime

from api.composer.citations import CitationTracker, stream_words
from api.composer.judge.meaning import content_terms
from api.composer.judge.topic import topic_terms
from api.schemas.events import Route
from api.tools.vector_store import SearchFilters

from ..choices import split_choices
from ..conversation import (
    Previous,
    defined_terms,
    elliptical,
    keeps_question,
    may_follow_up,
    names_a_law,
    reads_as_follow_up,
    resolve,
)
from ..deps import QueryDeps
from ..evidence import strong_by_scores, strong_evidence
from ..routing import route_call
from ..screening import SUSPICIOUS, Intent, guard_action, is_unsure, reply, screen
from ..screening import classify_intent as classify_intent_of
from ..state import QueryState, QueryUpdate, RouteDecided
from .common import finish, history, ms, scope, warn

FOLLOW_ACTS = 2
"""A follow-up looks first within at most this many of the Acts the previous answer cited."""

log = logging.getLogger(__name__)
INTENTS: tuple[Intent, ...] = get_args(Intent)
BLOCKED_REASON = "instructions, not a question"
BLOCKED = "the message tries to change how I work; I ignored it"
CLEANED = "I ignored instructions in the message and answer only the question in it"


def _block(runtime: Runtime[QueryDeps]) -> QueryUpdate:
    runtime.stream_writer(RouteDecided("blocked", BLOCKED_REASON))
    return QueryUpdate(
        route="blocked", route_reason=BLOCKED_REASON, warnings=[warn(runtime, "prompt_injection", BLOCKED)]
    )


async def guard(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Screen for prompt injection; keep any genuine question embedded in it, block the rest."""
    start = time.perf_counter()
    screened = screen(state.question)
    # A multiple-choice question is researched without its choices (an "Answer choices:" block, or the request's).
    stem, found = split_choices(screened.question or state.question)
    update = QueryUpdate(query=stem, injection=screened.injection)
    if found and not state.choices:
        update["choices"] = found
    if screened.injection:
        log.warning("prompt injection screened (blocked=%s)", screened.blocked)
    if screened.blocked:
        update.update(_block(runtime))
    elif screened.injection:
        update["warnings"] = [warn(runtime, "prompt_injection", CLEANED)]
    elif SUSPICIOUS.search(state.question) and runtime.context.llm is not None:
        # The rules saw nothing definite but the wording is unusual: a second opinion from the model.
        verdict, update["llm"] = await runtime.context.ask("guard", state.complexity, state.llm, message=state.question)
        action, question = guard_action(state.question, verdict)
        if action == "pass" and verdict is not None and verdict.get("attack") is True:
            log.info("the guard model called the whole message an attack; passed on")
        if action != "pass":
            update["injection"] = True
        if action == "clean":
            update["query"] = question
            update["warnings"] = [warn(runtime, "prompt_injection", CLEANED)]
        elif action == "block":
            update.update(_block(runtime))
    update["timings"] = {"guard": ms(start)}
    return update


async def contextualize(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Make a follow-up question self-contained from the session's previous turn (``conversation``): by rule, or by
    the model's rewrite when one is configured and the wording refers back (a rewrite that drops what the follow-up
    itself asks is not taken). Where, by the evidence judge on one search each: within the Act(s) the previous answer
    cited when their provisions answer it (in its own words, else with the subject carried; the other way round for
    one that says little itself); else across the corpus as asked when that answers it (a new subject); else, when
    it refers back or uses no word those Acts never use, still within them with the subject carried (the closest
    provisions an abstention shows are then theirs); else across the corpus with the subject carried."""
    question = state.asked
    if not state.turns or not may_follow_up(question):
        return {}
    deps = runtime.context
    if classify_intent_of(question, deps.corpus.jurisdictions_for(state.tenant))[0] == "conversational":
        return {}
    start = time.perf_counter()
    last = state.turns[-1]
    acts = list(last.get("acts", []))[:FOLLOW_ACTS]
    documents = await asyncio.gather(*(deps.corpus.document(key) for key in acts))
    defined = defined_terms(section.text for document in documents if document for section in document.sections)
    previous = Previous(
        last.get("query") or last["question"], last.get("answer", ""), last.get("headings", []), defined
    )
    query = resolve(question, previous)
    signalled, rewritten = reads_as_follow_up(question), False
    update = QueryUpdate()
    if signalled and deps.llm is not None:
        reply, update["llm"] = await deps.ask(
            "rewrite", state.complexity, state.llm, history=history(state), question=question
        )
        text = " ".join(str((reply or {}).get("question") or "").split())
        if 3 <= len(text) <= 2 * (len(question) + len(previous.query)) and keeps_question(text, question):
            query, rewritten = text, text != question
    light = resolve(question, previous, carry=False)
    within = dataclasses.replace(scope(state, deps), doc_keys=tuple(acts))
    update["timings"] = {"contextualize": ms(start)}
    kept_to_acts = False
    if acts and not names_a_law(query) and "law_id" not in state.filters:
        # The Act(s) just discussed first: the question in its own words, then with the subject carried. A question
        # that does not refer back and uses a topic word those Acts never use has a new subject: it is not bent
        # toward the last one to fit it.
        own = topic_terms(light)
        used = content_terms(" ".join(s.text for d in documents if d for s in d.sections)) if own else set()
        new_subject = not signalled and not rewritten and bool(own - used)
        # A follow-up that says too little of its own ("Is that an offence?") is tried with the subject carried
        # first: in its own words it matches whatever provision of the Act shares its one word.
        carried_first = elliptical(question, previous)
        wordings = (
            [query] if rewritten else [light] if new_subject else [query, light] if carried_first else [light, query]
        )
        kept_to_acts = not new_subject
        for wording in dict.fromkeys(wordings):
            if await _answers(deps, state, wording, within):
                update |= QueryUpdate(query=wording, prefer=acts, timings={"contextualize": ms(start)})
                return update
    # Elsewhere: as asked, when that alone finds an answer (a new subject); else with the subject carried.
    if not rewritten and await _answers(deps, state, light, scope(state, deps)):
        update |= QueryUpdate(query=light, timings={"contextualize": ms(start)})
    elif kept_to_acts:
        # Nothing answers it anywhere: the Act(s) just discussed are still where it was asked about, so the closest
        # provisions shown come from them rather than from any Act that shares its words.
        update |= QueryUpdate(query=query, prefer=acts, timings={"contextualize": ms(start)})
    elif signalled or rewritten:
        update |= QueryUpdate(query=query, timings={"contextualize": ms(start)})
    return update


async def _answers(deps: QueryDeps, state: QueryState, query: str, filters: SearchFilters) -> bool:
    """Whether one search for ``query`` within ``filters`` finds evidence that answers it, as the research step will
    judge that search (the evidence judge; without one, the best hit's scores)."""
    found = await deps.retriever.retrieve_many(query, filters=filters)
    if deps.judge is None:
        return strong_by_scores(found).answerable
    return deps.judge(query, found.own or found, None, state.tenant).answerable


async def classify_intent(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Heuristics first; when they only defaulted (no legal word at all), the question's own search decides when its
    evidence is strong, else a quick model call may decide."""
    start = time.perf_counter()
    deps = runtime.context
    covered = deps.corpus.jurisdictions_for(state.tenant)
    route: Route
    route, reason = classify_intent_of(state.query, covered)
    update = QueryUpdate()
    unsure = route == "rag_qa" and is_unsure(state.query)
    found = verdict = None
    if unsure and deps.llm is not None and deps.settings.llm.skip_settled:
        # A search costs tens of milliseconds; the router's call, a hosted model's first token and more.
        found = await deps.retriever.retrieve(state.query, filters=scope(state, deps))
        verdict = strong_evidence(found, deps.judge, state.query, state.tenant)
    strong = verdict is not None and verdict.answerable
    if route_call(deps.llm is not None, unsure, strong) == "model":
        decided, update["llm"] = await deps.ask(
            "route", state.complexity, state.llm, deps.settings.llm.route_timeout_s, message=state.query,
            covered=", ".join(sorted(covered)) or "no jurisdiction yet",
        )  # fmt: skip
        chosen = (decided or {}).get("route")
        if decided is not None and chosen in INTENTS:
            route, reason = chosen, str(decided.get("reason") or "decided by the model")[:200]
        if route in ("clarify", "out_of_scope") and found is None:
            # The model is overruled when the documents plainly answer: judged on the evidence, not the wording.
            found = await deps.retriever.retrieve(state.query, filters=scope(state, deps))
            verdict = strong_evidence(found, deps.judge, state.query, state.tenant)
            if verdict.answerable:
                update["warnings"] = [warn(runtime, "route_overruled", f"the model routed this as {route}, but the "
                                           "documents hold strong evidence for it; researching it")]  # fmt: skip
                route, reason = "rag_qa", f"strong evidence: {verdict.reason}"[:200]
    elif strong and verdict is not None:
        reason = f"strong evidence: {verdict.reason}"[:200]
    runtime.stream_writer(RouteDecided(route, reason))
    update |= QueryUpdate(route=route, route_reason=reason, timings={"route": ms(start)})
    return update


async def respond(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Answer without retrieval: a blocked message, a greeting, a request to clarify, or out of scope."""
    view = runtime.context.corpus.view_for(state.tenant)  # never another tenant's titles or jurisdictions
    tracker = CitationTracker([], runtime.stream_writer)
    stream_words(reply(state.route, state.route_reason, view.titles, set(view.jurisdictions)), tracker)
    return finish(state, tracker, abstained=True)
