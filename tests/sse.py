"""A small Server-Sent Events reader for tests: parses the wire format as a browser's EventSource would."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Event:
    event: str
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


async def read_events(response: httpx.Response) -> AsyncIterator[Event]:
    name, data = "message", []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield Event(name, "\n".join(data))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)


async def collect(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> list[Event]:
    """Every event of a stream, checked for what every answer promises: no ``token`` event carries text that the
    ``final`` answer does not contain (nothing the reader was sent is taken back)."""
    async with client.stream(method, url, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [event async for event in read_events(response)]
    assert_tokens_kept(events)
    return events


def assert_tokens_kept(events: list[Event]) -> None:
    """No token event of a stream that ended in ``final`` carries text its answer lacks; none is revised."""
    if not events or events[-1].event != "final":
        return
    answer = events[-1].json()["answer"]
    for event in events:
        if event.event == "token":
            assert event.json()["text"] in answer, (event.json()["text"], answer)
        elif event.event == "warning":
            assert event.json()["code"] != "answer_revised", "an answer was sent and then taken back"
