"""Resumable answer streams: every event has an id, and a client that reconnects with ``Last-Event-ID`` gets what
it missed and the rest of the answer.

An answer is produced by its own task into a bounded replay buffer; each connection only reads that buffer. When
the last reader drops, the answer keeps being produced for ``streams.resume_grace_s`` awaiting a reconnect, then
stops (and with it the upstream model call). A finished answer's events stay replayable for
``streams.replay_ttl_s``. Each buffer keeps at most ``streams.replay_events`` events and belongs to the caller who
asked; at most ``streams.max_streams`` are kept over all callers, and one caller may have
``limits.streams_per_caller`` answers in progress at once.

An event id is ``<stream id>.<sequence number>``; the first event of every connection carries ``retry:``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from sse_starlette import ServerSentEvent

from api.errors import NotFoundError, TooManyRequestsError
from api.schemas.events import ErrorEvent, StreamEvent
from api.settings import StreamSettings

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

    def append(self, name: str, data: str) -> None:
        self.events.append((self.next_seq, name, data))
        self.next_seq += 1
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


class StreamHub:
    """Every answer in progress or recently finished, by stream id."""

    def __init__(
        self, cfg: StreamSettings, streams_per_caller: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cfg = cfg
        self.streams_per_caller = streams_per_caller
        self.clock = clock
        self._streams: dict[str, Stream] = {}
        # Kept in step with _streams, so starting an answer costs the same however many are kept: answers running per
        # owner, and the finished ones in the order they finished (their replay windows end in that order too).
        self._running: Counter[str] = Counter()
        self._finished: deque[str] = deque()

    def __len__(self) -> int:
        return len(self._streams)

    def in_progress(self, owner: str) -> int:
        return self._running[owner]

    def start(self, owner: str, events: AsyncIterator[StreamEvent]) -> Stream:
        """Begin producing an answer for ``owner`` in its own task."""
        self._sweep()
        if self.in_progress(owner) >= self.streams_per_caller:
            raise TooManyRequestsError(
                f"{self.streams_per_caller} answers are already in progress for you; wait for one to finish",
                retry_after_s=max(1, self.cfg.retry_ms // 1000),
            )
        while len(self._streams) >= self.cfg.max_streams and self._finished:
            del self._streams[self._finished.popleft()]  # the oldest finished answers make room first
        if len(self._streams) >= self.cfg.max_streams:
            raise TooManyRequestsError("the service is answering as many questions as it can; try again shortly", 5)
        stream = Stream(uuid.uuid4().hex, owner, deque(maxlen=self.cfg.replay_events))
        self._streams[stream.id] = stream
        self._running[owner] += 1
        stream.task = asyncio.create_task(self._produce(stream, events), name=f"answer-{stream.id}")
        return stream

    def resume(self, owner: str, last_event_id: str) -> tuple[Stream, int]:
        """The stream an event id belongs to, and the sequence number to continue after."""
        self._sweep()
        stream_id, seq = parse_event_id(last_event_id)
        stream = self._streams.get(stream_id)
        if stream is None or stream.owner != owner or seq >= stream.next_seq:
            # Someone else's stream reads as no stream at all.
            raise NotFoundError("there is no answer to resume for that Last-Event-ID (it may have expired)")
        if seq + 1 < stream.oldest_kept:
            raise NotFoundError("the events after that Last-Event-ID are no longer kept; ask again")
        return stream, seq

    def finished_for(self, stream: Stream, after: int) -> bool:
        """Whether a reader that has seen ``after`` has nothing left to get."""
        return stream.done and after >= stream.next_seq - 1

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

    def _abandon(self, stream: Stream) -> None:
        """No reader came back within the grace period: stop producing (the model call ends with it)."""
        stream.abandon = None
        if not stream.readers and stream.task is not None and not stream.task.done():
            log.info("answer %s abandoned: no reader for %.1f s", stream.id, self.cfg.resume_grace_s)
            stream.task.cancel()

    async def _produce(self, stream: Stream, events: AsyncIterator[StreamEvent]) -> None:
        try:
            async for event in events:
                stream.append(event.event, event.model_dump_json(exclude={"event"}))
        except Exception:  # the orchestrator closes its own failures with an error event; this is a last resort
            log.exception("answer %s failed", stream.id)
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

    def _sweep(self) -> None:
        """Forget finished streams past their replay window (the oldest finished first, as their windows end)."""
        now = self.clock()
        while self._finished and self._streams[self._finished[0]].expires_at <= now:
            del self._streams[self._finished.popleft()]

    async def close(self) -> None:
        """Stop every answer still being produced (at shutdown)."""
        tasks = [s.task for s in self._streams.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._streams.clear()
        self._finished.clear()
        self._running.clear()
