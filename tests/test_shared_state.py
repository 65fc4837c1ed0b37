"""One contract per thing replicas share, passed by the in-process implementation and by Redis (a real
redis-server on 127.0.0.1); then what only Redis has to do (leases that lapse, versions heard by other processes,
a clear error at boot)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from api.errors import ConfigError, StateUnavailableError
from api.settings import StateSettings
from api.tools.shared_state import (
    Logged,
    MemoryReplayLog,
    ReplayLog,
    SharedState,
    StateLimits,
    announce_corpus_version,
    open_shared_state,
)
from tests.redis_server import RedisServer, free_port

LIMITS = StateLimits(
    replay_events=10, requests_per_minute=60, burst=20, tracked_callers=1000, whatsapp_limit=2,
    whatsapp_window_s=60, whatsapp_seen_ids=100,
)  # fmt: skip


def redis_settings(server: RedisServer, **extra: object) -> StateSettings:
    return StateSettings(backend="redis", url=SecretStr(server.url), **extra)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "redis"])
async def state(request: pytest.FixtureRequest) -> AsyncIterator[SharedState]:
    if request.param == "memory":
        cfg = StateSettings()
    else:
        cfg = redis_settings(request.getfixturevalue("redis"))
    shared = await open_shared_state(cfg, LIMITS)
    try:
        yield shared
    finally:
        await shared.close()


def replay_of(state: SharedState) -> ReplayLog:
    # In one process the hub resumes from its own buffer; the in-process log is the reference the contract holds.
    return state.replay if state.replay is not None else MemoryReplayLog(LIMITS.replay_events)


def events(first: int, last: int) -> list[Logged]:
    return [Logged(n, "token", f'{{"text": "w{n} "}}') for n in range(first, last + 1)]


async def test_a_replay_log_keeps_the_newest_events_and_says_whose_it_is(state: SharedState) -> None:
    log = replay_of(state)
    assert await log.lookup("a" * 32) is None
    await log.open("a" * 32, "caller:alice", ttl_s=30)
    opened = await log.lookup("a" * 32)
    assert opened is not None and (opened.owner, opened.last, opened.done) == ("caller:alice", 0, None)
    await log.append("a" * 32, events(1, 8))
    await log.append("a" * 32, events(5, 15))  # a retried write: 5..8 are not logged twice
    info = await log.lookup("a" * 32)
    assert info is not None and info.owner == "caller:alice"
    assert (info.first, info.last, info.done) == (6, 15, None)  # only the newest 10 are kept
    assert [e.seq for e in await log.read("a" * 32, 11, wait_s=0.1)] == [12, 13, 14, 15]
    assert (await log.read("a" * 32, 12, wait_s=0.1))[0] == Logged(13, "token", '{"text": "w13 "}')
    await log.finish("a" * 32, 15, ttl_s=30)
    info = await log.lookup("a" * 32)
    assert info is not None and info.done == 15
    assert await log.read("a" * 32, 15, wait_s=0.1) == []


async def test_a_reader_follows_a_replay_log_live(state: SharedState) -> None:
    log = replay_of(state)
    await log.open("b" * 32, "caller:bob", ttl_s=30)

    async def later() -> None:
        await asyncio.sleep(0.2)
        await log.append("b" * 32, events(1, 2))

    writer = asyncio.create_task(later())
    started = asyncio.get_running_loop().time()
    got = await log.read("b" * 32, 0, wait_s=1.0)
    waited = asyncio.get_running_loop().time() - started
    await writer
    assert [e.seq for e in got] in ([1], [1, 2]) and 0.15 < waited < 0.9  # woken by the write, not the timeout
    assert not await log.being_read("b" * 32)
    await log.mark_reading("b" * 32, for_s=0.3)
    assert await log.being_read("b" * 32)
    await asyncio.sleep(0.4)
    assert not await log.being_read("b" * 32)


async def test_a_finished_log_expires(state: SharedState) -> None:
    log = replay_of(state)
    await log.open("c" * 32, "caller:carol", ttl_s=30)
    await log.append("c" * 32, events(1, 3))
    await log.finish("c" * 32, 3, ttl_s=0.3)
    assert await log.lookup("c" * 32) is not None
    await asyncio.sleep(0.5)
    assert await log.lookup("c" * 32) is None


async def test_slots_cap_a_callers_answers_in_progress(state: SharedState) -> None:
    taken = await asyncio.gather(*(state.slots.acquire("ip:10.0.0.1", f"s{n}", 4) for n in range(10)))
    assert sum(taken) == 4 and await state.slots.held("ip:10.0.0.1") == 4  # atomic: never more than the cap
    assert await state.slots.acquire("ip:10.0.0.2", "other", 4)  # another caller is not held up
    winners = [f"s{n}" for n, ok in enumerate(taken) if ok]
    await state.slots.renew("ip:10.0.0.1", winners)
    await state.slots.release("ip:10.0.0.1", winners[0])
    await state.slots.release("ip:10.0.0.1", "never-taken")  # releasing what is not held changes nothing
    assert await state.slots.held("ip:10.0.0.1") == 3
    assert await state.slots.acquire("ip:10.0.0.1", "s99", 4)
    assert not await state.slots.acquire("ip:10.0.0.1", "s100", 4)


async def test_token_buckets_allow_a_burst_then_say_when(state: SharedState) -> None:
    waits = await asyncio.gather(*(state.rates.take("caller:x") for _ in range(25)))
    assert sum(w == 0 for w in waits) == 20  # the burst, counted atomically
    refused = [w for w in waits if w > 0]
    assert len(refused) == 5 and all(0 < w <= 1.1 for w in refused)  # 60 a minute: one a second
    assert await state.rates.take("caller:y") == 0
    await asyncio.sleep(1.1)
    assert await state.rates.take("caller:x") == 0  # refilled


async def test_a_message_id_is_accepted_once(state: SharedState) -> None:
    firsts = await asyncio.gather(*(state.seen.first_time("wamid.1") for _ in range(8)))
    assert sum(firsts) == 1
    assert await state.seen.first_time("wamid.2")


async def test_a_sender_is_limited_and_told_once(state: SharedState) -> None:
    verdicts = [await state.senders.check("263770000001") for _ in range(5)]
    assert verdicts == ["ok", "ok", "limited", "quiet", "quiet"]
    assert await state.senders.check("263770000002") == "ok"


async def test_redis_leases_of_a_dead_replica_lapse(redis: RedisServer) -> None:
    """A replica that died cannot release its callers' slots: its leases lapse unless renewed."""
    shared = await open_shared_state(redis_settings(redis, lease_s=1.0), LIMITS)
    try:
        assert await shared.slots.acquire("caller:z", "kept", 2)
        assert await shared.slots.acquire("caller:z", "orphan", 2)
        assert not await shared.slots.acquire("caller:z", "third", 2)
        for _ in range(3):
            await asyncio.sleep(0.5)
            await shared.slots.renew("caller:z", ["kept"])  # a live replica renews; the dead one does not
        assert await shared.slots.held("caller:z") == 1
        assert await shared.slots.acquire("caller:z", "third", 2)
    finally:
        await shared.close()


