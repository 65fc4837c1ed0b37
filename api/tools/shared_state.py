"""What replicas share between requests, one Protocol per thing kept:

    ReplayLog       an answer's events, so any replica can resume it   (Redis: one Stream per answer, XADD MAXLEN)
    Slots           answers in progress per caller, as expiring leases (Redis: a sorted set per caller, Lua)
    TokenBuckets    request rate per caller                           (Redis: a hash per caller, Lua)
    SeenIds         WhatsApp message ids already accepted              (Redis: SET NX with expiry)
    SenderLimits    WhatsApp questions per sender in a sliding window  (Redis: a sorted set per sender, Lua)
    VersionChannel  a new corpus version, told by whoever ingested it  (Redis: pub/sub)

``Memory*`` keep each in this process (one replica, the embedded default); ``Redis*`` share them through one Redis
server, atomically (each check-and-update is one Lua script, timed by Redis's own clock so replicas' clocks do not
matter). A Redis call that fails or outlasts ``state.timeout_s`` raises StateUnavailableError; the caller decides
what that means (a limit fails open or closed as settings say; an answer goes on without its replay copy).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from api.errors import ConfigError, StateUnavailableError
from api.settings import StateSettings

log = logging.getLogger(__name__)

T = TypeVar("T")
Verdict = Literal["ok", "limited", "quiet"]
BLOCK_S = 1.0
"""Longest one blocking read of a replay log waits for new events before the follower looks around again."""


@dataclass(frozen=True, slots=True)
class Logged:
    """One event of an answer: its sequence number (from 1), SSE event name and JSON data, unchanged."""

    seq: int
    name: str
    data: str


@dataclass(frozen=True, slots=True)
class LogInfo:
    owner: str
    first: int
    """The oldest sequence number still kept (the log is bounded); last + 1 when nothing is kept."""
    last: int
    """The newest sequence number logged (0: none yet)."""
    done: int | None
    """The answer's last sequence number once it has ended, else None."""
    last_name: str = ""
    """The newest event's name (a ``final`` or ``error`` there: the answer has ended, even before ``done``)."""

    @property
    def ended_at(self) -> int | None:
        """The answer's last sequence number if it is known to have ended."""
        return self.last if self.last_name in ("final", "error") else self.done


class ReplayLog(Protocol):
    async def open(self, stream_id: str, owner: str, ttl_s: float) -> None:
        """Start a log for ``owner``'s answer, kept at least ``ttl_s`` (while it is produced)."""
        ...

    async def append(self, stream_id: str, events: Sequence[Logged]) -> None:
        """Add events in sequence order; those already logged (a retried write) are skipped."""
        ...

    async def finish(self, stream_id: str, last: int, ttl_s: float) -> None:
        """Mark the answer ended at ``last``; its events stay readable for ``ttl_s``."""
        ...

    async def lookup(self, stream_id: str) -> LogInfo | None: ...

    async def read(self, stream_id: str, after: int, wait_s: float) -> list[Logged]:
        """Events after ``after``, waiting up to ``wait_s`` for one when there are none yet."""
        ...

    async def mark_reading(self, stream_id: str, for_s: float) -> None:
        """Say that a reader on some replica follows the answer (for the next ``for_s``)."""
        ...

    async def being_read(self, stream_id: str) -> bool: ...


class Slots(Protocol):
    async def acquire(self, owner: str, stream_id: str, cap: int) -> bool:
        """Take one of ``owner``'s ``cap`` slots for ``stream_id``; False when all are taken."""
        ...

    async def renew(self, owner: str, stream_ids: Sequence[str]) -> None:
        """Keep these slots held (a lease that is not renewed lapses: its replica died)."""
        ...

    async def release(self, owner: str, stream_id: str) -> None: ...

    async def held(self, owner: str) -> int: ...


