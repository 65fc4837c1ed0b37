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
    async with client.stream(method, url, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [event async for event in read_events(response)]