async def test_an_ingestion_is_heard_by_every_listening_replica(redis: RedisServer) -> None:
    cfg = redis_settings(redis)
    replicas = [await open_shared_state(cfg, LIMITS) for _ in range(2)]
    try:
        heard: list[list[str]] = [[], []]

        async def listen(n: int) -> None:
            async for version in replicas[n].versions.listen():
                heard[n].append(version)

        listeners = [asyncio.create_task(listen(n)) for n in range(2)]
        await asyncio.sleep(0.3)  # subscribed
        await announce_corpus_version(cfg, "v-20260101")  # another process: its own connection
        for _ in range(20):
            if all(heard):
                break
            await asyncio.sleep(0.05)
        assert heard == [["v-20260101"], ["v-20260101"]]
        for task in listeners:
            task.cancel()
        await asyncio.gather(*listeners, return_exceptions=True)
    finally:
        for replica in replicas:
            await replica.close()


async def test_redis_unreachable_at_boot_names_the_setting() -> None:
    cfg = StateSettings(backend="redis", url=SecretStr(f"redis://127.0.0.1:{free_port()}/0"), connect_timeout_s=0.5)
    with pytest.raises(ConfigError, match="GWETA_STATE__URL") as raised:
        await open_shared_state(cfg, LIMITS)
    assert "127.0.0.1" not in raised.value.message  # the URL may hold a password: the setting is named instead


def test_gweta_serve_with_redis_unreachable_says_which_setting(tmp_path: Path) -> None:
    env = {**os.environ, "GWETA_STATE__BACKEND": "redis", "GWETA_STATE__URL": f"redis://127.0.0.1:{free_port()}/0"}
    gweta = Path(sys.executable).parent / "gweta"
    done = subprocess.run(
        [str(gweta), "serve", "--data-dir", str(tmp_path), "--port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "GWETA_STATE__URL cannot be reached" in done.stderr and "Traceback" not in done.stderr + done.stdout


async def test_a_redis_failure_is_a_state_unavailable_error(redis: RedisServer) -> None:
    shared = await open_shared_state(redis_settings(redis, timeout_s=0.5), LIMITS)
    try:
        assert await shared.rates.take("caller:q") == 0
        redis.kill()
        with pytest.raises(StateUnavailableError):
            await shared.rates.take("caller:q")
        redis.start()  # the same port: the client reconnects by itself
        for _ in range(20):
            try:
                assert await shared.rates.take("caller:q") == 0
                break
            except StateUnavailableError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("the client did not reconnect after Redis restarted")
    finally:
        await shared.close()
