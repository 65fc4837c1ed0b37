"""The QueryOrchestrator: runs the query graph for one question and yields the stream's events."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from api.auth import LOCAL, Caller
from api.composer.judge.streaming import GateProgress
from api.errors import GwetaError
from api.observability import new_request_id
from api.schemas.events import (
    Citation,
    CitationEvent,
    ErrorEvent,
    FinalEvent,
    MetaEvent,
    MultipleChoice,
    Outcome,
    ResearchStep,
    Route,
    StatusEvent,
    StreamEvent,
    TokenEvent,
    WarningEvent,
)
from api.schemas.query import QueryRequest
from api.tools.corpus import Corpus
from api.tools.embeddings import per_request
from api.tools.versions import today

from .deps import QueryDeps
from .state import QueryState, RouteDecided, fresh_turn

log = logging.getLogger(__name__)
QueryGraph = CompiledStateGraph[QueryState, QueryDeps, QueryState, QueryState]


FAILURE_KEYS: dict[str, str] = {"timeout": "timeouts", "error": "errors", "unparsable": "unparsable"}
"""Per-skill outcome counters in ``usage``: ``timeouts_<skill>``, ``errors_<skill>``, ``unparsable_<skill>`` (a reply
that held no JSON object), present only when non-zero; ``calls_<skill>`` less these is the calls that succeeded."""


def usage_summary(state: QueryState) -> dict[str, int]:
    """LLM calls and tokens (by skill too, with each skill's failures), retries and research effort, for ``final``
    and the trace; ``multi_hop`` says which of meta's call budgets applied."""
    calls = state.llm
    usage = {
        "llm_calls": len(calls),
        "input_tokens": sum(c["input_tokens"] for c in calls),
        "output_tokens": sum(c["output_tokens"] for c in calls),
        "llm_retries": sum(max(0, c["attempts"] - 1) for c in calls),
        "llm_timeouts": sum(c["outcome"] == "timeout" for c in calls),
        "llm_failures": sum(c["outcome"] in ("error", "unparsable") for c in calls),
        "research_steps": len(state.steps),
        "query_rewrites": sum(s["rewrites"] for s in state.steps),
        "multi_hop": int(state.complexity == "multi_hop"),
    }
    for call in calls:
        keys = [f"calls_{call['skill']}"]
        if call["outcome"] in FAILURE_KEYS:
            keys.append(f"{FAILURE_KEYS[call['outcome']]}_{call['skill']}")
        for key in keys:
            usage[key] = usage.get(key, 0) + 1
    return usage


def llm_timings(state: QueryState) -> dict[str, float]:
    """Milliseconds spent waiting on the model, per skill (``llm_<skill>``; calls made at once each count whole)."""
    spent: dict[str, float] = {}
    for call in state.llm:
        spent[f"llm_{call['skill']}"] = round(spent.get(f"llm_{call['skill']}", 0.0) + call["ms"], 2)
    return spent


def past_deadline(state: QueryState) -> QueryState:
    """What a question that ran out of time keeps: a verified answer (verbatim quotes, or one that passed
    verification), else a plain statement that no verified answer was reached in time; never an unchecked one."""
    checked = state.composer == "extractive" or (state.composer == "model" and bool(state.verification))
    if state.answer and state.verified and checked and (state.citations or state.abstained):
        return state
    answer = ("I ran out of time before I could find and verify an answer, so I will not guess. "
              "Please ask again, or ask a narrower question.")  # fmt: skip
    return dataclasses.replace(state, answer=answer, citations=[], abstained=True, verified=True, choice=None)


def outcome_of(state: QueryState) -> Outcome:
    """How the turn ended, for ``final``: refused when the guard blocked it; answered unless it abstained; related
    only when an abstention quotes the closest provisions (with their citations); else not found."""
    if state.route == "blocked":
        return "refused"
    if not state.abstained:
        return "answered"
    return "related" if state.outcome == "related" and state.citations else "not_found"


def _as_state(values: Any) -> QueryState:
    if isinstance(values, QueryState):
        return values
    known = {f.name for f in dataclasses.fields(QueryState)}
    return QueryState(**{k: v for k, v in dict(values).items() if k in known})


class Asker(Protocol):
    """What answers a question as a stream of events: the orchestrator itself, or its graph workers."""

    def stream(self, request: QueryRequest, caller: Caller = ...) -> AsyncIterator[StreamEvent]: ...


def repeal_warnings(citations: list[dict[str, Any]], corpus: Corpus, as_of: str | None = None) -> list[WarningEvent]:
    """A warning for each cited document that another document of the corpus says is repealed (once a document);
    ``as_of``: the day the question asks about, before which a repeal that had not taken effect is not one."""
    repealed = corpus.repealed_on(as_of)
    cited = dict.fromkeys(c["doc_key"] for c in citations if c["doc_key"] in repealed)
    titles = {c["doc_key"]: c["title"] for c in citations}
    return [WarningEvent(code="repealed_law", message=corpus.repealed[key].message(titles[key])) for key in cited]


def version_warnings(citations: list[dict[str, Any]], corpus: Corpus, as_of: str | None = None) -> list[WarningEvent]:
    """A warning for each cited document that is not the version of its law in force on the question's day (or
    today): an answer quotes one version of a law only (``one_version``), so the one in force was not among what it
    quotes (nothing found in it answered, or the question named the other)."""
    day = as_of or today()
    titles = {c["doc_key"]: c["title"] for c in citations}
    warnings = []
    for key in dict.fromkeys(c["doc_key"] for c in citations):
        if (best := corpus.versions.preferred(key, day)) == key:
            continue
        when = f"on {as_of}" if as_of else "today"
        other = corpus.versions.versions[best].title
        consolidated = corpus.versions.consolidated(key)
        version = f" (as consolidated on {consolidated})" if consolidated else ""
        warnings.append(WarningEvent(code="other_version", message=(
            f"this answer quotes the {titles[key]}{version}, which is not the version of that law in force {when}: "
            f"the {other} is; check what the {other} says"
        )))  # fmt: skip
    return warnings


class QueryOrchestrator:
    def __init__(self, graph: QueryGraph, deps: QueryDeps, callbacks: list[BaseCallbackHandler] | None = None) -> None:
        self.graph = graph
        self.deps = deps
        self.callbacks = callbacks or []

    def budgets(self) -> dict[str, float | int]:
        s = self.deps.settings
        llm = self.deps.llm is not None
        return {
            "llm_calls_simple": s.llm.max_calls_simple if llm else 0,
            "llm_calls_multi_hop": s.llm.max_calls_multi_hop if llm else 0,
            "research_steps": s.llm.max_steps,
            "top_k": s.retrieval.top_k,
            "retrieval_timeout_s": s.retrieval.timeout_s,
            "llm_timeout_s": s.llm.timeout_s if llm else 0,
        }

    async def stream(self, request: QueryRequest, caller: Caller = LOCAL) -> AsyncIterator[StreamEvent]:
        """Yield meta, then the graph's token/citation/warning events, then final; or error if it fails."""
        trace_id = new_request_id()
        per_request()  # the question's vector, once for all the steps of this answer
        start = time.perf_counter()
        meta_sent = False
        early: list[StreamEvent] = []  # e.g. the guard's warning, written before the route is known

        def opening(route: Route | None) -> list[StreamEvent]:
            """meta first, then anything held back for it; nothing once meta has gone out."""
            nonlocal meta_sent
            if meta_sent:
                return []
            meta_sent = True
            meta = MetaEvent(
                trace_id=trace_id, session_id=request.session_id, route=route or "unknown",
                corpus_version=self.deps.corpus.view_for(caller.tenant).version, budgets=self.budgets(),
            )  # fmt: skip
            return [meta, *early]

        deadline = time.monotonic() + self.deps.settings.question_deadline_s
        turn: Any = fresh_turn(
            question=request.q,
            filters=request.filters(),
            tenant=caller.tenant,
            deadline=deadline,
            choices=list(request.choices),
        )  # values, Overwrites; fmt: skip
        config: RunnableConfig = {
            "configurable": {"thread_id": caller.session_key(request.session_id)},
            "callbacks": self.callbacks,
            "run_name": "query",
            "metadata": {"trace_id": trace_id},
        }
        state: QueryState | None = None
        late = False
        sent, cited = "", []  # the answer's text and citations as sent: what a question cut short keeps
        checked: dict[str, int] = {}  # the verification summary of what was sent, as the gate judged it
        try:
            # The stall watchdog and the nodes keep to the deadline; this is the backstop that always ends the stream.
            async with asyncio.timeout_at(deadline):
                async for mode, payload in self.graph.astream(
                    turn,
                    config,
                    context=self.deps,
                    stream_mode=["custom", "values"],
                    durability=self.deps.settings.checkpointer.durability,
                ):
                    if isinstance(payload, RouteDecided):
                        for event in opening(payload.route):
                            yield event
                    elif isinstance(payload, GateProgress):
                        checked = payload.summary
                    elif isinstance(payload, TokenEvent | CitationEvent | StatusEvent | WarningEvent):
                        if isinstance(payload, TokenEvent):
                            sent += payload.text
                        elif isinstance(payload, CitationEvent):
                            payload = CitationEvent(citation=self.deps.corpus.styled(payload.citation))
                            cited.append(payload.citation.model_dump())
                        if meta_sent:
                            yield payload
                        else:
                            early.append(payload)
                    elif mode == "values":
                        state = _as_state(payload)
        except TimeoutError:
            late = True
            log.warning("question ran past its %.0f s deadline", self.deps.settings.question_deadline_s)
        except GwetaError as exc:
            log.warning("query failed: %s (%s)", exc.message, exc.code)
            for event in opening(None):
                yield event
            yield ErrorEvent(code=exc.code, message=exc.message)
            return
        except Exception:
            # The stream has started, so the status is sent; close it with a typed event, never the exception text.
            log.exception("query failed unexpectedly")
            for event in opening(None):
                yield event
            yield ErrorEvent(code="internal_error", message=f"Something went wrong on our side (trace {trace_id}).")
            return
        state = state or QueryState(question=request.q)
        for event in opening(state.route or None):
            yield event
        if late:
            # What was streamed may be unfinished or unverified: the answer kept replaces it, streamed whole.
            yield WarningEvent(code="deadline_reached", message="the question ran out of time; only what was "
                               "verified before then is kept")  # fmt: skip
            # Everything sent was verified before it was sent, so it stands; with nothing sent, a plain statement.
            state = (
                dataclasses.replace(
                    state, answer=sent, citations=cited, verified=True, verification=checked or state.verification
                )
                if sent
                else past_deadline(state)
            )
            if not sent:
                yield TokenEvent(text=state.answer)
        for event in [*repeal_warnings(state.citations, self.deps.corpus, request.as_of),
                      *version_warnings(state.citations, self.deps.corpus, request.as_of)]:  # fmt: skip
            yield event
        timings = {**state.timings, **llm_timings(state), "total": round((time.perf_counter() - start) * 1000, 2)}
        usage = usage_summary(state)
        log.info("answered route=%s abstained=%s usage=%s timings=%s", state.route, state.abstained, usage, timings)
        yield FinalEvent(
            answer=state.answer,
            citations=[self.deps.corpus.styled(Citation.model_validate(c)) for c in state.citations],
            abstained=state.abstained,
            outcome=outcome_of(state),
            verified=state.verified,
            verification=state.verification,
            usage=usage,
            timings=timings,
            cached=state.cached,
            research=[ResearchStep.model_validate(s) for s in state.steps],
            choice=MultipleChoice.model_validate(state.choice) if state.choice else None,
        )
