"""Admission control under a real uvicorn: a bounded number of streams at once, a bounded queue, then 503s."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from api.main import create_app
from api.settings import AdmissionSettings, LLMSettings, Settings
from tests.servers import FakeOpenAI, LiveServer, Reply
from tests.sse import Event, read_events

DEPOSIT = "How much deposit can a landlord ask for?"
SLOW = Reply(["A landlord may ask for at most two months' rent as a deposit [1]."], delay_s=1.5)


def settings(data_dir: Path, llm_url: str, **admission: float) -> Settings:
    return Settings(
        data_dir=data_dir,
        llm=LLMSettings(backend="openai", base_url=f"{llm_url}/v1", model="m-1"),
        admission=AdmissionSettings(**admission),  # type: ignore[arg-type]
    )


async def stream(client: httpx.AsyncClient, question: str, admitted: asyncio.Event | None = None) -> list[Event]:
    """Read one stream to its end; ``admitted`` is set when its first event (meta) arrives."""
    events: list[Event] = []
    params = {"q": question, "session_id": f"adm-{id(events)}"}
    async with client.stream("GET", "/api/v1/query/stream", params=params) as response:
        assert response.status_code == 200
        async for event in read_events(response):
            events.append(event)
            if admitted is not None:
                admitted.set()
    return events


async def test_a_full_instance_answers_503_with_retry_after_and_recovers(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([SLOW, SLOW])
    with LiveServer(upstream.app) as llm:
        cfg = settings(private_data_dir, llm.url, max_streams=1, max_waiting=0, retry_after_s=3)
        with LiveServer(create_app(cfg)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                admitted = asyncio.Event()
                first = asyncio.create_task(stream(client, DEPOSIT, admitted))
                await asyncio.wait_for(admitted.wait(), 20)
                refused = await client.get("/api/v1/query/stream", params={"q": DEPOSIT, "session_id": "b"})
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "3"
                assert refused.json()["error"]["code"] == "overloaded"
                assert (await client.get("/healthz")).status_code == 200  # health checks are never queued
                assert (await first)[-1].event == "final"
                # The slot frees as the server finishes the stream, just after its last byte: retry until then.
                for _ in range(50):
                    again = await client.get("/api/v1/query/stream", params={"q": "hello", "session_id": "c"})
                    if again.status_code != 503:
                        break
                    await asyncio.sleep(0.1)
                assert again.status_code == 200 and "event: final" in again.text


async def test_a_stream_waits_its_turn_in_the_queue(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([SLOW, SLOW])
    with LiveServer(upstream.app) as llm:
        cfg = settings(private_data_dir, llm.url, max_streams=1, max_waiting=1, max_wait_s=20)
        with LiveServer(create_app(cfg)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                admitted = asyncio.Event()
                first = asyncio.create_task(stream(client, DEPOSIT, admitted))
                await asyncio.wait_for(admitted.wait(), 20)
                second = asyncio.create_task(stream(client, DEPOSIT))
                first_events = await first
                assert not second.done()  # it was still waiting, or only just admitted, when the first ended
                second_events = await second
                assert first_events[-1].event == second_events[-1].event == "final"


async def test_a_stream_that_waits_too_long_gets_503(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([SLOW])
    with LiveServer(upstream.app) as llm:
        cfg = settings(private_data_dir, llm.url, max_streams=1, max_waiting=5, max_wait_s=0.2)
        with LiveServer(create_app(cfg)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                admitted = asyncio.Event()
                first = asyncio.create_task(stream(client, DEPOSIT, admitted))
                await asyncio.wait_for(admitted.wait(), 20)
                late = await client.get("/api/v1/query/stream", params={"q": DEPOSIT, "session_id": "late"})
                assert late.status_code == 503 and "retry-after" in late.headers
                assert (await first)[-1].event == "final"
