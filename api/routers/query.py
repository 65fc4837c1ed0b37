"""The streaming query endpoint (GET for EventSource clients, POST for JSON bodies).

Both take the same ``QueryRequest`` (GET from the query string), stream resumable Server-Sent Events (see
``api.streams``), and resume instead of asking again when the client sends ``Last-Event-ID``.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from api.auth import CallerDep
from api.deps import Orchestrator, SettingsDep
from api.middleware import caller_limit_key, rate_limited
from api.observability import describe_question
from api.schemas.errors import error_responses
from api.schemas.events import (
    CitationEvent,
    ErrorEvent,
    FinalEvent,
    MetaEvent,
    StatusEvent,
    TokenEvent,
    WarningEvent,
)
from api.schemas.query import QueryRequest
from api.streams import StreamHub

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1/query", tags=["query"], dependencies=[Depends(rate_limited)])


def _event_schema(model: type[BaseModel]) -> dict[str, Any]:
    """One Server-Sent Event on the wire: its name, id, and its model as JSON in ``data``."""
    name = model.model_fields["event"].default
    data = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {
        "type": "object",
        "title": f"{name} event",
        "required": ["event", "data"],
        "properties": {
            "event": {"const": name},
            "id": {"type": "string", "description": "<stream id>.<n>: send it back as Last-Event-ID to resume."},
            "retry": {"type": "integer", "description": "Reconnection delay in ms (the first event)."},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data},
        },
    }


STREAM_EVENT_SCHEMA = {"oneOf": [_event_schema(m) for m in (MetaEvent, TokenEvent, CitationEvent, StatusEvent,
                                                              WarningEvent, FinalEvent, ErrorEvent)]}  # fmt: skip
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "A stream of Server-Sent Events: `meta`, then `token`, `citation`, `status` and `warning` events, then "
            "one `final` or `error`. Each `token` is verified text: joined, they are the final answer. "
            "Each event's `data` is its model below as JSON (without `event`, which is the SSE event "
            "name); each has an `id` to resume from with `Last-Event-ID`, and the first carries `retry`."
        ),
        "content": {"text/event-stream": {"schema": STREAM_EVENT_SCHEMA}},
    },
    204: {"description": "Resumed after the answer's last event: nothing more to send (EventSource stops)."},
    **error_responses(400, 401, 404, 413, 422, 429, 503),
}
LastEventId = Annotated[
    str | None,
    Header(alias="Last-Event-ID", max_length=64, description="Resume the answer after this event id."),
]


async def _respond(
    request: Request, orchestrator: Orchestrator, settings: SettingsDep, caller: CallerDep, query: QueryRequest,
    last_event_id: str | None,
) -> Response:  # fmt: skip
    hub: StreamHub = request.app.state.streams
    owner = caller_limit_key(request, caller)
    if last_event_id:
        events = await hub.resume(owner, last_event_id)
        if events is None:
            return Response(status_code=204)
    else:
        log.info("question %s session=%s", describe_question(query.q, settings.privacy), query.session_id)
        events = hub.follow(await hub.start(owner, orchestrator.stream(query, caller)))
    return EventSourceResponse(events, ping=settings.sse_ping_s)


@router.get("/stream", response_class=EventSourceResponse, responses=STREAM_RESPONSES)
async def stream_get(
    request: Request,
    orchestrator: Orchestrator,
    settings: SettingsDep,
    caller: CallerDep,
    query: Annotated[QueryRequest, Query()],
    last_event_id: LastEventId = None,
) -> Response:
    return await _respond(request, orchestrator, settings, caller, query, last_event_id)


@router.post("/stream", response_class=EventSourceResponse, responses=STREAM_RESPONSES)
async def stream_post(
    request: Request,
    orchestrator: Orchestrator,
    settings: SettingsDep,
    caller: CallerDep,
    body: QueryRequest,
    last_event_id: LastEventId = None,
) -> Response:
    return await _respond(request, orchestrator, settings, caller, body, last_event_id)
