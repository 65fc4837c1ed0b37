"""Pad a copy of an ingested data dir's vector collection with random vectors, to measure an answer's cost at a
corpus size no shared data reaches (the cost-per-answer run at about 100k chunks).

The padding vectors are random unit vectors with ids no chunk has, so the answer path searches all of them (Milvus
Lite's dense search is brute force) but drops any that comes up (`HybridRetriever` keeps only hits the corpus
holds), and a random 384-dimension vector is almost never near a question: answers stay those of the unpadded corpus
while the vector search does the work of the larger one. BM25 keeps the real corpus (its cost at 100k chunks is
`benchmarks/results/bm25_scale.md`).

    python benchmarks/pad_vectors.py SOURCE_DATA_DIR TARGET_DATA_DIR --total 100000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from api.settings import Settings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--total", type=int, default=100_000, help="vectors in the padded collection")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.target.exists():
        parser.error(f"{args.target} exists")
    shutil.copytree(args.source, args.target, ignore=shutil.ignore_patterns("LOCK"))
    from pymilvus import MilvusClient

    settings = Settings(data_dir=args.target)
    client = MilvusClient(settings.milvus_uri)
    collection = settings.vector_store.collection
    have = int(client.get_collection_stats(collection)["row_count"])
    dims = next(
        int(f["params"]["dim"]) for f in client.describe_collection(collection)["fields"] if f["name"] == "vector"
    )
    rng = np.random.default_rng(args.seed)
    start, added = time.perf_counter(), 0
    while have + added < args.total:
        n = min(5000, args.total - have - added)
        vectors = rng.standard_normal((n, dims)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = [
            {"id": f"pad/{added + i}", "vector": v.tolist(), "doc_key": "pad", "section_id": "pad",
             "jurisdiction": "", "doc_type": "", "date": 0, "tenant": ""}
            for i, v in enumerate(vectors)
        ]  # fmt: skip
        client.insert(collection, rows)
        added += n
        print(f"\r{have + added:,} of {args.total:,} vectors", end="", flush=True)
    client.flush(collection)
    total = int(client.get_collection_stats(collection)["row_count"])
    client.close()
    print(
        f"\n{args.target}: {have:,} chunk vectors + {added:,} random = {total:,} in {time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
