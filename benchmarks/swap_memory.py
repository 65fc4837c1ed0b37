"""What a serving process keeps when a new corpus version is swapped in: its memory over several swaps, and whether the
versions it swapped out are still alive.

    .venv/bin/python benchmarks/swap_memory.py --data-dir .bench-data [--swaps 3] [--out F]

Opens the services as `gweta serve` does (``serving=True``: start-up's objects frozen out of the collector's reach)
over an ingested data dir, then makes the corpus watcher read the stored version again as if another process had
ingested, ``--swaps`` times. After each swap: the process's RSS and how many of the versions it served before are
still alive (weak references; a full collection first).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import weakref
from pathlib import Path

import psutil
from report import publish

from api.observability import configure_logging
from api.services import open_services
from api.settings import Settings


async def measure(data_dir: Path, swaps: int) -> list[str]:
    process = psutil.Process()
    lines = ["| after | seconds | earlier versions alive | RSS MiB |", "| --- | ---: | ---: | ---: |"]
    async with open_services(Settings(data_dir=data_dir, corpus_poll_s=0), serving=True) as services:
        lines.append(f"| start-up | – | – | {process.memory_info().rss / 2**20:.0f} |")
        earlier: list[weakref.ref[object]] = []
        for n in range(1, swaps + 1):
            earlier.append(weakref.ref(services.corpus))
            services.watcher.served = ""  # the stored version reads as new
            start = time.perf_counter()
            await services.watcher.check()
            seconds = time.perf_counter() - start
            gc.collect()
            alive = sum(ref() is not None for ref in earlier)
            lines.append(f"| swap {n} | {seconds:.1f} | {alive} of {n} | {process.memory_info().rss / 2**20:.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--swaps", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    configure_logging("ERROR", json_logs=False)
    lines = asyncio.run(measure(args.data_dir, args.swaps))
    publish([f"# Corpus swaps in one serving process: {args.data_dir}", "", *lines], args.out)


if __name__ == "__main__":
    main()
