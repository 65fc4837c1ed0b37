"""BM25 backends on the same corpus: build time, query latency, memory, and ranking parity.

Usage: python benchmarks/bm25_backends.py --data-dir D [--synthetic 100000] [--out results/bm25_backends.md]
Reads the lexical artifact (chunk ids and tokens) of an ingested data dir, adds a synthetic corpus of the given size
(chunks resampled from the real vocabulary), and queries both with the shared question sets' texts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from report import publish, shared_questions

from api.settings import BM25Settings
from api.tools.bm25 import BACKENDS, BM25_KEY


def synthetic(tokens: list[list[str]], size: int, seed: int = 7) -> list[list[str]]:
    rng = random.Random(seed)
    vocabulary = [t for doc in tokens for t in doc]
    lengths = [len(doc) for doc in tokens]
    return [rng.choices(vocabulary, k=rng.choice(lengths)) for _ in range(size)]


def measure(name: str, ids: list[str], tokens: list[list[str]], qs: list[str]) -> tuple[dict[str, float], list]:
    tracemalloc.start()
    start = time.perf_counter()
    index = BACKENDS[name](ids, tokens, BM25Settings(backend=name))  # type: ignore[arg-type]
    build_s = time.perf_counter() - start
    memory = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    times, rankings = [], []
    for q in qs:
        start = time.perf_counter()
        hits = index._search(q, 10)
        times.append((time.perf_counter() - start) * 1000)
        rankings.append([h.chunk_id for h in hits])
    times.sort()
    row = {"build_s": build_s, "memory_mib": memory, "p50_ms": statistics.median(times),
           "p95_ms": times[int(0.95 * (len(times) - 1))]}  # fmt: skip
    return row, rankings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--synthetic", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    artifact = json.loads((args.data_dir / "objects" / BM25_KEY).read_text())
    ids, tokens = artifact["chunk_ids"], artifact["tokens"]
    qs = shared_questions(165)
    corpora = {f"ingested ({len(ids)} chunks)": (ids, tokens)}
    if args.synthetic:
        fake = synthetic(tokens, args.synthetic)
        corpora[f"synthetic ({args.synthetic} chunks)"] = ([f"syn-{i}" for i in range(len(fake))], fake)
    lines = ["# BM25 backends", "", f"- {len(qs)} queries (zim_qa + first 165 ObliQA questions), top 10, one thread",
             "- memory: Python allocations while building (tracemalloc); parity: mean overlap of the two top-10 sets",
             "", "| corpus | backend | build s | memory MiB | query P50 ms | query P95 ms | top-10 overlap |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for label, (cids, ctokens) in corpora.items():
        reference = None
        for name in ("rank_bm25", "bm25s"):
            row, rankings = measure(name, cids, ctokens, qs)
            if reference is None:
                reference = rankings
            overlap = statistics.mean(
                len(set(a) & set(b)) / max(1, len(a), len(b)) for a, b in zip(reference, rankings, strict=True)
            )
            lines.append(f"| {label} | {name} | {row['build_s']:.2f} | {row['memory_mib']:.0f} | "
                         f"{row['p50_ms']:.2f} | {row['p95_ms']:.2f} | {overlap:.3f} |")  # fmt: skip
            print(lines[-1], flush=True)
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
