"""Answers shared by replicas through Redis (a real redis-server on 127.0.0.1): two StreamHubs stand for two
replicas. A resume on the other replica gets every missing event and one closing event; the producer keeps going
while the other replica's reader follows; the per-caller cap holds over both; Redis failing mid-answer never
blanks the answer, and a restarted Redis is written again without restarting anything."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel, SecretStr

from api.errors import NotFoundError, StateUnavailableError, TooManyRequestsError
from api.schemas.events import FinalEvent, MetaEvent, TokenEvent
from api.settings import StateSettings, StreamSettings
from api.streams import StreamHub
from api.tools.shared_state import Logged, SharedState, StateLimits, open_shared_state
from tests.redis_server import RedisServer

LIMITS = StateLimits(
    replay_events=5000, requests_per_minute=60, burst=20, tracked_callers=1000, whatsapp_limit=6,
    whatsapp_window_s=60, whatsapp_seen_ids=100,
)  # fmt: skip


async def answer(tokens: int, delay_s: float) -> AsyncIterator[BaseModel]:
    yield MetaEvent(trace_id="t", session_id="s", route="rag_qa", corpus_version="v", budgets={})
    for n in range(tokens):
        await asyncio.sleep(delay_s)
        yield TokenEvent(text=f"w{n} ")
    yield FinalEvent(answer="".join(f"w{n} " for n in range(tokens)), citations=[])


class Replicas:
    def __init__(self, states: list[SharedState], hubs: list[StreamHub]) -> None:
        self.states, self.hubs = states, hubs


@pytest.fixture
async def replicas(redis: RedisServer) -> AsyncIterator[Replicas]:
    cfg = StateSettings(backend="redis", url=SecretStr(redis.url), timeout_s=0.5, lease_s=3, stream_idle_s=1.5)
    states = [await open_shared_state(cfg, LIMITS) for _ in range(2)]
    hubs = [StreamHub(StreamSettings(resume_grace_s=0.3), 2, slots=s.slots, replay=s.replay, state=cfg) for s in states]
    try:
        yield Replicas(states, hubs)
    finally:
        for hub in hubs:
            await hub.close()
        for state in states:
            await state.close()


async def events_of(stream: AsyncIterator[object] | None) -> list[tuple[str, str | None, str]]:
    assert stream is not None
    return [(e.event, e.id, e.data) async for e in stream]  # type: ignore[attr-defined]


async def test_a_dropped_answer_resumes_on_the_other_replica(replicas: Replicas) -> None:
    a, b = replicas.hubs
    stream = await a.start("caller:alice", answer(40, 0.03))
    reader = a.follow(stream)
    first = [await anext(reader) for _ in range(4)]
    await reader.aclose()  # the phone's connection drops; the balancer sends it to b
    with pytest.raises(NotFoundError):
        await b.resume("caller:bob", str(first[-1].id))  # someone else's answer does not exist for bob
    rest = await events_of(await b.resume("caller:alice", str(first[-1].id)))
    ids = [str(e.id) for e in first] + [str(i) for _, i, _ in rest]
    assert ids == [f"{stream.id}.{n}" for n in range(1, 43)]  # every event once, in order
    names = [e.event for e in first] + [n for n, _, _ in rest]
    assert names.count("final") == 1 and names[-1] == "final" and "error" not in names
    # b followed it live: a kept producing past its grace period because a reader elsewhere was following.
    assert a.in_progress("caller:alice") == 0 and stream.events[-1][1] == "final"
    assert await b.resume("caller:alice", f"{stream.id}.42") is None  # after the last event: 204


async def test_the_cap_on_answers_in_progress_holds_over_both_replicas(replicas: Replicas) -> None:
    a, b = replicas.hubs
    running = [await a.start("ip:10.0.0.1", answer(100, 0.05)), await b.start("ip:10.0.0.1", answer(100, 0.05))]
    for hub in (a, b):
        with pytest.raises(TooManyRequestsError):
            await hub.start("ip:10.0.0.1", answer(1, 0))
    await b.start("ip:10.0.0.2", answer(1, 0))  # another caller is not held up
    assert running[0].task is not None
    running[0].task.cancel()
    await asyncio.gather(running[0].task, return_exceptions=True)
    await b.start("ip:10.0.0.1", answer(1, 0))  # a slot freed on a is free on b


async def test_redis_killed_mid_answer_never_blanks_it(replicas: Replicas, redis: RedisServer) -> None:
    a, b = replicas.hubs
    stream = await a.start("caller:alice", answer(60, 0.03))
    reader = a.follow(stream)
    seen = [await anext(reader) for _ in range(5)]
    redis.kill()
    seen += [e async for e in reader]  # the reader on a gets the whole answer all the same
    assert seen[-1].event == "final" and [e.event for e in seen].count("final") == 1
    with pytest.raises(StateUnavailableError):  # resume elsewhere is refused clearly (503), not a wrong answer
        await b.resume("caller:alice", str(seen[10].id))
    redis.start()  # empty: what it held is gone; a writes its copy again, nothing restarted
    for _ in range(50):
        try:
            rest = await events_of(await b.resume("caller:alice", str(seen[10].id)))
            break
        except (StateUnavailableError, NotFoundError):
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("the answer's copy was not written again after Redis restarted")
    assert [str(i) for _, i, _ in rest] == [str(e.id) for e in seen[11:]]
    assert rest[-1][0] == "final"


async def test_an_answer_whose_replica_died_ends_with_an_error(replicas: Replicas) -> None:
    """The producing replica died mid-answer: its log stops growing and never ends; the reader on the other replica
    is told, once, after ``state.stream_idle_s``."""
    replay = replicas.states[0].replay
    assert replay is not None
    await replay.open("d" * 32, "caller:alice", ttl_s=30)
    await replay.append("d" * 32, [Logged(1, "meta", "{}"), Logged(2, "token", '{"text": "w0 "}')])
    rest = await events_of(await replicas.hubs[1].resume("caller:alice", f"{'d' * 32}.1"))
    assert [name for name, _, _ in rest] == ["token", "error"]
    assert '"interrupted"' in rest[-1][2] and rest[-1][1] is None


@pytest.mark.parametrize("fail", ["open", "closed"])
async def test_the_stream_cap_fails_open_or_closed_as_set(redis: RedisServer, fail: str) -> None:
    cfg = StateSettings(backend="redis", url=SecretStr(redis.url), timeout_s=0.3, limits_fail=fail)  # type: ignore[arg-type]
    state = await open_shared_state(cfg, LIMITS)
    hub = StreamHub(StreamSettings(), 1, slots=state.slots, replay=state.replay, state=cfg)
    try:
        redis.kill()
        if fail == "closed":
            with pytest.raises(StateUnavailableError):
                await hub.start("caller:a", answer(1, 0))
        else:
            stream = await hub.start("caller:a", answer(3, 0))  # uncounted, and answered in full all the same
            events = [e.event async for e in hub.follow(stream)]
            assert events[0] == "meta" and events[-1] == "final"
    finally:
        await hub.close()
        await state.close()
