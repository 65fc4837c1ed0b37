"""Resumable answer streams: every event has an id, and a client that reconnects with ``Last-Event-ID`` gets what
it missed and the rest of the answer.

An answer is produced by its own task into a bounded replay buffer; each connection only reads that buffer. When
the last reader drops, the answer keeps being produced for ``streams.resume_grace_s`` awaiting a reconnect, then
stops (and with it the upstream model call). A finished answer's events stay replayable for
``streams.replay_ttl_s``. Each buffer keeps at most ``streams.replay_events`` events and belongs to the caller who
asked; at most ``streams.max_streams`` are kept over all callers, and one caller may have
``limits.streams_per_caller`` answers in progress at once.

An event id is ``<stream id>.<sequence number>``; the first event of every connection carries ``retry:``. Every
answer ends with exactly one ``final`` or ``error`` event, also one stopped for want of a reader or at shutdown.

With shared state (``state.backend=redis``) each answer's events are also copied, as they come, into a replay log
any replica can read: a resume that reaches another replica follows that log live until the answer ends, and marks
itself as a reader so the producing replica keeps producing. The copy is written beside the answer, never in its
way: if Redis fails, the answer's own readers see nothing of it, and resuming elsewhere is refused with 503 until
the copy has caught up. The cap on answers in progress is a lease per answer in the shared state, renewed while
the answer runs, so a replica that dies frees its callers' slots when the leases lapse.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
import uuid
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from sse_starlette import ServerSentEvent

from api.errors import NotFoundError, StateUnavailableError, TooManyRequestsError
from api.schemas.events import ErrorEvent, StreamEvent
from api.settings import StateSettings, StreamSettings
from api.tools.shared_state import BLOCK_S, Logged, MemorySlots, ReplayLog, Slots

log = logging.getLogger(__name__)

EVENT_ID = re.compile(r"^([0-9a-f]{32})\.([0-9]{1,9})$")


@dataclass(slots=True)
class Stream:
    """One answer's events as they are produced, for whoever reconnects within the window."""

    id: str
    owner: str
    events: deque[tuple[int, str, str]]
    """(sequence number, event name, JSON data), oldest first; bounded, so the oldest may have been dropped."""
    next_seq: int = 1
    done: bool = False
    readers: int = 0
    expires_at: float = float("inf")
    task: asyncio.Task[None] | None = None
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    abandon: asyncio.TimerHandle | None = None
    ended: bool = False
    """A ``final`` or ``error`` event has been appended: nothing may follow it."""
    stop_reason: str = "shutdown"
    mirror: asyncio.Task[None] | None = None

    def append(self, name: str, data: str) -> None:
        self.events.append((self.next_seq, name, data))
        self.next_seq += 1
        self.ended = self.ended or name in ("final", "error")
        self._wake()

    def finish(self, expires_at: float) -> None:
        self.done, self.expires_at = True, expires_at
        self._wake()

    def _wake(self) -> None:
        self.signal.set()
        self.signal = asyncio.Event()

    @property
    def oldest_kept(self) -> int:
        return self.events[0][0] if self.events else self.next_seq


def parse_event_id(value: str) -> tuple[str, int]:
    match = EVENT_ID.match(value.strip())
    if match is None:
        raise NotFoundError("Last-Event-ID is not an event id this service sent")
    return match[1], int(match[2])


STOPPED = {
    "abandoned": "No one was reading this answer, so it was stopped; please ask again.",
    "shutdown": "The service is restarting and this answer was stopped; please ask again.",
}
"""Why an answer was stopped before it ended, as its closing ``error`` event says."""


