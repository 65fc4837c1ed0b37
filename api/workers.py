"""Answers computed in worker processes, so one instance uses every core it has.

One Python process runs one event loop under one GIL: over the 385 Zimbabwe Acts it answers at most about one core's
worth of questions however many cores the machine has (``benchmarks/results/load_diagnosis.md``). With
``Settings.graph_workers`` > 0 the serving process keeps everything a client talks to (HTTP, the SSE replay buffers
that resumed streams read, admission, per-caller limits, WhatsApp's duplicate filter), and each question's graph runs
in one of that many worker processes, the one with the fewest answers in progress::

    serving process                                         worker process (python -m api.workers FD), each
    ─────────────────                                       ───────────────────────────────────────────────
    router ─► StreamHub ─► GraphWorkers.stream ── ask ──►   open_services(settings): corpus, BM25, embedder,
                                  ▲                         vectors, checkpointer, audit ─► QueryOrchestrator
                                  └──── events, end ─────   .stream(request, caller)
                        cancel (the reader left) ─────────►   the answer's task is cancelled

Each worker talks to the serving process over one socket pair: a frame is a 4-byte length and a pickle (both ends
are this program, started by it; nothing else can reach the socket). A worker loads the same settings the serving
process was given. Milvus Lite allows one process per data directory, so the serving process opens it and the
workers connect to the engine it hosts on loopback (and keep their own in-memory exact index when that is on).
Sessions are shared through the checkpointer (SQLite allows several processes; Firestore in production).

A worker that dies ends its answers in progress with an ``error`` event and is started again; the serving process
never waits on a worker that is not ready (a question then waits for one, up to ``worker_start_timeout_s``). When
the serving process goes, its workers see their socket close and exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import os
import pickle
import signal
import socket
import struct
import sys
import time
from collections import Counter
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from api.auth import LOCAL, Caller
from api.errors import BackendError
from api.schemas.events import ErrorEvent, StreamEvent
from api.schemas.query import QueryRequest
from api.settings import Settings
from api.tools.embeddings import core_share

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!I")
_END = object()
"""Put on an answer's queue when its worker says it is done."""
_LOST = object()
"""Put on an answer's queue when its worker died, or its answer failed there, before it ended."""
LOST_WORKER = ErrorEvent(code="internal_error", message="Something went wrong on our side.")
NO_WORKER = ErrorEvent(code="unavailable", message="The service is starting or restarting; please ask again shortly.")
LATE = ErrorEvent(code="deadline_exceeded", message="The question ran out of time; please ask again.")
_THREAD_POOLS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
RESTART_DELAY_S = (1.0, 30.0)
"""Pause before a dead worker is started again, doubling from the first figure to the second while it keeps dying
within a minute of its start (a broken worker is not reloaded in a tight loop)."""
EXIT_GRACE_S = 5.0
"""A worker whose socket has closed is stopped if it has not exited this long after."""
HUNG_GRACE_S = 5.0
"""A worker that has not ended an answer this long after the question's deadline (which the worker keeps itself)
is taken for hung and stopped."""