class TokenBuckets(Protocol):
    async def take(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0 when taken, else the seconds until one is there."""
        ...


class SeenIds(Protocol):
    async def first_time(self, message_id: str) -> bool: ...


class SenderLimits(Protocol):
    async def check(self, sender: str) -> Verdict:
        """'ok', 'limited' (over the limit: say so once in the window) or 'quiet' (already told: say nothing)."""
        ...


class VersionChannel(Protocol):
    async def publish(self, version: str) -> None: ...

    def listen(self) -> AsyncIterator[str]:
        """Versions published from now on, by any process, until cancelled."""
        ...


# ---------------------------------------------------------------------------------------------------------- memory


@dataclass(slots=True)
class _MemoryLog:
    owner: str
    events: deque[Logged]
    done: int | None = None
    expires_at: float = math.inf
    signal: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryReplayLog:
    """Logs in this process: the reference the contract tests hold the Redis log to. One replica needs no copy (the
    hub resumes each answer from its own buffer), so the app leaves ``SharedState.replay`` empty in memory."""

    def __init__(self, max_events: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_events, self.clock = max_events, clock
        self._logs: dict[str, _MemoryLog] = {}
        self._reading: dict[str, float] = {}

    def _get(self, stream_id: str) -> _MemoryLog | None:
        entry = self._logs.get(stream_id)
        if entry is not None and entry.expires_at <= self.clock():
            del self._logs[stream_id]
            return None
        return entry

    async def open(self, stream_id: str, owner: str, ttl_s: float) -> None:
        for key in [k for k, v in self._logs.items() if v.expires_at <= self.clock()]:
            del self._logs[key]
        self._logs[stream_id] = _MemoryLog(owner, deque(maxlen=self.max_events), expires_at=self.clock() + ttl_s)

    async def append(self, stream_id: str, events: Sequence[Logged]) -> None:
        entry = self._get(stream_id)
        if entry is None:
            return
        last = entry.events[-1].seq if entry.events else 0
        entry.events.extend(e for e in events if e.seq > last)
        entry.signal.set()
        entry.signal = asyncio.Event()

    async def finish(self, stream_id: str, last: int, ttl_s: float) -> None:
        entry = self._get(stream_id)
        if entry is not None:
            entry.done, entry.expires_at = last, self.clock() + ttl_s
            entry.signal.set()
            entry.signal = asyncio.Event()

    async def lookup(self, stream_id: str) -> LogInfo | None:
        entry = self._get(stream_id)
        if entry is None:
            return None
        last = entry.events[-1].seq if entry.events else 0
        name = entry.events[-1].name if entry.events else ""
        return LogInfo(entry.owner, entry.events[0].seq if entry.events else last + 1, last, entry.done, name)

    async def read(self, stream_id: str, after: int, wait_s: float) -> list[Logged]:
        entry = self._get(stream_id)
        if entry is None:
            return []
        found = [e for e in entry.events if e.seq > after]
        if found or entry.done is not None:
            return found
        signal = entry.signal
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(signal.wait(), wait_s)
        return [e for e in entry.events if e.seq > after]

    async def mark_reading(self, stream_id: str, for_s: float) -> None:
        self._reading[stream_id] = self.clock() + for_s

    async def being_read(self, stream_id: str) -> bool:
        return self._reading.get(stream_id, 0.0) > self.clock()


class MemorySlots:
    """Slots counted in this process: its answers cannot outlive it, so there is no lease to lapse."""

    def __init__(self) -> None:
        self._held: Counter[str] = Counter()
        self._ids: set[tuple[str, str]] = set()

    async def acquire(self, owner: str, stream_id: str, cap: int) -> bool:
        if self._held[owner] >= cap:
            return False
        self._held[owner] += 1
        self._ids.add((owner, stream_id))
        return True

    async def renew(self, owner: str, stream_ids: Sequence[str]) -> None:
        return None

    async def release(self, owner: str, stream_id: str) -> None:
        if (owner, stream_id) in self._ids:
            self._ids.discard((owner, stream_id))
            self._held[owner] -= 1
            if not self._held[owner]:
                del self._held[owner]

    async def held(self, owner: str) -> int:
        return self._held[owner]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class MemoryTokenBuckets:
    """``burst`` requests at once, refilled at ``per_minute``; an LRU of ``tracked`` callers (a bucket untouched
    long enough to refill completely is as good as forgotten)."""

    def __init__(self, per_minute: float, burst: int, tracked: int, clock: Callable[[], float] = time.monotonic):
        self.rate_s, self.burst, self.tracked, self.clock = per_minute / 60.0, float(burst), tracked, clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    async def take(self, key: str) -> float:
        return self.take_now(key)

    def take_now(self, key: str) -> float:
        """``take`` without awaiting: the same bucket, for limits checked in synchronous code."""
        if not self.rate_s:
            return 0.0
        now = self.clock()
        bucket = self._buckets.pop(key, None) or _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate_s)
        bucket.at = now
        self._buckets[key] = bucket
        if len(self._buckets) > self.tracked:
            self._buckets.popitem(last=False)
        if bucket.tokens < 1.0:
            return (1.0 - bucket.tokens) / self.rate_s
        bucket.tokens -= 1.0
        return 0.0


class MemorySeenIds:
    """The most recent ``bound`` message ids accepted."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._ids: OrderedDict[str, None] = OrderedDict()

    async def first_time(self, message_id: str) -> bool:
        if message_id in self._ids:
            self._ids.move_to_end(message_id)
            return False
        self._ids[message_id] = None
        if len(self._ids) > self.bound:
            self._ids.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._ids)


