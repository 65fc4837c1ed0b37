"""Resumable streams: a client that drops mid-answer and reconnects with Last-Event-ID gets what it missed and the
rest, while the answer went on being produced; over real uvicorn, against a loopback model that streams slowly."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from api.errors import NotFoundError, TooManyRequestsError
from api.main import create_app
from api.schemas.events import FinalEvent, MetaEvent, TokenEvent
from api.settings import LLMSettings, Settings, StreamSettings
from api.streams import StreamHub
from tests.servers import FakeOpenAI, LiveServer, Reply
from tests.sse import Event

QUESTION = "How much deposit can a landlord ask for?"
PIECES = ["A landlord shall not require a deposit ", "that exceeds the rent payable ", "for two months [1]", "."]


async def read(response: httpx.Response, stop_after_tokens: int | None = None) -> tuple[list[Event], list[str]]:
    """Events with their ids, as EventSource sees them; hangs up after ``stop_after_tokens`` tokens if given."""
    events, ids, retry = [], [], []
    name, data, event_id = "message", [], ""
    async for line in response.aiter_lines():
        if line == "":
            if data:
                events.append(Event(name, "\n".join(data)))
                ids.append(event_id)
                if stop_after_tokens is not None and sum(e.event == "token" for e in events) >= stop_after_tokens:
                    break
            name, data = "message", []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            event_id = value
        elif field == "retry":
            retry.append(value)
    read.retry = retry  # type: ignore[attr-defined]
    return events, ids


async def test_a_dropped_stream_resumes_from_last_event_id(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(PIECES, delay_s=0.3)])
    with LiveServer(upstream.app) as llm_server:
        settings = Settings(
            data_dir=private_data_dir,
            llm=LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", api_key="k", model="m"),
            streams=StreamSettings(retry_ms=1500, resume_grace_s=5),
        )
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                async with client.stream("GET", "/api/v1/query/stream", params={"q": QUESTION}) as response:
                    first, first_ids = await read(response, stop_after_tokens=1)  # the network drops here
                assert read.retry == ["1500"]  # type: ignore[attr-defined]
                await asyncio.sleep(0.8)  # meanwhile the answer goes on
                headers = {"Last-Event-ID": first_ids[-1]}
                async with client.stream(
                    "GET", "/api/v1/query/stream", params={"q": QUESTION}, headers=headers
                ) as response:
                    assert response.status_code == 200
                    rest, rest_ids = await read(response)
                # Resuming after the last event: nothing more to send, and 204 tells EventSource to stop.
                done = await client.get("/api/v1/query/stream", params={"q": QUESTION},
                                        headers={"Last-Event-ID": rest_ids[-1]})  # fmt: skip
                assert done.status_code == 204
                unknown = await client.get(
                    "/api/v1/query/stream", params={"q": QUESTION}, headers={"Last-Event-ID": "0" * 32 + ".1"}
                )
                assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    events, ids = first + rest, first_ids + rest_ids
    stream_id = ids[0].split(".")[0]
    assert ids == [f"{stream_id}.{n}" for n in range(1, len(ids) + 1)]  # nothing missed, nothing twice
    assert events[0].event == "meta" and events[-1].event == "final"
    final = events[-1].json()
    assert final["answer"] == "".join(e.json()["text"] for e in events if e.event == "token")
    assert "two months" in final["answer"] and final["citations"]
    assert upstream.streams_abandoned == 0  # the model call was not cut by the drop


async def test_an_answer_no_one_comes_back_for_stops_after_the_grace_period(private_data_dir: Path) -> None:
    # A verified first sentence (sent once the next begins), then a long run of words.
    first = "“A landlord shall not require a deposit that exceeds the rent payable for two months.” [1] "
    upstream = FakeOpenAI([Reply([first, *(f"Word{i} " for i in range(40))], delay_s=0.25)])
    with LiveServer(upstream.app) as llm_server:
        settings = Settings(
            data_dir=private_data_dir,
            llm=LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", api_key="k", model="m"),
            streams=StreamSettings(resume_grace_s=0.5),
        )
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                async with client.stream("GET", "/api/v1/query/stream", params={"q": QUESTION}) as response:
                    _, ids = await read(response, stop_after_tokens=1)
                for _ in range(50):
                    if upstream.streams_abandoned:
                        break
                    await asyncio.sleep(0.1)
                # Back after the grace period: the answer was stopped, and the stream still ends properly.
                headers = {"Last-Event-ID": ids[-1]}
                async with client.stream(
                    "GET", "/api/v1/query/stream", params={"q": QUESTION}, headers=headers
                ) as response:
                    assert response.status_code == 200
                    rest, _ = await read(response)
    assert upstream.streams_abandoned == 1  # 41 pieces at 0.25 s would take 10 s
    closing = [e for e in rest if e.event in ("final", "error")]
    assert len(closing) == 1 and rest[-1] is closing[0]  # exactly one, and last
    assert closing[0].event == "error" and closing[0].json()["code"] == "answer_abandoned"


async def slow_answer(tokens: int, delay_s: float = 0.0) -> AsyncIterator[BaseModel]:
    yield MetaEvent(trace_id="t", session_id="s", route="rag_qa", corpus_version="v", budgets={})
    for n in range(tokens):
        await asyncio.sleep(delay_s)
        yield TokenEvent(text=f"w{n} ")
    yield FinalEvent(answer="".join(f"w{n} " for n in range(tokens)), citations=[])


async def drain(hub: StreamHub, owner: str, last_event_id: str) -> list[str]:
    events = await hub.resume(owner, last_event_id)
    assert events is not None
    return [str(event.id) async for event in events]


async def test_replay_is_scoped_to_the_caller_and_bounded() -> None:
    hub = StreamHub(StreamSettings(replay_events=10, max_streams=3), streams_per_caller=2)
    stream = await hub.start("caller:alice", slow_answer(30))
    assert stream.task is not None
    await stream.task
    with pytest.raises(NotFoundError):
        await hub.resume("caller:bob", f"{stream.id}.25")  # someone else's answer does not exist for bob
    assert await drain(hub, "caller:alice", f"{stream.id}.25") == [f"{stream.id}.{n}" for n in range(26, 33)]
    with pytest.raises(NotFoundError, match="no longer kept"):
        await hub.resume("caller:alice", f"{stream.id}.3")  # only the last 10 events are kept
    with pytest.raises(NotFoundError):
        await hub.resume("caller:alice", "not-an-id")
    for _ in range(3):  # finished answers make room for new ones; at most max_streams are kept
        finished = await hub.start("caller:carol", slow_answer(1))
        assert finished.task is not None
        await finished.task
    assert len(hub) == 3


async def test_finished_answers_leave_in_the_order_they_finished() -> None:
    """The room for new answers and the replay window both go by when an answer finished, not when it began."""
    now = [0.0]
    hub = StreamHub(StreamSettings(max_streams=2, replay_ttl_s=10), streams_per_caller=2, clock=lambda: now[0])
    slow, quick = await hub.start("caller:a", slow_answer(3, 0.05)), await hub.start("caller:a", slow_answer(1))
    assert slow.task is not None and quick.task is not None and hub.in_progress("caller:a") == 2
    await quick.task
    assert hub.in_progress("caller:a") == 1
    await slow.task
    assert hub.in_progress("caller:a") == 0
    third = await hub.start("caller:b", slow_answer(1))  # room is made by the first to finish, though it began second
    assert third.task is not None
    await third.task
    with pytest.raises(NotFoundError):
        await hub.resume("caller:a", f"{quick.id}.1")
    assert await drain(hub, "caller:a", f"{slow.id}.4") == [f"{slow.id}.5"]

    hub = StreamHub(StreamSettings(replay_ttl_s=10), streams_per_caller=2, clock=lambda: now[0])
    first = await hub.start("caller:a", slow_answer(1))
    assert first.task is not None
    await first.task  # finished at 0 s: kept until 10 s
    now[0] = 5.0
    second = await hub.start("caller:a", slow_answer(1))
    assert second.task is not None
    await second.task  # finished at 5 s: kept until 15 s
    now[0] = 12.0
    await hub.start("caller:c", slow_answer(1))  # starting an answer forgets those whose window has ended
    with pytest.raises(NotFoundError):
        await hub.resume("caller:a", f"{first.id}.1")
    assert await drain(hub, "caller:a", f"{second.id}.2") == [f"{second.id}.3"]
    await hub.close()


async def test_every_stopped_answer_ends_with_one_error_event() -> None:
    """Abandoned (no reader within the grace period) or stopped at shutdown, an answer still ends with exactly one
    closing event, so a reader who resumes it is not left with a stream that simply stops."""
    hub = StreamHub(StreamSettings(resume_grace_s=0.1), streams_per_caller=4)
    stream = await hub.start("caller:a", slow_answer(200, 0.02))
    reader = hub.follow(stream)
    seen = [await anext(reader) for _ in range(3)]
    await reader.aclose()  # the client left
    assert stream.task is not None
    await asyncio.gather(stream.task, return_exceptions=True)
    events = await hub.resume("caller:a", str(seen[-1].id))
    assert events is not None
    rest = [(e.event, e.data) async for e in events]
    assert [name for name, _ in rest if name in ("final", "error")] == ["error"] and rest[-1][0] == "error"
    assert '"answer_abandoned"' in rest[-1][1] and len(rest) < 200

    running = await hub.start("caller:a", slow_answer(200, 0.02))
    finished = await hub.start("caller:a", slow_answer(1))
    assert finished.task is not None
    await finished.task
    await asyncio.sleep(0.05)
    await hub.close()  # shutdown stops the running one; the finished one keeps its single final
    names = [name for _, name, _ in running.events]
    assert names.count("error") == 1 and names[-1] == "error" and "final" not in names
    assert [name for _, name, _ in finished.events].count("final") == 1
    assert "error" not in [name for _, name, _ in finished.events]


async def test_each_caller_has_a_cap_on_answers_in_progress() -> None:
    hub = StreamHub(StreamSettings(), streams_per_caller=2)
    running = [await hub.start("ip:10.0.0.1", slow_answer(100, 0.05)) for _ in range(2)]
    with pytest.raises(TooManyRequestsError) as refused:
        await hub.start("ip:10.0.0.1", slow_answer(1))
    assert refused.value.retry_after_s >= 1
    other = await hub.start("ip:10.0.0.2", slow_answer(1))  # another caller is not held up
    await hub.close()
    assert all(s.task is not None and s.task.done() for s in [*running, other])