class StreamHub:
    """Every answer in progress or recently finished, by stream id; with a replay log, any replica's answers too."""

    def __init__(
        self,
        cfg: StreamSettings,
        streams_per_caller: int,
        clock: Callable[[], float] = time.monotonic,
        *,
        slots: Slots | None = None,
        replay: ReplayLog | None = None,
        state: StateSettings | None = None,
    ) -> None:
        self.cfg = cfg
        self.streams_per_caller = streams_per_caller
        self.clock = clock
        self.slots: Slots = slots or MemorySlots()
        self.replay = replay
        self.state = state or StateSettings()
        self._streams: dict[str, Stream] = {}
        # Kept in step with _streams, so starting an answer costs the same however many are kept: answers running per
        # owner, and the finished ones in the order they finished (their replay windows end in that order too).
        self._running: Counter[str] = Counter()
        self._finished: deque[str] = deque()
        self._renewer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._streams)

    def in_progress(self, owner: str) -> int:
        """Answers this process is producing for ``owner``."""
        return self._running[owner]

    async def start(self, owner: str, events: AsyncIterator[StreamEvent]) -> Stream:
        """Begin producing an answer for ``owner`` in its own task."""
        self._sweep()
        stream_id = uuid.uuid4().hex
        if not await self._take_slot(owner, stream_id):
            raise TooManyRequestsError(
                f"{self.streams_per_caller} answers are already in progress for you; wait for one to finish",
                retry_after_s=max(1, self.cfg.retry_ms // 1000),
            )
        while len(self._streams) >= self.cfg.max_streams and self._finished:
            del self._streams[self._finished.popleft()]  # the oldest finished answers make room first
        if len(self._streams) >= self.cfg.max_streams:
            await self._free_slot(owner, stream_id)
            raise TooManyRequestsError("the service is answering as many questions as it can; try again shortly", 5)
        stream = Stream(stream_id, owner, deque(maxlen=self.cfg.replay_events))
        self._streams[stream.id] = stream
        self._running[owner] += 1
        stream.task = asyncio.create_task(self._produce(stream, events), name=f"answer-{stream.id}")
        if self.replay is not None:
            stream.mirror = asyncio.create_task(self._mirror(stream, self.replay), name=f"replay-{stream.id}")
            if self._renewer is None or self._renewer.done():
                self._renewer = asyncio.create_task(self._renew_leases(), name="stream-leases")
        return stream

    async def _take_slot(self, owner: str, stream_id: str) -> bool:
        try:
            return await self.slots.acquire(owner, stream_id, self.streams_per_caller)
        except StateUnavailableError:
            if self.state.limits_fail == "closed":
                raise
            log.warning("stream slots unavailable: answering without counting (state.limits_fail=open)")
            return True

    async def _free_slot(self, owner: str, stream_id: str) -> None:
        try:
            await self.slots.release(owner, stream_id)
        except StateUnavailableError:
            pass  # the lease lapses by itself

    async def _renew_leases(self) -> None:
        """Keep the slots of this process's running answers held; a lease not renewed lapses (lease_s)."""
        while self._running:
            await asyncio.sleep(self.state.lease_s / 3)
            running: dict[str, list[str]] = {}
            for stream in self._streams.values():
                if stream.task is not None and not stream.task.done():
                    running.setdefault(stream.owner, []).append(stream.id)
            for owner, ids in running.items():
                try:
                    await self.slots.renew(owner, ids)
                except StateUnavailableError:
                    break

    async def resume(self, owner: str, last_event_id: str) -> AsyncIterator[ServerSentEvent] | None:
        """The events after ``last_event_id``, live until the answer ends; None when there is nothing more (204)."""
        self._sweep()
        stream_id, seq = parse_event_id(last_event_id)
        stream = self._streams.get(stream_id)
        if stream is not None or self.replay is None:
            if stream is None or stream.owner != owner or seq >= stream.next_seq:
                # Someone else's stream reads as no stream at all.
                raise NotFoundError("there is no answer to resume for that Last-Event-ID (it may have expired)")
            if seq + 1 < stream.oldest_kept:
                raise NotFoundError("the events after that Last-Event-ID are no longer kept; ask again")
            if stream.done and seq >= stream.next_seq - 1:
                return None
            return self.follow(stream, seq)
        return await self._resume_elsewhere(self.replay, owner, stream_id, seq)

    async def _resume_elsewhere(
        self, replay: ReplayLog, owner: str, stream_id: str, seq: int
    ) -> AsyncIterator[ServerSentEvent] | None:
        """An answer another replica produces (or produced): checked against the replay log, then followed."""
        try:
            for _ in range(10):  # the id may be a moment ahead of the copy: wait for it briefly
                info = await replay.lookup(stream_id)
                if info is None or info.owner != owner or seq <= info.last:
                    break
                await asyncio.sleep(0.1)
        except StateUnavailableError:
            raise StateUnavailableError("this answer cannot be resumed right now; try again shortly") from None
        if info is None or info.owner != owner or seq > info.last:
            raise NotFoundError("there is no answer to resume for that Last-Event-ID (it may have expired)")
        if seq + 1 < info.first:
            raise NotFoundError("the events after that Last-Event-ID are no longer kept; ask again")
        ended = info.ended_at
        if ended is not None and seq >= ended:
            return None
        return self._follow_log(replay, stream_id, seq)

    async def follow(self, stream: Stream, after: int = 0) -> AsyncIterator[ServerSentEvent]:
        """The stream's events after sequence number ``after``, live until the answer ends."""
        stream.readers += 1
        if stream.abandon is not None:
            stream.abandon.cancel()
            stream.abandon = None
        retry: int | None = self.cfg.retry_ms
        try:
            while True:
                signal = stream.signal
                pending = [e for e in stream.events if e[0] > after]
                for seq, name, data in pending:
                    yield ServerSentEvent(data=data, event=name, id=f"{stream.id}.{seq}", retry=retry)
                    retry, after = None, seq
                if stream.done and after >= stream.next_seq - 1:
                    return
                if not pending:
                    await signal.wait()
        finally:
            stream.readers -= 1
            if not stream.readers and not stream.done:
                stream.abandon = asyncio.get_running_loop().call_later(self.cfg.resume_grace_s, self._abandon, stream)

    async def _follow_log(self, replay: ReplayLog, stream_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
        """Another replica's answer from the replay log, live until its last event. Its end is always a ``final``
        or ``error``: one the producer wrote, or one written here when the log stops (the producer died, or Redis
        stayed unavailable)."""
        retry: int | None = self.cfg.retry_ms
        now = asyncio.get_running_loop().time
        heard, marked, failing_since = now(), -math.inf, None
        while True:
            try:
                if now() - marked >= BLOCK_S:
                    await replay.mark_reading(stream_id, max(self.cfg.resume_grace_s, BLOCK_S) + 2 * BLOCK_S)
                    marked = now()
                got = await replay.read(stream_id, after, BLOCK_S)
                info = None if got else await replay.lookup(stream_id)
                failing_since = None
            except StateUnavailableError:
                failing_since = failing_since or now()
                if now() - failing_since < max(self.cfg.resume_grace_s, 5.0):
                    await asyncio.sleep(0.5)
                    continue
                yield self._closing(
                    retry, "state_unavailable", "This answer can no longer be followed; please ask again."
                )
                return
            for event in got:
                yield ServerSentEvent(data=event.data, event=event.name, id=f"{stream_id}.{event.seq}", retry=retry)
                retry, after, heard = None, event.seq, now()
                if event.name in ("final", "error"):
                    return
            if got:
                continue
            if info is None or (info.ended_at is not None and after >= info.ended_at):
                # Gone (expired, or lost with a Redis restart) or ended without a closing event the log kept.
                yield self._closing(retry, "interrupted", "This answer was interrupted; please ask again.")
                return
            if now() - heard >= self.state.stream_idle_s:
                log.warning("answer %s: nothing from its replica for %.0f s", stream_id, self.state.stream_idle_s)
                yield self._closing(retry, "interrupted", "This answer was interrupted; please ask again.")
                return

    @staticmethod
    def _closing(retry: int | None, code: str, message: str) -> ServerSentEvent:
        """A closing error event written by this reader; it has no id (there is nothing after it to resume)."""
        error = ErrorEvent(code=code, message=message)
        return ServerSentEvent(data=error.model_dump_json(exclude={"event"}), event="error", retry=retry)

    def _abandon(self, stream: Stream) -> None:
        """No reader came back within the grace period: stop producing (the model call ends with it), unless a
        reader on another replica follows it through the replay log."""
        stream.abandon = None
        if stream.readers or stream.task is None or stream.task.done():
            return
        if self.replay is None:
            self._stop(stream)
            return
        task = asyncio.create_task(self._abandon_unless_read(stream, self.replay))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _abandon_unless_read(self, stream: Stream, replay: ReplayLog) -> None:
        try:
            read = await replay.being_read(stream.id)
        except StateUnavailableError:
            read = False
        if stream.readers or stream.done:
            return
        if read:
            stream.abandon = asyncio.get_running_loop().call_later(self.cfg.resume_grace_s, self._abandon, stream)
        else:
            self._stop(stream)

    def _stop(self, stream: Stream) -> None:
        if stream.task is not None and not stream.task.done():
            log.info("answer %s abandoned: no reader for %.1f s", stream.id, self.cfg.resume_grace_s)
            stream.stop_reason = "abandoned"
            stream.task.cancel()

    async def _produce(self, stream: Stream, events: AsyncIterator[StreamEvent]) -> None:
        try:
            async for event in events:
                stream.append(event.event, event.model_dump_json(exclude={"event"}))
        except asyncio.CancelledError:
            # Stopped (no reader, or shutdown): a reader who resumes later must still see the answer end.
            if not stream.ended:
                error = ErrorEvent(code=f"answer_{stream.stop_reason}", message=STOPPED[stream.stop_reason])
                stream.append("error", error.model_dump_json(exclude={"event"}))
            raise
        except Exception:  # the orchestrator closes its own failures with an error event; this is a last resort
            log.exception("answer %s failed", stream.id)
            if not stream.ended:
                error = ErrorEvent(code="internal_error", message="Something went wrong on our side.")
                stream.append("error", error.model_dump_json(exclude={"event"}))
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
            stream.finish(self.clock() + self.cfg.replay_ttl_s)
            self._running[stream.owner] -= 1
            if not self._running[stream.owner]:
                del self._running[stream.owner]
            self._finished.append(stream.id)
            await self._free_slot(stream.owner, stream.id)

    async def _mirror(self, stream: Stream, replay: ReplayLog) -> None:
        """Copy the stream's events into the replay log as they come, in batches, until it has ended. After a
        failure everything still buffered here is written again (the log skips what it has), so a Redis that
        restarted empty gets the whole answer back."""
        live_ttl = self.cfg.replay_ttl_s + self.cfg.resume_grace_s + self.state.stream_idle_s
        sent, opened, failures = 0, False, 0
        while True:
            signal = stream.signal
            done = stream.done
            pending = [Logged(seq, name, data) for seq, name, data in stream.events if seq > sent]
            try:
                if not opened:
                    await replay.open(stream.id, stream.owner, live_ttl)
                    opened = True
                if pending:
                    await replay.append(stream.id, pending)
                    sent = pending[-1].seq
                if done:
                    await replay.finish(stream.id, stream.next_seq - 1, self.cfg.replay_ttl_s)
                    return
                failures = 0
            except StateUnavailableError:
                sent, opened, failures = 0, False, failures + 1
                if done and failures >= 5:
                    log.warning("answer %s: its replay copy could not be completed", stream.id)
                    return
                await asyncio.sleep(min(0.1 * 2**failures, 2.0))
                continue
            if not pending:
                await signal.wait()

    def _sweep(self) -> None:
        """Forget finished streams past their replay window (the oldest finished first, as their windows end)."""
        now = self.clock()
        while self._finished and self._streams[self._finished[0]].expires_at <= now:
            del self._streams[self._finished.popleft()]

    async def close(self) -> None:
        """Stop every answer still being produced (at shutdown); each ends with an error event."""
        tasks = [s.task for s in self._streams.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        mirrors = [s.mirror for s in self._streams.values() if s.mirror is not None and not s.mirror.done()]
        if mirrors:  # let the copies record how the answers ended, briefly
            _, late = await asyncio.wait(mirrors, timeout=2.0)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        for task in [t for t in (self._renewer, *self._background) if t is not None]:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._streams.clear()
        self._finished.clear()
        self._running.clear()