class MemorySenderLimits:
    """At most ``limit`` questions per sender in any ``window_s``; the first refusal in a window is told so."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._times: dict[str, deque[float]] = {}
        self._told: dict[str, float] = {}

    async def check(self, sender: str) -> Verdict:
        now = self.clock()
        times = self._times.setdefault(sender, deque())
        while times and now - times[0] >= self.window_s:
            times.popleft()
        if len(self._times) > 10_000:  # forget senders that have gone quiet
            for key in [k for k, v in self._times.items() if not v and k != sender]:
                del self._times[key]
                self._told.pop(key, None)
        if len(times) < self.limit:
            times.append(now)
            return "ok"
        if now - self._told.get(sender, -self.window_s) >= self.window_s:
            self._told[sender] = now
            return "limited"
        return "quiet"


class MemoryVersionChannel:
    """Nothing to hear in one process: the replica that ingests is the one that serves."""

    async def publish(self, version: str) -> None:
        return None

    async def listen(self) -> AsyncIterator[str]:
        await asyncio.Event().wait()
        yield ""  # pragma: no cover - never reached; makes this an async generator


# ----------------------------------------------------------------------------------------------------------- redis

_NOW_MS = "local now = redis.call('TIME'); local t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)\n"

_APPEND = """
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last = 0
if top[1] then last = tonumber(string.match(top[1][1], '^(%d+)')) end
for i = 3, #ARGV, 3 do
  local seq = tonumber(ARGV[i])
  if seq > last then
    redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], seq .. '-0', 'n', ARGV[i + 1], 'd', ARGV[i + 2])
    last = seq
  end
end
local ttl = redis.call('PTTL', KEYS[2])
if ttl <= 0 then ttl = tonumber(ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ttl)
return last
"""

_ACQUIRE = (
    _NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], t + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
)

_RENEW = (
    _NOW_MS
    + """
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', t + tonumber(ARGV[1]), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""
)

_HELD = _NOW_MS + "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)\nreturn redis.call('ZCARD', KEYS[1])\n"

_TAKE = (
    _NOW_MS
    + """
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or burst
local at = tonumber(b[2]) or t
tokens = math.min(burst, tokens + math.max(0, t - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', t)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate) + 1000)
return tostring(wait / 1000)
"""
)

_SENDER = (
    _NOW_MS
    + """
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], t, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 'ok'
end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', window) then return 'limited' end
return 'quiet'
"""
)


