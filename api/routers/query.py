"""The streaming query endpoint (GET for EventSource clients, POST for JSON bodies)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query
from sse_starlette import EventSourceResponse, ServerSentEvent

from api.auth import CallerDep
from api.deps import Orchestrator, SettingsDep
from api.schemas.events import StreamEvent
from api.schemas.query import DATE_PATTERN, MAX_QUESTION_CHARS, QueryRequest

router = APIRouter(prefix="/api/v1/query", tags=["query"])


async def _sse(events: AsyncIterator[StreamEvent]) -> AsyncIterator[ServerSentEvent]:
    async for event in events:
        yield ServerSentEvent(data=event.model_dump_json(exclude={"event"}), event=event.event)


@router.get("/stream")
async def stream_get(
    orchestrator: Orchestrator,
    settings: SettingsDep,
    caller: CallerDep,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUESTION_CHARS)],
    session_id: Annotated[str, Query(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")] = "default",
    jurisdiction: Annotated[str | None, Query(max_length=16)] = None,
    doc_type: Annotated[str | None, Query(max_length=32)] = None,
    law_id: Annotated[str | None, Query(max_length=256)] = None,
    date_from: Annotated[str | None, Query(pattern=DATE_PATTERN)] = None,
    date_to: Annotated[str | None, Query(pattern=DATE_PATTERN)] = None,
) -> EventSourceResponse:
    request = QueryRequest(
        q=q, session_id=session_id, jurisdiction=jurisdiction, doc_type=doc_type, law_id=law_id, date_from=date_from,
        date_to=date_to,
    )  # fmt: skip
    return EventSourceResponse(_sse(orchestrator.stream(request, caller)), ping=settings.sse_ping_s)


@router.post("/stream")
async def stream_post(
    orchestrator: Orchestrator, settings: SettingsDep, caller: CallerDep, body: QueryRequest
) -> EventSourceResponse:
    return EventSourceResponse(_sse(orchestrator.stream(body, caller)), ping=settings.sse_ping_s)
