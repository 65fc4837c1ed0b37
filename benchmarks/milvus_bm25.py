"""Milvus's built-in BM25 (full-text search in Milvus Lite) against the default bm25s backend, on the same chunks.

Usage: python benchmarks/milvus_bm25.py --data-dir D [--limit 0] [--out results/milvus_bm25.md]
Reads the lexical artifact of an ingested data dir (chunk ids and their legal-aware tokens), loads the same token
streams into a Milvus Lite collection whose BM25 function indexes them (its standard analyser splits the joined
tokens again), and runs the shared question sets through both: insert/build time, query P50/P95, memory, and how
much each query's top 10 agrees with bm25s's.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from report import percentile, publish, shared_questions

from api.settings import BM25Settings
from api.tools.bm25 import BM25_KEY, Bm25sIndex, tokenize


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N chunks (0: all)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    artifact = json.loads((args.data_dir / "objects" / BM25_KEY).read_text())
    ids, tokens = artifact["chunk_ids"], artifact["tokens"]
    if args.limit:
        ids, tokens = ids[: args.limit], tokens[: args.limit]
    qs = shared_questions(165)

    start = time.perf_counter()
    index = Bm25sIndex(ids, tokens, BM25Settings())
    bm25s_build = time.perf_counter() - start
    bm25s_ms, bm25s_top = [], []
    for q in qs:
        t = time.perf_counter()
        hits = index._search(q, 10)
        bm25s_ms.append((time.perf_counter() - t) * 1000)
        bm25s_top.append([h.chunk_id for h in hits])
    before_milvus = rss_mib()

    with tempfile.TemporaryDirectory() as tmp:
        client = MilvusClient(str(Path(tmp) / "lex.db"))
        schema = client.create_schema(auto_id=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=256)
        schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="bm25", function_type=FunctionType.BM25, input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )  # fmt: skip
        params = client.prepare_index_params()
        params.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        client.create_collection("lex", schema=schema, index_params=params)
        start = time.perf_counter()
        rows = [{"id": cid, "text": " ".join(toks)[:60000]} for cid, toks in zip(ids, tokens, strict=True)]
        for i in range(0, len(rows), 2000):
            client.insert("lex", rows[i : i + 2000])
        client.flush("lex")
        milvus_build = time.perf_counter() - start
        time.sleep(5)  # let the index settle, as the dense benchmark does
        milvus_ms, overlap = [], []
        for q, reference in zip(qs, bm25s_top, strict=True):
            text = " ".join(tokenize(q)) or q
            t = time.perf_counter()
            result = client.search("lex", data=[text], anns_field="sparse", limit=10, output_fields=["id"])
            milvus_ms.append((time.perf_counter() - t) * 1000)
            top = [str(h["id"]) for h in result[0]]
            if reference:
                overlap.append(len(set(top) & set(reference)) / len(reference))
        client.close()
    after_milvus = rss_mib()

    lines = [
        "# BM25: Milvus Lite full-text search against bm25s",
        "",
        f"`python benchmarks/milvus_bm25.py --data-dir D`: {len(ids)} chunks of the ingested corpus, {len(qs)} "
        "questions (zim_qa + 165 ObliQA), one process, 2-core machine. Both see the same legal-aware tokens.",
        "",
        "| backend | build s | query P50 ms | query P95 ms | top-10 overlap with bm25s |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| bm25s (default) | {bm25s_build:.1f} | {percentile(bm25s_ms, 0.5):.2f} | {percentile(bm25s_ms, 0.95):.2f}"
        " | 1.00 |",
        f"| Milvus Lite BM25 function | {milvus_build:.1f} | {percentile(milvus_ms, 0.5):.2f} "
        f"| {percentile(milvus_ms, 0.95):.2f} | {sum(overlap) / max(1, len(overlap)):.2f} |",
        "",
        f"Peak resident memory: {before_milvus:.0f} MiB after bm25s, {after_milvus:.0f} MiB after Milvus Lite.",
    ]
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