class RedisState:
    """One Redis for everything shared: two connection pools (quick calls, and blocking reads that may wait up to
    BLOCK_S) and the key prefix."""

    def __init__(self, cfg: StateSettings) -> None:
        self.cfg = cfg
        self.prefix = cfg.prefix
        url = cfg.url.get_secret_value()
        common: dict[str, Any] = {"socket_connect_timeout": cfg.connect_timeout_s, "decode_responses": True}
        self.client: aioredis.Redis = aioredis.Redis.from_url(url, socket_timeout=cfg.timeout_s, **common)
        self.blocking: aioredis.Redis = aioredis.Redis.from_url(url, socket_timeout=cfg.timeout_s + BLOCK_S, **common)

    async def call(self, what: str, work: Awaitable[T]) -> T:
        """Await one Redis call; a failure or a slow answer becomes StateUnavailableError (never Redis's words)."""
        try:
            return await asyncio.wait_for(work, self.cfg.timeout_s + BLOCK_S)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("redis: %s failed (%s)", what, type(exc).__name__)
            raise StateUnavailableError("shared state is unavailable right now; try again shortly") from None

    async def ping(self) -> None:
        """Fail at boot, naming the setting, when the configured Redis cannot be reached."""
        try:
            await asyncio.wait_for(self.client.ping(), self.cfg.connect_timeout_s + self.cfg.timeout_s)
        except (RedisError, OSError, TimeoutError) as exc:
            raise ConfigError(
                f"state.backend=redis but Redis at GWETA_STATE__URL cannot be reached ({type(exc).__name__}); "
                "check the URL and that the server runs"
            ) from None

    async def close(self) -> None:
        for client in (self.client, self.blocking):
            with contextlib.suppress(Exception):
                await client.aclose()


class RedisReplayLog:
    """Each answer is a Redis Stream ``<prefix>stream:<id>`` of entries ``<seq>-0`` {n: event name, d: JSON}, capped
    at ``max_events``, beside a hash ``...:meta`` {owner, done}; both expire. Readers block on XREAD."""

    def __init__(self, state: RedisState, max_events: int) -> None:
        self.state, self.max_events = state, max_events
        self.fallback_ttl_ms = 3_600_000  # a log whose meta was lost (Redis restarted) still expires
        self._append = state.client.register_script(_APPEND)

    def _keys(self, stream_id: str) -> tuple[str, str]:
        base = f"{self.state.prefix}stream:{stream_id}"
        return base, f"{base}:meta"

    async def open(self, stream_id: str, owner: str, ttl_s: float) -> None:
        _, meta = self._keys(stream_id)
        pipe = self.state.client.pipeline(transaction=True)
        pipe.hset(meta, mapping={"owner": owner})
        pipe.pexpire(meta, int(ttl_s * 1000))
        await self.state.call("open a replay log", pipe.execute())

    async def append(self, stream_id: str, events: Sequence[Logged]) -> None:
        if not events:
            return
        key, meta = self._keys(stream_id)
        args: list[str | int] = [self.max_events, self.fallback_ttl_ms]
        for event in events:
            args += [event.seq, event.name, event.data]
        await self.state.call("append to a replay log", self._append(keys=[key, meta], args=args))

    async def finish(self, stream_id: str, last: int, ttl_s: float) -> None:
        key, meta = self._keys(stream_id)
        pipe = self.state.client.pipeline(transaction=True)
        pipe.hset(meta, "done", last)
        pipe.pexpire(meta, int(ttl_s * 1000))
        pipe.pexpire(key, int(ttl_s * 1000))
        await self.state.call("finish a replay log", pipe.execute())

    async def lookup(self, stream_id: str) -> LogInfo | None:
        key, meta = self._keys(stream_id)
        pipe = self.state.client.pipeline(transaction=False)
        pipe.hgetall(meta)
        pipe.xrange(key, "-", "+", count=1)
        pipe.xrevrange(key, "+", "-", count=1)
        fields, oldest, newest = await self.state.call("look up a replay log", pipe.execute())
        if not fields or "owner" not in fields:
            return None
        last = _seq(newest[0][0]) if newest else 0
        first = _seq(oldest[0][0]) if oldest else last + 1
        done = int(fields["done"]) if "done" in fields else None
        return LogInfo(fields["owner"], first, last, done, newest[0][1]["n"] if newest else "")

    async def read(self, stream_id: str, after: int, wait_s: float) -> list[Logged]:
        key, _ = self._keys(stream_id)
        block = max(1, int(min(wait_s, BLOCK_S) * 1000))
        reply: Any = await self.state.call(
            "read a replay log", self.state.blocking.xread({key: f"{after}-0"}, count=1000, block=block)
        )
        return [Logged(_seq(entry_id), f["n"], f["d"]) for _, entries in reply or [] for entry_id, f in entries]

    async def mark_reading(self, stream_id: str, for_s: float) -> None:
        key = f"{self.state.prefix}stream:{stream_id}:reader"
        await self.state.call("mark a reader", self.state.client.set(key, "1", px=max(1, int(for_s * 1000))))

    async def being_read(self, stream_id: str) -> bool:
        key = f"{self.state.prefix}stream:{stream_id}:reader"
        return bool(await self.state.call("look for a reader", self.state.client.exists(key)))


