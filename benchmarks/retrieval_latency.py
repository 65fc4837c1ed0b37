"""Per-stage retrieval latency (P50/P95) and memory on an ingested data dir, and on a synthetic 100k-chunk index.

Usage: python benchmarks/retrieval_latency.py --data-dir D [--synthetic 100000] [--out results/retrieval_latency.md]

Part 1 runs the real HybridRetriever (query embedding, Milvus Lite dense search and bm25s in parallel, RRF) over
the ingested corpus with the shared questions. Part 2 measures the two searches alone at a larger scale: random unit
vectors in a fresh Milvus Lite collection (there is no time to embed 100k chunks on 2 cores) and resampled tokens
for BM25, with the same query vectors and texts.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from report import percentile, publish, shared_questions

from api.schemas.documents import Chunk
from api.services import open_services
from api.settings import RetrievalSettings, Settings
from api.tools.bm25 import Bm25sIndex, read_lexical_artifact
from api.tools.object_store import LocalObjectStore
from api.tools.vector_store import MilvusVectorStore


async def real(data_dir: Path, qs: list[str]) -> tuple[dict[str, list[float]], int, list[np.ndarray]]:
    stages: dict[str, list[float]] = {}
    vectors = []
    # The result cache off: every measured search is a real one (the warm-up asks the same questions).
    settings = Settings(data_dir=data_dir, retrieval=RetrievalSettings(cache_ttl_s=0))
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        for q in qs[:5]:
            await retriever.retrieve(q)  # warm caches, let any index build settle
        for q in qs:
            start = time.perf_counter()
            result = await retriever.retrieve(q)
            stages.setdefault("total", []).append((time.perf_counter() - start) * 1000)
            for name, ms in result.timings.items():
                stages.setdefault(name, []).append(ms)
        for q in qs:
            vectors.append(await retriever.embedder.embed_query(q))
        return stages, len(services.corpus), vectors


async def synthetic(size: int, dims: int, queries: list[np.ndarray], tokens: list[list[str]],
                    texts: list[str]) -> dict[str, list[float]]:  # fmt: skip
    rng = np.random.default_rng(7)
    out: dict[str, list[float]] = {"dense": [], "bm25": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = MilvusVectorStore(str(Path(tmp) / "syn.db"), "syn", dims)
        insert_start = time.perf_counter()
        try:
            for start in range(0, size, 5000):
                n = min(5000, size - start)
                vecs = rng.normal(size=(n, dims)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                chunks = [Chunk(chunk_id=f"s{start + i}", doc_key=f"d{(start + i) // 50}", section_id="x", text="x",
                                section_number="1", section_heading="", title="", ordinal=0)
                          for i in range(n)]  # fmt: skip
                await store.upsert(chunks, vecs)
            inserted = time.perf_counter() - insert_start
            await store.flush()  # sealed segments: searched through the index, not the in-memory table
            # Milvus Lite reports its index finished while it still builds it in the background, and searches are
            # several times slower until it is: probe until the latency stops falling (at most 5 minutes).
            settle_start, previous = time.perf_counter(), float("inf")
            while time.perf_counter() - settle_start < 300:
                probe = []
                for v in queries[:10]:
                    t = time.perf_counter()
                    await store.search(v, 30)
                    probe.append(time.perf_counter() - t)
                current = statistics.median(probe)
                if current > 0.9 * previous:
                    break
                previous = current
                await asyncio.sleep(10)
            out["settle_s"] = [time.perf_counter() - settle_start]
            for v in queries:
                start_t = time.perf_counter()
                await store.search(v, 30)
                out["dense"].append((time.perf_counter() - start_t) * 1000)
            out["insert_s"] = [inserted]
        finally:
            await store.close()
    sample = random.Random(7)
    vocabulary = [t for doc in tokens for t in doc]
    fake = [sample.choices(vocabulary, k=len(tokens[i % len(tokens)])) for i in range(size)]
    index = Bm25sIndex([f"s{i}" for i in range(size)], fake, Settings().bm25)
    for text in texts:
        start_t = time.perf_counter()
        index._search(text, 30)
        out["bm25"].append((time.perf_counter() - start_t) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--synthetic", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    qs = shared_questions(65)
    stages, chunks, vectors = asyncio.run(real(args.data_dir, qs))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = ["# Retrieval latency", "",
             f"- {len(qs)} questions (zim_qa + 65 ObliQA), one at a time, 2-core machine, no reranker",
             f"- ingested corpus: {chunks} chunks; peak resident memory of the process {rss:.0f} MiB", "",
             "| stage | P50 ms | P95 ms | max ms |", "| --- | ---: | ---: | ---: |"]  # fmt: skip
    for name, values in sorted(stages.items(), key=lambda kv: kv[0] != "total"):
        lines.append(
            f"| {name} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} | {max(values):.1f} |"
        )
    if args.synthetic:
        opened = asyncio.run(read_lexical_artifact(LocalObjectStore(args.data_dir / "objects")))
        assert opened is not None, f"{args.data_dir} has no lexical artifact"
        syn = asyncio.run(synthetic(args.synthetic, vectors[0].shape[0], vectors, list(opened[1]), qs))
        lines += ["", f"Synthetic {args.synthetic} chunks (search calls alone):", "",
                  "| search | P50 ms | P95 ms |", "| --- | ---: | ---: |"]  # fmt: skip
        inserted, settled = syn.pop("insert_s")[0], syn.pop("settle_s")[0]
        for name, values in syn.items():
            lines.append(f"| {name} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} |")
        lines += [
            "",
            f"Inserting the {args.synthetic} random vectors into Milvus Lite took {inserted:.0f} s; its "
            f"background index build settled (probe latency no longer falling) {settled:.0f} s later.",
        ]
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
