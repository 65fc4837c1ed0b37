"""The QueryOrchestrator: runs the query graph for one question and yields the stream's events."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from pydantic import BaseModel

from api.auth import LOCAL, Caller
from api.errors import GwetaError
from api.observability import new_request_id
from api.schemas.events import Citation, ErrorEvent, FinalEvent, MetaEvent, ResearchStep
from api.schemas.query import QueryRequest

from .graph import build_query_graph
from .nodes import QueryDeps
from .state import RouteDecided

log = logging.getLogger(__name__)

__all__ = ["QueryDeps", "QueryOrchestrator", "build_query_graph"]


def usage_summary(state: dict[str, Any]) -> dict[str, int]:
    """LLM calls and tokens (by skill too), failures, retries and research effort, for ``final`` and the trace."""
    calls: list[dict[str, Any]] = state.get("llm", [])
    usage = {
        "llm_calls": len(calls),
        "input_tokens": sum(int(c.get("input_tokens", 0)) for c in calls),
        "output_tokens": sum(int(c.get("output_tokens", 0)) for c in calls),
        "llm_retries": sum(max(0, int(c.get("attempts", 1)) - 1) for c in calls),
        "llm_timeouts": sum(c.get("outcome") == "timeout" for c in calls),
        "llm_failures": sum(c.get("outcome") in ("error", "unparsable") for c in calls),
        "research_steps": len(state.get("steps", [])),
        "query_rewrites": sum(int(s.get("rewrites", 0)) for s in state.get("steps", [])),
    }
    for call in calls:
        key = f"calls_{call.get('skill', 'unknown')}"
        usage[key] = usage.get(key, 0) + 1
    return usage


class QueryOrchestrator:
    def __init__(self, graph: Any, deps: QueryDeps, callbacks: list[BaseCallbackHandler] | None = None) -> None:
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
            "llm_timeout_s": s.llm.timeout_s if self.deps.llm is not None else 0,
        }

    async def stream(self, request: QueryRequest, caller: Caller = LOCAL) -> AsyncIterator[BaseModel]:
        """Yield meta, then the graph's token/citation/warning events, then final; or error if it fails."""
        trace_id = new_request_id()
        start = time.perf_counter()

        def meta(route: str) -> MetaEvent:
            return MetaEvent(
                trace_id=trace_id,
                session_id=request.session_id,
                route=route,
                corpus_version=self.deps.corpus.version,
                budgets=self.budgets(),
            )

        meta_sent = False
        early: list[BaseModel] = []  # e.g. the guard's warning, written before the route is known

        def opening(route: str) -> list[BaseModel]:
            """meta first, then anything held back for it; nothing once meta has gone out."""
            nonlocal meta_sent
            if meta_sent:
                return []
            meta_sent = True
            return [meta(route), *early]

        fresh_turn = {
            "question": request.q, "query": "", "injection": False, "filters": request.filters(), "route": "",
            "route_reason": "", "hits": [], "searched": 0, "answer": "", "citations": [], "abstained": False,
            "verified": True, "verification": {}, "warnings": [], "timings": {}, "tenant": caller.tenant,
            "complexity": "simple", "pending": [], "steps": [], "rewrites": 0, "retry": False, "corrected": False,
            "cached": False, "llm": [], "relevant_sections": [],
        }  # fmt: skip
        config = {
            "configurable": {"thread_id": caller.session_key(request.session_id)},
            "callbacks": self.callbacks,
            "run_name": "query",
            "metadata": {"trace_id": trace_id},
        }
        state: dict[str, Any] = {}
        try:
            async for mode, payload in self.graph.astream(
                fresh_turn, config, context=self.deps, stream_mode=["custom", "values"]
            ):
                if isinstance(payload, RouteDecided):
                    for event in opening(payload.route):
                        yield event
                elif mode == "custom":
                    if meta_sent:
                        yield payload
                    else:
                        early.append(payload)
                else:
                    state = payload if isinstance(payload, dict) else dataclasses.asdict(payload)
        except GwetaError as exc:
            log.warning("query failed: %s (%s)", exc.message, exc.code)
            for event in opening("unknown"):
                yield event
            yield ErrorEvent(code=exc.code, message=exc.message)
            return
        except Exception:
            # The stream has started, so the status is sent; close it with a typed event, never the exception text.
            log.exception("query failed unexpectedly")
            for event in opening("unknown"):
                yield event
            yield ErrorEvent(code="internal_error", message=f"Something went wrong on our side (trace {trace_id}).")
            return
        for event in opening(state.get("route") or "unknown"):
            yield event
        timings = {**state.get("timings", {}), "total": round((time.perf_counter() - start) * 1000, 2)}
        usage = usage_summary(state)
        log.info("answered route=%s abstained=%s usage=%s timings=%s", state.get("route"), state.get("abstained"),
                 usage, timings)  # fmt: skip
        yield FinalEvent(
            answer=state.get("answer", ""),
            citations=[Citation.model_validate(c) for c in state.get("citations", [])],
            abstained=bool(state.get("abstained")),
            verified=bool(state.get("verified", True)),
            verification=state.get("verification", {}),
            usage=usage,
            timings=timings,
            cached=bool(state.get("cached")),
            research=[ResearchStep.model_validate(s) for s in state.get("steps", [])],
        )