def _seq(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


class RedisSlots:
    """``<prefix>slots:<owner>``: a sorted set of stream ids scored by when their lease lapses (Redis time, ms)."""

    def __init__(self, state: RedisState, lease_s: float) -> None:
        self.state, self.lease_ms = state, int(lease_s * 1000)
        self._acquire = state.client.register_script(_ACQUIRE)
        self._renew = state.client.register_script(_RENEW)
        self._held = state.client.register_script(_HELD)

    def _key(self, owner: str) -> str:
        return f"{self.state.prefix}slots:{owner}"

    async def acquire(self, owner: str, stream_id: str, cap: int) -> bool:
        args: list[str | int] = [cap, stream_id, self.lease_ms]
        return bool(await self.state.call("take a stream slot", self._acquire(keys=[self._key(owner)], args=args)))

    async def renew(self, owner: str, stream_ids: Sequence[str]) -> None:
        if stream_ids:
            args: list[str | int] = [self.lease_ms, *stream_ids]
            await self.state.call("renew stream slots", self._renew(keys=[self._key(owner)], args=args))

    async def release(self, owner: str, stream_id: str) -> None:
        await self.state.call("free a stream slot", self.state.client.zrem(self._key(owner), stream_id))

    async def held(self, owner: str) -> int:
        return int(await self.state.call("count stream slots", self._held(keys=[self._key(owner)], args=[])))


class RedisTokenBuckets:
    """``<prefix>rate:<key>``: a hash {tokens, at} updated by one script, expiring once it would be full again."""

    def __init__(self, state: RedisState, per_minute: float, burst: int) -> None:
        self.state, self.rate_ms, self.burst = state, per_minute / 60_000.0, burst
        self._take = state.client.register_script(_TAKE)

    async def take(self, key: str) -> float:
        if not self.rate_ms:
            return 0.0
        args: list[str | int] = [self.burst, repr(self.rate_ms)]
        wait = await self.state.call(
            "take a request token", self._take(keys=[f"{self.state.prefix}rate:{key}"], args=args)
        )
        return float(wait)


class RedisSeenIds:
    """``<prefix>wa:seen:<id>`` set with NX, expiring after ``ttl_s``."""

    def __init__(self, state: RedisState, ttl_s: float) -> None:
        self.state, self.ttl_ms = state, int(ttl_s * 1000)

    async def first_time(self, message_id: str) -> bool:
        key = f"{self.state.prefix}wa:seen:{message_id}"
        return bool(
            await self.state.call("check a message id", self.state.client.set(key, "1", nx=True, px=self.ttl_ms))
        )


class RedisSenderLimits:
    """``<prefix>wa:rate:<sender>``: a sorted set of question times; ``...:told`` marks a refusal already sent."""

    def __init__(self, state: RedisState, limit: int, window_s: float) -> None:
        self.state, self.limit, self.window_ms = state, limit, int(window_s * 1000)
        self._check = state.client.register_script(_SENDER)

    async def check(self, sender: str) -> Verdict:
        key = f"{self.state.prefix}wa:rate:{sender}"
        args: list[str | int] = [self.limit, self.window_ms, uuid.uuid4().hex]
        verdict = await self.state.call("check a sender's rate", self._check(keys=[key, f"{key}:told"], args=args))
        return "ok" if verdict == "ok" else "limited" if verdict == "limited" else "quiet"


class RedisVersionChannel:
    """Pub/sub on ``<prefix>corpus``: one message per ingestion, carrying its corpus version."""

    def __init__(self, state: RedisState) -> None:
        self.state = state
        self.channel = f"{state.prefix}corpus"

    async def publish(self, version: str) -> None:
        await self.state.call("announce a corpus version", self.state.client.publish(self.channel, version))

    async def listen(self) -> AsyncIterator[str]:
        pubsub = self.state.blocking.pubsub(ignore_subscribe_messages=True)
        try:
            await self.state.call("subscribe to corpus versions", pubsub.subscribe(self.channel))
            while True:
                message = await self.state.call("hear corpus versions", pubsub.get_message(timeout=BLOCK_S))
                if message is not None and message.get("type") == "message":
                    yield str(message["data"])
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]


