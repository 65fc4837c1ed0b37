"""BM25 backends on the same corpus: build time, query latency, memory, and ranking parity.

Usage: python benchmarks/bm25_backends.py --data-dir D [--synthetic 100000] [--out results/bm25_backends.md]
       python benchmarks/bm25_backends.py --data-dir D --scale 250000,500000,1000000 [--out results/bm25_scale.md]
Reads the lexical artifact (chunk ids and tokens) of an ingested data dir, adds a synthetic corpus of the given size
(chunks resampled from the real vocabulary), and queries both with the shared question sets' texts.

``--scale`` measures bm25s alone at each size, each in a fresh process (so one size's memory does not carry into
the next): the build time, the process's resident memory before the build (the token lists the service holds) and
its peak during build and queries (VmHWM), and query P50/P95. No tracemalloc there: it slows the build it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import sys
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from report import publish, shared_questions

from api.settings import BM25Settings
from api.tools.bm25 import BACKENDS, read_lexical_artifact
from api.tools.object_store import LocalObjectStore


def ingested(data_dir: Path) -> tuple[list[str], list[list[str]]]:
    """The chunk ids and token lists of an ingested data dir's lexical artifact."""
    opened = asyncio.run(read_lexical_artifact(LocalObjectStore(data_dir / "objects")))
    assert opened is not None, f"{data_dir} has no lexical artifact"
    return opened[0], list(opened[1])


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


def status_mib(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS now, VmHWM its peak), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def scale_child(data_dir: Path, size: int, qs: list[str], via_artifact: bool) -> dict[str, float]:
    """One size in a fresh (spawned) process: resample, build bm25s, query; what it took. ``via_artifact`` first
    round-trips the chunks through the JSON artifact, as a replica loads them (every token its own string then)."""
    _, source = ingested(data_dir)
    start = time.perf_counter()
    fake = synthetic(source, size)
    del source
    generate_s = time.perf_counter() - start
    ids = [f"syn-{i}" for i in range(size)]
    artifact_mib = parse_s = 0.0
    if via_artifact:
        text = json.dumps({"version": 1, "chunk_ids": ids, "tokens": fake}).encode()
        del fake, ids
        artifact_mib = len(text) / 2**20
        start = time.perf_counter()
        loaded = json.loads(text)
        parse_s = time.perf_counter() - start
        del text
        ids, fake = loaded["chunk_ids"], loaded["tokens"]
        del loaded
    before = status_mib("VmRSS")
    start = time.perf_counter()
    index = BACKENDS["bm25s"](ids, fake, BM25Settings(backend="bm25s"))
    build_s = time.perf_counter() - start
    after_build = status_mib("VmRSS")
    times = []
    for q in qs[:20]:
        index._search(q, 10)
    for q in qs:
        start = time.perf_counter()
        index._search(q, 10)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"tokens": sum(map(len, fake)), "generate_s": generate_s, "artifact_mib": artifact_mib,
            "parse_s": parse_s, "build_s": build_s, "rss_before": before,
            "rss_after": after_build, "peak": status_mib("VmHWM"), "p50_ms": statistics.median(times),
            "p95_ms": times[int(0.95 * (len(times) - 1))], "max_ms": times[-1]}  # fmt: skip


def scale(data_dir: Path, sizes: list[int], qs: list[str], paths: list[str]) -> list[str]:
    load = os.getloadavg()
    _, source = ingested(data_dir)
    n_tokens, vocabulary = sum(map(len, source)), len({t for doc in source for t in doc})
    command = " ".join(["python", "benchmarks/bm25_backends.py", *sys.argv[1:]])
    lines = ["# BM25 (bm25s) at scale", "",
             f"- `{command}` ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC); {os.cpu_count()} cores, load "
             f"average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the start (a shared machine: upper bounds)",
             f"- source: `{data_dir}`, {len(source):,} chunks, {vocabulary:,} distinct tokens, "
             f"{n_tokens / max(1, len(source)):.1f} tokens a chunk",
             "- synthetic chunks resampled from the ingested corpus's tokens and chunk lengths (`synthetic()`), "
             f"{len(qs)} queries (zim_qa + first 165 ObliQA questions), top 10, one thread, 20 warm-up queries",
             "- each row in a fresh process. Tokens `shared`: the resampled lists point at the corpus's own strings; "
             "`artifact`: they went through the JSON artifact first (written, then parsed, as a replica loads it), "
             "so every token is its own string, as in the service",
             "- RSS before build = the interpreter and the token lists; peak = VmHWM over everything (for "
             "`artifact`, the parse with the JSON text still held, as the object store hands it over)", "",
             "| chunks | tokens | tokens as | artifact MiB | parse s | build s | RSS before build MiB "
             "| RSS after build MiB | peak RSS MiB | query P50 ms | query P95 ms | max ms |",
             "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    print("\n".join(lines), flush=True)
    spawn = multiprocessing.get_context("spawn")
    for size in sizes:
        for path in paths:
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:  # a fresh interpreter: its own peak
                r = pool.submit(scale_child, data_dir, size, qs, path == "artifact").result()
            lines.append(f"| {size:,} | {r['tokens']:,.0f} | {path} | {r['artifact_mib']:,.0f} | {r['parse_s']:.1f} "
                         f"| {r['build_s']:.1f} | {r['rss_before']:,.0f} | {r['rss_after']:,.0f} | {r['peak']:,.0f} "
                         f"| {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['max_ms']:.2f} |")  # fmt: skip
            print(lines[-1], flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--synthetic", type=int, default=100_000)
    parser.add_argument("--scale", default="", help="comma-separated sizes: bm25s alone, one process per size")
    parser.add_argument("--scale-paths", default="shared,artifact", help="how --scale holds tokens (see above)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.scale:
        sizes, paths = [int(s) for s in args.scale.split(",")], args.scale_paths.split(",")
        publish(scale(args.data_dir, sizes, shared_questions(165), paths), args.out)
        return 0
    ids, tokens = ingested(args.data_dir)
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
