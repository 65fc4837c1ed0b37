"""Parse files in worker processes, a window of files ahead of the consumer, handing parses back in order.

Workers are spawned (not forked: the parent holds model threads and open stores a child must not inherit) and end
with the ingesting process even when it is killed. A worker that dies (out of memory on a hostile file, say) fails
that one file; the files queued behind it are parsed again by a fresh pool.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from api.errors import GwetaError
from api.schemas.documents import Document
from ingestion.discovery import check_size
from ingestion.limits import bound_document
from ingestion.parsers import ParseOptions, parse


@dataclass(slots=True)
class Parsed:
    """One file's parse, as a worker process hands it back (an error travels as its message)."""

    documents: list[Document] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


# A module-level function of (path, options), so that it pickles into a worker process.
ParseFile = Callable[[Path, ParseOptions], Parsed]


def parse_file(path: Path, options: ParseOptions) -> Parsed:
    """Read and parse one file, its documents within ``ingestion.limits``; a failure is returned as a message."""
    start = time.perf_counter()
    try:
        check_size(path, options.max_file_bytes)
        documents = [bound_document(d) for d in parse(path, path.read_bytes(), options)]
    except GwetaError as exc:
        return Parsed(error=exc.message, seconds=time.perf_counter() - start)
    except OSError as exc:
        return Parsed(error=f"cannot read {path.name}: {exc.strerror}", seconds=time.perf_counter() - start)
    return Parsed(documents, seconds=time.perf_counter() - start)


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: a parser process ends when the ingesting process does, even if that one was killed."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(workers, context, initializer=_exit_with_parent, initargs=(os.getpid(),))


async def parse_in_order(
    paths: list[Path], options: ParseOptions, workers: int, parse_one: ParseFile = parse_file
) -> AsyncIterator[tuple[Path, Parsed]]:
    """Parse ``paths`` with up to ``workers`` processes, ``2 * workers`` files ahead, yielding in the order given.

    With one worker (or one file) the parse runs in a thread of this process instead.
    """
    workers = min(workers, len(paths))
    if workers <= 1:
        for path in paths:
            yield path, await asyncio.to_thread(parse_one, path, options)
        return
    loop = asyncio.get_running_loop()
    pool = _pool(workers)
    pending: deque[tuple[Path, asyncio.Future[Parsed]]] = deque()
    queue = deque(paths)
    try:
        while True:
            while queue and len(pending) < 2 * workers:
                try:
                    future = loop.run_in_executor(pool, parse_one, queue[0], options)
                except BrokenProcessPool:  # a parser died since the last submit
                    if pending:
                        break  # the dead parser's file is pending: awaiting it below starts a new pool
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = _pool(workers)
                    continue
                pending.append((queue.popleft(), future))
            if not pending:
                return
            path, future = pending.popleft()
            try:
                parsed = await future
            except BrokenProcessPool:
                parsed = Parsed(error=f"the parser process died reading {path.name} (out of memory?)")
                pool.shutdown(wait=False, cancel_futures=True)
                pool = _pool(workers)
                retry = [p for p, _ in pending]
                pending.clear()
                pending.extend((p, loop.run_in_executor(pool, parse_one, p, options)) for p in retry)
            yield path, parsed
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