# ----------------------------------------------------------------------------------------------------------- build


@dataclass(slots=True)
class SharedState:
    """Everything kept between requests, for the app's lifespan."""

    cfg: StateSettings
    replay: ReplayLog | None
    """None in memory: each answer is resumed from its own process's buffer (api.streams)."""
    slots: Slots
    rates: TokenBuckets
    seen: SeenIds
    senders: SenderLimits
    versions: VersionChannel
    redis: RedisState | None = None

    @property
    def shared(self) -> bool:
        return self.redis is not None

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.close()


@dataclass(frozen=True, slots=True)
class StateLimits:
    """The limits the shared things enforce, gathered from their settings sections."""

    replay_events: int
    requests_per_minute: float
    burst: int
    tracked_callers: int
    whatsapp_limit: int
    whatsapp_window_s: float
    whatsapp_seen_ids: int


def build_shared_state(cfg: StateSettings, limits: StateLimits) -> SharedState:
    """The in-process state, or Redis-backed state (not yet connected: see ``open_shared_state``)."""
    match cfg.backend:
        case "memory":
            return SharedState(
                cfg, None, MemorySlots(),
                MemoryTokenBuckets(limits.requests_per_minute, limits.burst, limits.tracked_callers),
                MemorySeenIds(limits.whatsapp_seen_ids),
                MemorySenderLimits(limits.whatsapp_limit, limits.whatsapp_window_s), MemoryVersionChannel(),
            )  # fmt: skip
        case "redis":
            redis = RedisState(cfg)
            return SharedState(
                cfg, RedisReplayLog(redis, limits.replay_events), RedisSlots(redis, cfg.lease_s),
                RedisTokenBuckets(redis, limits.requests_per_minute, limits.burst),
                RedisSeenIds(redis, cfg.seen_ttl_s),
                RedisSenderLimits(redis, limits.whatsapp_limit, limits.whatsapp_window_s), RedisVersionChannel(redis),
                redis,
            )  # fmt: skip


async def open_shared_state(cfg: StateSettings, limits: StateLimits) -> SharedState:
    """Build the state and, for Redis, check it answers (a ConfigError naming GWETA_STATE__URL if not)."""
    state = build_shared_state(cfg, limits)
    if state.redis is not None:
        try:
            await state.redis.ping()
        except ConfigError:
            await state.close()
            raise
    return state


async def check_shared_state(cfg: StateSettings) -> None:
    """Raise ConfigError naming GWETA_STATE__URL when Redis is configured but cannot be reached."""
    if cfg.backend == "redis":
        redis = RedisState(cfg)
        try:
            await redis.ping()
        finally:
            await redis.close()


async def announce_corpus_version(cfg: StateSettings, version: str) -> None:
    """Tell every serving replica that ``version`` is stored (they also find it by polling, should this fail)."""
    if cfg.backend != "redis":
        return
    redis = RedisState(cfg)
    try:
        await RedisVersionChannel(redis).publish(version)
        log.info("corpus %s announced to the replicas", version)
    except StateUnavailableError:
        log.warning("could not announce corpus %s; replicas will find it when they next poll", version)
    finally:
        await redis.close()
