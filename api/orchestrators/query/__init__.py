"""The QueryOrchestrator: runs the query graph for one question and yields the stream's events."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from pydantic import BaseModel

from api.errors import GwetaError
from api.observability import new_request_id
from api.schemas.events import Citation, ErrorEvent, FinalEvent, MetaEvent
from api.schemas.query import QueryRequest

from .graph import build_query_graph
from .nodes import QueryDeps
from .state import RouteDecided

log = logging.getLogger(__name__)

__all__ = ["QueryDeps", "QueryOrchestrator", "build_query_graph"]


class QueryOrchestrator:
    def __init__(self, graph: Any, deps: QueryDeps, callbacks: list[BaseCallbackHandler] | None = None) -> None:
        self.graph = graph
        self.deps = deps
        self.callbacks = callbacks or []

    def budgets(self) -> dict[str, float | int]:
        s = self.deps.settings
        return {
            "llm_calls": 1 if self.deps.llm is not None else 0,
            "top_k": s.retrieval.top_k,
            "retrieval_timeout_s": s.retrieval.timeout_s,
            "llm_timeout_s": s.llm.timeout_s if self.deps.llm is not None else 0,
        }

    async def stream(self, request: QueryRequest) -> AsyncIterator[BaseModel]:
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
            "verified": True, "verification": {}, "warnings": [], "timings": {}, "usage": {},
        }  # fmt: skip
        config = {
            "configurable": {"thread_id": request.session_id},
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
        log.info("answered route=%s abstained=%s timings=%s", state.get("route"), state.get("abstained"), timings)
        yield FinalEvent(
            answer=state.get("answer", ""),
            citations=[Citation.model_validate(c) for c in state.get("citations", [])],
            abstained=bool(state.get("abstained")),
            verified=bool(state.get("verified", True)),
            verification=state.get("verification", {}),
            usage=state.get("usage", {}),
            timings=timings,
        )