def frame(message: Any) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message, or None at the end of the stream."""
    try:
        header = await reader.readexactly(_HEADER.size)
        return pickle.loads(await reader.readexactly(_HEADER.unpack(header)[0]))  # noqa: S301 (our own process)
    except asyncio.IncompleteReadError:
        return None


@dataclass(eq=False)
class _Worker:
    number: int
    process: asyncio.subprocess.Process
    writer: asyncio.StreamWriter
    reader: asyncio.StreamReader
    started_at: float
    answers: dict[int, asyncio.Queue[Any]] = field(default_factory=dict)
    ready: bool = False
    alive: bool = True

    def send(self, message: Any) -> None:
        if self.alive and not self.writer.is_closing():
            self.writer.write(frame(message))

    def kill(self) -> None:
        self.ready = False  # no new question goes to it while its end is noticed
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()


class GraphWorkers:
    """``count`` worker processes answering questions; ``stream`` is ``QueryOrchestrator.stream``'s counterpart."""

    def __init__(self, settings: Settings, count: int) -> None:
        self.settings = settings
        self.count = count
        self._workers: dict[int, _Worker] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        """Notified when a worker becomes ready or dies."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = self._closing = False
        self._delays: dict[int, float] = {}
        self.completed: Counter[int] = Counter()
        """Answers each worker (by pid) finished."""
        self.cancelled: Counter[int] = Counter()
        """Answers each worker (by pid) stopped because their reader left."""
        self.failed: Counter[int] = Counter()
        """Answers that failed in their worker (by pid), each ended with an ``error`` event."""
        self._ends = {"completed": self.completed, "cancelled": self.cancelled, "failed": self.failed}

    async def start(self, timeout_s: float = 300.0) -> None:
        """Start every worker and wait until each has loaded its services; one that exits while loading, or is not
        ready within ``timeout_s``, fails the start (workers are restarted only once all were up)."""
        for number in range(self.count):
            await self._spawn(number)
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: all(w.ready or not w.alive for w in self._workers.values())),
                    timeout_s,
                )
        if not_ready := [w.number for w in self._workers.values() if not w.ready]:
            raise BackendError(
                f"graph worker(s) {not_ready} did not load within {timeout_s:.0f} s or exited while loading; see the "
                "log above"
            )
        self._started = True

    async def _spawn(self, number: int) -> None:
        ours, theirs = socket.socketpair()
        # The workers share the machine's cores: each model thread's numerical libraries (torch's and numpy's thread
        # pools) get its share, or their threads spin against each other's.
        share = str(core_share(self.count * self.settings.model_threads))
        env = {**{var: share for var in _THREAD_POOLS}, **os.environ}
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "api.workers", str(theirs.fileno()), pass_fds=(theirs.fileno(),), env=env
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        try:
            reader, writer = await asyncio.open_connection(sock=ours)
        except BaseException:
            ours.close()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            raise
        worker = _Worker(number, process, writer, reader, time.monotonic())
        self._workers[number] = worker
        if self._closing:  # close() began while this one was starting: it must not outlive it
            writer.close()
            worker.kill()
        worker.send(("settings", self.settings))
        task = asyncio.get_running_loop().create_task(self._listen(worker), name=f"graph-worker-{number}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _listen(self, worker: _Worker) -> None:
        """Route the worker's messages to the answers waiting for them until it exits; then start it again."""
        try:
            while (message := await read_frame(worker.reader)) is not None:
                match message:
                    case ("event", int(answer), event):
                        if (queue := worker.answers.get(answer)) is not None:
                            queue.put_nowait(event)
                    case ("end", int(answer), "completed" | "cancelled" | "failed" as how):
                        self._ends[how][worker.process.pid] += 1
                        if (queue := worker.answers.pop(answer, None)) is not None:
                            queue.put_nowait(_END if how != "failed" else _LOST)
                    case ("ready",):
                        worker.ready = True
                        log.info("graph worker %d ready (pid %d)", worker.number, worker.process.pid)
                        async with self._changed:
                            self._changed.notify_all()
        except ConnectionError as exc:
            log.error("graph worker %d: connection lost: %s", worker.number, exc)
        except Exception:
            log.exception("graph worker %d: its messages cannot be read; stopping it", worker.number)
        finally:
            worker.alive = worker.ready = False
            for queue in worker.answers.values():
                queue.put_nowait(_LOST)
            worker.answers.clear()
            worker.writer.close()
        try:
            # It exits by itself once its socket is closed: killing it at once would log our SIGKILL, not its own
            # exit code (1 for one that could not load).
            code = await asyncio.wait_for(worker.process.wait(), EXIT_GRACE_S)
        except TimeoutError:
            if not self._closing:  # close() gives the answers in progress its own time
                worker.kill()
            code = await worker.process.wait()
        async with self._changed:
            self._changed.notify_all()
        if self._closing or not self._started:
            return
        # Back off while it keeps dying soon after starting; a worker that ran a while starts again at once.
        delay = self._delays.get(worker.number, RESTART_DELAY_S[0])
        if time.monotonic() - worker.started_at > 60:
            delay = RESTART_DELAY_S[0]
        self._delays[worker.number] = min(delay * 2, RESTART_DELAY_S[1])
        log.error("graph worker %d exited (code %s); starting it again in %.0f s", worker.number, code, delay)
        await asyncio.sleep(delay)
        while not self._closing:
            try:
                await self._spawn(worker.number)
                return
            except Exception:
                log.exception("graph worker %d could not be started; trying again in %.0f s", worker.number, delay)
                await asyncio.sleep(delay)

    async def _pick(self, deadline: float) -> _Worker | None:
        """The ready worker with the fewest answers in progress, waiting for one (until ``deadline``, loop time) if
        none is ready."""

        def ready() -> list[_Worker]:
            return [w for w in self._workers.values() if w.ready]

        if not ready():
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(deadline):
                        await self._changed.wait_for(lambda: bool(ready()) or self._closing)
        return min(ready(), key=lambda w: len(w.answers), default=None)

    async def stream(self, request: QueryRequest, caller: Caller = LOCAL) -> AsyncGenerator[StreamEvent, None]:
        """The question's events as its worker produces them; leaving early cancels the answer there. Every stream
        ends: a worker that dies or fails ends it with an ``error`` event, and one that misses the question's deadline
        by ``HUNG_GRACE_S`` is stopped (and started again)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.question_deadline_s + HUNG_GRACE_S
        worker = await self._pick(min(deadline, loop.time() + self.settings.worker_start_timeout_s))
        if worker is None:
            yield NO_WORKER
            return
        answer, queue = next(self._ids), asyncio.Queue[Any]()
        worker.answers[answer] = queue
        worker.send(("ask", answer, request, caller))
        finished = False
        try:
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        event = await queue.get()
                except TimeoutError:
                    log.error("graph worker %d missed answer %d's deadline; stopping it", worker.number, answer)
                    worker.kill()
                    yield LATE
                    break
                if event is _END:
                    break
                if event is _LOST:
                    log.error("answer %d lost with graph worker %d", answer, worker.number)
                    yield LOST_WORKER
                    break
                yield event
            finished = True
        finally:
            if not finished and worker.answers.pop(answer, None) is not None:
                worker.send(("cancel", answer))

    @property
    def in_progress(self) -> int:
        """Answers sent to a worker and not yet ended."""
        return sum(len(w.answers) for w in self._workers.values())

    @property
    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers.values() if w.alive]

    async def close(self, timeout_s: float = 10.0) -> None:
        """Close every worker's socket (each then exits by itself), killing those still running after ``timeout_s``."""
        self._closing = True
        async with self._changed:
            self._changed.notify_all()
        for worker in self._workers.values():
            worker.writer.close()
        processes = [w.process for w in self._workers.values()]
        if processes:
            _, running = await asyncio.wait([asyncio.create_task(p.wait()) for p in processes], timeout=timeout_s)
            for process in processes:
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
            if running:
                await asyncio.wait(running)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for worker in self._workers.values():  # one spawned while the tasks were cancelled
            if worker.process.returncode is None:
                worker.kill()
                await worker.process.wait()


