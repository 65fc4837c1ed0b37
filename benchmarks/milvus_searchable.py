"""Why a Milvus 2.3.5 server's recall on the real chunks did not move with ``ef``/``nprobe``: a timeline.

Usage: python benchmarks/milvus_searchable.py --real-data-dir D [--queries 100] [--out results/milvus_searchable.md]

Counts the identical vectors of the ingest and the queries whose exact top 10 ties at the boundary (hypothesis: ties
penalise recall by id), then, on a server started inside ``unshare -n`` as ``milvus_server.py`` does, inserts the
real chunks through ``MilvusVectorStore.upsert``, flushes, waits as the earlier benchmark waited (every row indexed)
and from then on, every few seconds, lists the segments the query node has loaded and searches the same questions
at a low and a high search parameter (hypothesis: the parameter does not reach the server). Once the indexed segment
is loaded it compares the default consistency with Strong on the same questions (hypothesis: consistency).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from milvus_server import BATCH, Dataset, real_dataset, say, wait_for_index  # noqa: E402

from api.tools.vector_store import MilvusVectorStore  # noqa: E402
from tests.milvus_server import in_private_network, milvus_server  # noqa: E402

INDEXES: list[tuple[str, dict[str, int], str, tuple[int, int]]] = [
    ("HNSW", {"M": 16, "efConstruction": 200}, "ef", (10, 256)),
    ("IVF_FLAT", {"nlist": 1024}, "nprobe", (1, 256)),
]


def ties(data: Dataset) -> list[str]:
    """Identical vectors in the corpus, and questions whose exact top 10 has a tie at its boundary."""
    _, inverse, counts = np.unique(data.vectors.round(5), axis=0, return_inverse=True, return_counts=True)
    twins = counts[inverse.ravel()] >= 2
    exact = data.queries @ data.vectors.T
    members = (exact >= data.tenth[:, None] - 1e-5).sum(axis=1)
    in_top = twins[data.truth].sum(axis=1)
    eleventh = np.sort(exact, axis=1)[:, -11]
    return [
        f"- {len(data.vectors):,} vectors, {len(counts):,} distinct (rounded to 1e-5); {int(twins.sum())} rows in "
        f"{int((counts >= 2).sum())} groups of identical vectors (largest {int(counts.max())}).",
        f"- Questions whose exact top 10 ties at the 10th score (within 1e-5): {int((members > 10).sum())} of "
        f"{len(data.queries)}; exact top-10 rows that have an identical twin: {int(in_top.sum())} of {in_top.size}.",
        f"- Gap between the exact 10th and 11th scores: median {np.median(data.tenth - eleventh):.4f}.",
    ]


def recalls(store: MilvusVectorStore, data: Dataset, params: dict[str, int], **kw: Any) -> tuple[float, float, float]:
    """Recall@10 by chunk id, tie-aware recall@10, and the mean search ms, over the dataset's questions."""
    strict, tied, started = [], [], time.perf_counter()
    for i, q in enumerate(data.queries):
        result = store.client.search(
            store.collection, data=[q.tolist()], limit=10, search_params={"params": params}, output_fields=["id"], **kw
        )
        ids = [str(h["id"]) for h in result[0]]
        strict.append(len({data.row[h] for h in ids} & set(data.truth[i].tolist())) / 10)
        tied.append(data.recall(i, ids))
    ms = (time.perf_counter() - started) / len(data.queries) * 1000
    return float(np.mean(strict)), float(np.mean(tied)), ms


def segments(store: MilvusVectorStore) -> str:
    loaded = store.client.list_loaded_segments(store.collection)
    shown = [f"{s.segment_id % 100000}:{s.num_rows}:{s.state_name}:{s.index_name or 'no index'}" for s in loaded]
    stored = [f"{s.segment_id % 100000}:{s.num_rows}" for s in store.client.list_persistent_segments(store.collection)]
    return f"loaded [{', '.join(shown) or 'none'}]; persistent [{', '.join(stored)}]"


