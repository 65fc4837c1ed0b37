"""Milvus Lite against a real Milvus server (PyPI milvus 2.3.5): insert throughput, query P50/P95 and recall@10,
with the server's index type (FLAT, IVF_FLAT, HNSW) chosen by measurement.

Usage: python benchmarks/milvus_server.py [--sizes 38294,200000] [--queries 200] [--out results/milvus_server.md]

The server binds every interface, so the script re-runs itself inside ``unshare -n`` with loopback up and starts
the server there, beside its client. Vectors are synthetic, 384-d like the packaged model's, drawn around 500
cluster centres so that they have the clumped structure real embeddings have (uniform random vectors would flatter
no index); 38,294 is the chunk count of the Zimbabwe legislation corpus. Every insert goes through the service's own
``MilvusVectorStore.upsert`` in batches of 2,000 (the ingestion path), and every query through its ``search``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from api.schemas.documents import Chunk  # noqa: E402
from api.tools.vector_store import MilvusVectorStore, SearchFilters  # noqa: E402
from tests.milvus_server import in_private_network, milvus_server  # noqa: E402

DIM = 384
BATCH = 2000
SERVER_INDEXES: list[tuple[str, dict[str, int], dict[str, int]]] = [
    ("FLAT", {}, {}),
    ("IVF_FLAT", {"nlist": 1024}, {"nprobe": 32}),
    ("HNSW", {"M": 16, "efConstruction": 200}, {"ef": 64}),
]


def clustered(n: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    rows = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def chunks_for(n: int) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"doc{i // 40}#s{i % 40}:0",
            doc_key=f"doc{i // 40}",
            section_id=f"doc{i // 40}#s{i % 40}",
            section_number=str(i % 40),
            section_heading="",
            title="t",
            text="",
            ordinal=0,
            jurisdiction="ZW" if i % 2 else "ZA",
            doc_type="act",
        )  # fmt: skip
        for i in range(n)
    ]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def wait_for_index(store: MilvusVectorStore) -> None:
    """A server builds indexes in the background after a flush: wait until every row is indexed."""
    if store.is_lite:
        return
    name = store.client.list_indexes(store.collection)[0]
    while True:
        info: dict[str, Any] = store.client.describe_index(store.collection, name)
        if int(info.get("pending_index_rows", 0)) == 0 and int(info.get("indexed_rows", 0)) >= int(
            info.get("total_rows", 0)
        ):
            return
        await asyncio.sleep(0.5)


async def measure(
    store: MilvusVectorStore, vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray
) -> dict[str, float]:
    chunks = chunks_for(len(vectors))
    start = time.perf_counter()
    for at in range(0, len(vectors), BATCH):
        await store.upsert(chunks[at : at + BATCH], vectors[at : at + BATCH])
    inserted = time.perf_counter() - start
    await store.flush()
    await wait_for_index(store)
    await asyncio.to_thread(store.client.load_collection, store.collection)
    ready = time.perf_counter() - start
    for q in queries[:20]:
        await store.search(q, 10)
    plain, filtered, recall = [], [], []
    ids = [c.chunk_id for c in chunks]
    for q, exact in zip(queries, truth, strict=True):
        t = time.perf_counter()
        hits = await store.search(q, 10)
        plain.append((time.perf_counter() - t) * 1000)
        recall.append(len({h.chunk_id for h in hits} & {ids[i] for i in exact}) / 10)
        t = time.perf_counter()
        await store.search(q, 10, SearchFilters(jurisdiction="ZW"))
        filtered.append((time.perf_counter() - t) * 1000)
    return {
        "insert_rows_s": len(vectors) / inserted, "ready_s": ready, "p50": statistics.median(plain),
        "p95": pct(plain, 95), "p50_filtered": statistics.median(filtered), "p95_filtered": pct(filtered, 95),
        "recall": float(np.mean(recall)),
    }  # fmt: skip


async def run(sizes: list[int], n_queries: int, server_indexes: list[str], partial: Path | None = None) -> list[str]:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(500, DIM)).astype(np.float32)
    lines = [
        "| vectors | backend | index (build / search params) | insert rows/s | insert→searchable s | query P50 ms "
        "| P95 ms | filtered P50 / P95 ms | recall@10 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    with tempfile.TemporaryDirectory(prefix="milvus-bench-") as base:
        with milvus_server(Path(base) / "server") as uri:
            for n in sizes:
                vectors, queries = clustered(n, rng, centres), clustered(n_queries, rng, centres)
                truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
                configs: list[tuple[str, str, str, dict[str, int], dict[str, int]]] = [
                    ("Milvus Lite", str(Path(base) / f"lite-{n}.db"), "FLAT (Lite's own)", {}, {})
                ]
                configs += [
                    ("server", uri, name, build, search) for name, build, search in SERVER_INDEXES
                    if name in server_indexes
                ]  # fmt: skip
                for backend, where, index, build, search in configs:
                    store = await asyncio.to_thread(
                        MilvusVectorStore, where, f"bench_{n}_{index.split()[0].lower()}", DIM, "",
                        index.split()[0] if backend == "server" else "AUTOINDEX", build, search,
                    )  # fmt: skip
                    try:
                        m = await measure(store, vectors, queries, truth)
                    finally:
                        if backend == "server":
                            await asyncio.to_thread(store.client.drop_collection, store.collection)
                        await store.close()
                    params = ", ".join(f"{k}={v}" for k, v in {**build, **search}.items()) or "-"
                    line = (
                        f"| {n:,} | {backend} | {index} ({params}) | {m['insert_rows_s']:,.0f} | {m['ready_s']:.1f} "
                        f"| {m['p50']:.1f} | {m['p95']:.1f} | {m['p50_filtered']:.1f} / {m['p95_filtered']:.1f} "
                        f"| {m['recall']:.3f} |"
                    )
                    print(line, flush=True)
                    lines.append(line)
                    if partial:
                        await asyncio.to_thread(partial.write_text, "\n".join(lines) + "\n")  # kept if cut short
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="38294,200000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--indexes", default="FLAT,IVF_FLAT,HNSW")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "milvus_server.md"))
    args = parser.parse_args()
    if not in_private_network():
        inner = f"ip link set lo up && exec {shlex.quote(sys.executable)} " + " ".join(map(shlex.quote, sys.argv))
        return subprocess.run(["unshare", "-n", "sh", "-c", inner], cwd=ROOT).returncode
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.time()
    lines = asyncio.run(run(sizes, args.queries, args.indexes.split(","), Path(args.out + ".partial")))
    load = os.getloadavg()
    header = [
        "# Milvus Lite vs a Milvus server",
        "",
        f"`python benchmarks/milvus_server.py --sizes {args.sizes} --queries {args.queries}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime(started))}; {os.cpu_count()} cores, load average "
        f"{load[0]:.1f} at the end: the machine was shared, so treat absolute figures as upper bounds).",
        "",
        "Synthetic 384-d vectors around 500 centres; inserts through `MilvusVectorStore.upsert` (batches of "
        f"{BATCH:,}), {args.queries} queries through `search` (top 10), the filtered ones with "
        '`jurisdiction == "ZW"` (half the rows). Recall@10 is against exact cosine search in NumPy.',
        "",
    ]
    Path(args.out).write_text("\n".join(header + lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
