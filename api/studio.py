"""The query graph for LangGraph Studio: ``langgraph dev`` (``langgraph.json``) serves :func:`make_graph`.

The graph's nodes read their tools from the run's context (:class:`QueryDeps`), which is clients and indexes, not
JSON a Studio user could send. So the services are opened once per process from ``Settings()`` (the embedded
defaults, or ``GWETA_*`` variables: ``GWETA_DATA_DIR`` names the ingested data dir), and every run the server starts
without a context of its own gets the current ``QueryDeps``. The input is the graph's state, e.g.
``{"question": "What is the minimum age of marriage?"}``; the server keeps the checkpoints itself.

This is a developer's tool for stepping through the graph: the HTTP service (``gweta serve``) does not use it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AsyncExitStack
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from api.orchestrators.query.deps import QueryDeps
from api.orchestrators.query.graph import build_query_graph
from api.orchestrators.query.state import QueryState
from api.services import Services, open_services
from api.settings import Settings

_stack = AsyncExitStack()  # held open for the process's life: the server ends the process, not the graph
_services: Services | None = None
_lock = asyncio.Lock()


def current_deps() -> QueryDeps:
    """The tools of the corpus version being served now (a corpus swap replaces them)."""
    if _services is None:
        raise RuntimeError("make_graph() opens the services; it has not run in this process")
    return _services.orchestrator.deps


class StudioGraph(CompiledStateGraph[QueryState, QueryDeps, QueryState, QueryState]):
    """The compiled query graph, run with this process's ``QueryDeps`` when a run brings no context of its own."""

    def astream(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("context"):
            kwargs["context"] = current_deps()
        return super().astream(*args, **kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if not kwargs.get("context"):
            kwargs["context"] = current_deps()
        return super().stream(*args, **kwargs)

    def get_context_jsonschema(self) -> dict[str, Any]:
        # The context is built here, never sent by a client: nothing for Studio to ask for.
        return {"title": "QueryDeps", "type": "object", "properties": {}}


async def make_graph() -> StudioGraph:
    """Open the services once (the first run loads the corpus and the models), then return the query graph."""
    global _services
    async with _lock:
        if _services is None:
            _services = await _stack.enter_async_context(open_services(Settings()))
    graph = build_query_graph()
    graph.__class__ = StudioGraph  # the same compiled graph; only where its context comes from differs
    assert isinstance(graph, StudioGraph)
    return graph