async def serve_worker(sock: socket.socket) -> None:
    """A worker's life: read the settings, load the services, answer until the serving process closes the socket."""
    from api.services import open_services

    reader, writer = await asyncio.open_connection(sock=sock)
    message = await read_frame(reader)
    if not (isinstance(message, tuple) and message[0] == "settings"):
        return
    settings: Settings = message[1]
    answering: dict[int, asyncio.Task[None]] = {}

    async def answer(number: int, request: QueryRequest, caller: Caller) -> None:
        async for event in services.orchestrator.stream(request, caller):
            writer.write(frame(("event", number, event)))
            await writer.drain()

    def ended(number: int, task: asyncio.Task[None]) -> None:
        # A done callback, so a question cancelled before its task ever ran is answered "end" too.
        answering.pop(number, None)
        failed = None if task.cancelled() else task.exception()
        if failed is not None:
            log.error("answer %d failed in its worker", number, exc_info=failed)
        how = "cancelled" if task.cancelled() else "failed" if failed is not None else "completed"
        if not writer.is_closing():
            writer.write(frame(("end", number, how)))

    async with open_services(settings, serving=True) as services:
        writer.write(frame(("ready",)))
        while (message := await read_frame(reader)) is not None:
            match message:
                case ("ask", int(number), QueryRequest() as request, Caller() as caller):
                    task = asyncio.get_running_loop().create_task(answer(number, request, caller))
                    task.add_done_callback(functools.partial(ended, number))
                    answering[number] = task
                case ("cancel", int(number)):
                    if (asked := answering.get(number)) is not None:
                        asked.cancel()
        running = list(answering.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    writer.close()


def main() -> None:
    """``python -m api.workers FD``: a graph worker on the socket FD its serving process passed it."""
    from api.observability import configure_logging

    # Ctrl-C, or a stop signal sent to the whole process group, reaches the serving process too: it lets the answers
    # in progress finish, then closes our socket, and we exit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    configure_logging("INFO")
    asyncio.run(serve_worker(socket.socket(fileno=int(sys.argv[1]))))


if __name__ == "__main__":
    main()
