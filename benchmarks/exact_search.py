"""Milvus Lite's own search against the in-memory exact index (``api.tools.vector_store.ExactIndex``).

Opens a data dir's collection through ``MilvusVectorStore``, embeds the development questions with the packaged
model, and searches each one for the retriever's candidates (30) both ways, one at a time, on one thread:

    .venv/bin/python benchmarks/exact_search.py --data-dir .bench-data --out benchmarks/results/exact_search.md

Reports time and CPU per query, how much of the exact top k Lite returns (Lite's recall), the time to build the
index from Milvus and the memory it holds. Run it on a quiet machine: both sides are timed in the same run, in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from report import SHARED, percentile, publish

from api.settings import Settings, VectorStoreSettings
from api.tools.embeddings import build_embedder
from api.tools.vector_store import build_vector_store

ROOT = Path(__file__).resolve().parent.parent


def questions() -> list[str]:
    texts = []
    for path in (ROOT / "evaluation/dev_questions.jsonl", SHARED / "zim_qa/questions.jsonl"):
        texts += [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]
    return texts


async def main_async(args: argparse.Namespace) -> list[str]:
    settings = Settings(data_dir=args.data_dir, vector_store=VectorStoreSettings(exact_max_rows=args.max_rows))
    with ThreadPoolExecutor(1) as pool:
        embedder = build_embedder(settings.embeddings, pool)
        asked = questions()
        vectors = [await embedder.embed_query(q) for q in asked]
    store = build_vector_store(settings, embedder.dimensions, f"{embedder.name}:{embedder.dimensions}")
    try:
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        assert await store.exact_ready(), "no exact index: the collection is over exact_max_rows or not Milvus Lite"
        build_s = time.perf_counter() - started
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        exact = store.exact
        assert exact is not None
        lite_ms, lite_cpu, exact_ms, exact_cpu, recall, same = [], [], [], [], [], 0
        for _ in range(args.rounds):
            for vector in vectors:
                wall, cpu = time.perf_counter(), time.process_time()
                lite_hits = store._run(  # Lite's own search, as MilvusVectorStore.search makes it
                    store.client.search, store.collection, data=[vector.tolist()], limit=args.k, output_fields=["id"]
                )[0]
                lite_ms.append((time.perf_counter() - wall) * 1000)
                lite_cpu.append((time.process_time() - cpu) * 1000)
                wall, cpu = time.perf_counter(), time.process_time()
                exact_hits = exact.search(vector, args.k)
                exact_ms.append((time.perf_counter() - wall) * 1000)
                exact_cpu.append((time.process_time() - cpu) * 1000)
                lite_ids = [str(h["id"]) for h in lite_hits]
                exact_ids = [h.chunk_id for h in exact_hits]
                recall.append(len(set(lite_ids) & set(exact_ids)) / max(1, len(exact_ids)))
                same += lite_ids == exact_ids
    finally:
        await store.close()

    n = len(lite_ms)
    lines = [
        "# Milvus Lite's search vs the in-memory exact index",
        "",
        f"- data dir `{args.data_dir.name}`: {len(exact):,} vectors of {embedder.dimensions} dimensions; "
        f"{len(asked)} development questions (ours and zim_qa's) x {args.rounds} rounds = {n} searches of the top "
        f"{args.k}, one at a time on one thread, Lite and exact in turn",
        f"- exact index built from Milvus in {build_s:.1f} s; matrix {exact.matrix.nbytes / 1e6:.0f} MB "
        f"(peak RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MiB while building)",
        "",
        "| search | P50 ms | P95 ms | CPU ms per query (mean) |",
        "| --- | ---: | ---: | ---: |",
        f"| Milvus Lite | {percentile(lite_ms, 0.5):.1f} | {percentile(lite_ms, 0.95):.1f} | "
        f"{statistics.mean(lite_cpu):.1f} |",
        f"| exact index | {percentile(exact_ms, 0.5):.1f} | {percentile(exact_ms, 0.95):.1f} | "
        f"{statistics.mean(exact_cpu):.1f} |",
        "",
        f"- Lite's results against the exact top {args.k}: recall {statistics.mean(recall):.3f} (lowest "
        f"{min(recall):.2f}); identical lists {same}/{n}",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".bench-data")
    parser.add_argument("--k", type=int, default=30, help="Results per search (the retriever's candidates).")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=1_000_000, help="exact_max_rows for this run.")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    publish(asyncio.run(main_async(args)), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