async def timeline(uri: str, data: Dataset, seconds: float) -> list[str]:
    lines = []
    for index, build, key, (low, high) in INDEXES:
        store = await asyncio.to_thread(MilvusVectorStore, uri, f"probe_{index.lower()}", 384, "", index, build, None)
        lines += [
            "",
            f"### {index} {build}",
            "",
            f"| s after the index was built | segments (id:rows:state:index) | recall@10 {key}={low} (by id / "
            f"tie-aware) | {key}={high} | ms per search {key}={low} / {high} |",
            "| --- | --- | --- | --- | --- |",
        ]
        started = time.perf_counter()
        for at in range(0, len(data.vectors), BATCH):
            await store.upsert(data.chunks[at : at + BATCH], data.vectors[at : at + BATCH])
        await store.flush()
        await wait_for_index(store)
        await asyncio.to_thread(store.client.load_collection, store.collection)
        built = time.perf_counter()
        say(f"{index}: inserted, flushed and indexed in {built - started:.1f} s")
        settled = 0
        while time.perf_counter() - built < seconds and settled < 3:
            at_s = time.perf_counter() - built
            seg = await asyncio.to_thread(segments, store)
            lo = await asyncio.to_thread(recalls, store, data, {key: low})
            hi = await asyncio.to_thread(recalls, store, data, {key: high})
            line = (
                f"| {at_s:.0f} | {seg} | {lo[0]:.3f} / {lo[1]:.3f} | {hi[0]:.3f} / {hi[1]:.3f} "
                f"| {lo[2]:.1f} / {hi[2]:.1f} |"
            )
            say(line)
            lines.append(line)
            settled = settled + 1 if "no index" not in seg and "loaded [none]" not in seg else 0
            await asyncio.sleep(2)
        n = len(data.queries)
        lines += ["", f"Once the indexed segment is loaded, the same {n} questions at each consistency:", ""]
        for value in (low, high):
            for level in ("Bounded", "Strong"):
                s, t, ms = await asyncio.to_thread(recalls, store, data, {key: value}, consistency_level=level)
                line = f"- {key}={value}, {level}: recall@10 {s:.3f} by id / {t:.3f} tie-aware, {ms:.1f} ms per search"
                say(line)
                lines.append(line)
        await asyncio.to_thread(store.client.drop_collection, store.collection)
        await store.close()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real-data-dir", type=Path, required=True)
    parser.add_argument("--collection", default="gweta_chunks")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=180, help="stop probing this long after the index is built")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "milvus_searchable.md"))
    args = parser.parse_args()
    if not in_private_network():
        inner = f"ip link set lo up && exec {shlex.quote(sys.executable)} " + " ".join(map(shlex.quote, sys.argv))
        return subprocess.run(["unshare", "-n", "sh", "-c", inner], cwd=ROOT).returncode
    started, load_start = time.time(), os.getloadavg()
    data = real_dataset(args.real_data_dir, args.collection, args.queries)
    lines = ["## Ties in the corpus", "", *ties(data), "", "## After the index is built"]
    with tempfile.TemporaryDirectory(prefix="milvus-probe-") as base, milvus_server(Path(base) / "server") as uri:
        lines += asyncio.run(timeline(uri, data, args.seconds))
    load = os.getloadavg()
    command = " ".join(["python", "benchmarks/milvus_searchable.py", *map(shlex.quote, sys.argv[1:])])
    header = [
        "# A Milvus 2.3.5 server right after an ingest: which segments answer, and with what recall",
        "",
        f"`{command}` ({time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))} UTC; {os.cpu_count()} cores, load "
        f"average {load_start[0]:.1f} at the start and {load[0]:.1f} at the end).",
        "",
    ]
    Path(args.out).write_text("\n".join(header + lines) + "\n")
    say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
