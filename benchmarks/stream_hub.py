"""What starting an answer costs the serving process as its replay window fills: `StreamHub.start` plus a one-event
answer, with 100, 1,000 (the default `max_streams`) and 10,000 finished answers kept for resuming.

    .venv/bin/python benchmarks/stream_hub.py [--starts 2000] [--out benchmarks/results/stream_hub.md]

In process, no HTTP: the hub's own bookkeeping (forgetting answers whose window ended, counting a caller's answers in
progress, making room), which every new stream pays before its first event.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

from report import publish

from api.schemas.events import FinalEvent
from api.settings import StreamSettings
from api.streams import StreamHub

KEPT = (100, 1000, 10_000)
CALLERS = 500


async def one_event() -> AsyncIterator[FinalEvent]:
    yield FinalEvent(answer="x", citations=[])


async def answer(hub: StreamHub, n: int) -> None:
    stream = await hub.start(f"caller:{n % CALLERS}", one_event())
    assert stream.task is not None
    await stream.task


async def measure(kept: int, starts: int) -> float:
    """Microseconds per start and answer once ``kept`` finished answers fill the window."""
    hub = StreamHub(StreamSettings(max_streams=kept), streams_per_caller=4)
    for n in range(kept):
        await answer(hub, n)
    began = time.perf_counter()
    for n in range(starts):
        await answer(hub, n)
    spent = time.perf_counter() - began
    await hub.close()
    return 1e6 * spent / starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = ["| finished answers kept | µs per start and answer |", "| ---: | ---: |"]
    for kept in KEPT:
        lines.append(f"| {kept:,} | {asyncio.run(measure(kept, args.starts)):.0f} |")
    publish(lines, args.out)


if __name__ == "__main__":
    main()
