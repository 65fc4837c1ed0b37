"""Milvus Lite against a real Milvus server (PyPI milvus 2.3.5): insert throughput, query P50/P95 and recall@10,
with the server's index type (FLAT, IVF_FLAT, HNSW) chosen by measurement.

Usage: python benchmarks/milvus_server.py [--sizes 38294,200000] [--queries 200] [--out results/milvus_server.md]
       python benchmarks/milvus_server.py --sizes 1000000 --nlist 4096 --lite-queries 0 --indexes IVF_FLAT --sweep
       python benchmarks/milvus_server.py --real-data-dir D --sizes '' [--out results/milvus_server_real.md]

The server binds every interface, so the script re-runs itself inside ``unshare -n`` with loopback up and starts
the server there, beside its client. Vectors are synthetic, 384-d like the packaged model's, drawn around 500
cluster centres so that they have the clumped structure real embeddings have (uniform random vectors would flatter
no index); 38,294 is the chunk count of the Zimbabwe legislation corpus. Every insert goes through the service's own
``MilvusVectorStore.upsert`` in batches of 2,000 (the ingestion path), and every query through its ``search``.

``--real-data-dir`` adds the real chunks: the vectors and metadata an ingestion stored in that data dir's Milvus Lite
collection (read back with a query iterator, nothing re-embedded), queried with the shared question load (zim_qa and
the first ObliQA questions, to ``--queries``) embedded by the packaged model, as the service embeds a question. The
filtered queries there keep the chunks dated on or after the corpus's median date (the share is printed: for the
Zimbabwe legislation, whose versions are nearly all dated 2016-12-31, it keeps 97%).
Recall@10 is reported twice: by chunk id against the exact top 10, and tie-aware (a hit counts when its exact cosine
ties or beats the 10th best within 1e-5, as a repeated text's identical vectors would). ``--lite-queries`` searches
Lite with fewer queries (its search is brute force for a while after an ingest); 0 leaves Lite out. A server row is
timed until the query node searches every row through the built index (``wait_for_indexed_segments``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
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
from api.tools.vector_store import MilvusVectorStore, SearchFilters, date_number  # noqa: E402
from tests.milvus_server import in_private_network, milvus_server  # noqa: E402

DIM = 384
BATCH = 2000
INDEXED_WAIT_S = 900.0
"""How long to wait for the query node to load the indexed segments before measuring anyway (and saying so)."""
SEARCH_SWEEP: dict[str, list[dict[str, int]]] = {
    "IVF_FLAT": [{"nprobe": 64}, {"nprobe": 128}, {"nprobe": 256}],
    "HNSW": [{"ef": 128}, {"ef": 256}, {"ef": 512}],
}
"""With ``--sweep``: wider searches of the same index, measured after its own row (recall against latency)."""
SERVER_INDEXES: list[tuple[str, dict[str, int], dict[str, int]]] = [
    ("FLAT", {}, {}),
    ("IVF_FLAT", {"nlist": 1024}, {"nprobe": 32}),
    ("HNSW", {"M": 16, "efConstruction": 200}, {"ef": 64}),
]


def clustered(n: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    rows = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


class Dataset:
    """Vectors to insert with their chunks, query vectors, and the filter the filtered queries apply."""

    def __init__(self, label: str, chunks: list[Chunk], vectors: np.ndarray, queries: np.ndarray,
                 filters: SearchFilters, filter_label: str) -> None:  # fmt: skip
        self.label, self.chunks, self.vectors, self.queries = label, chunks, vectors, queries
        self.filters, self.filter_label = filters, filter_label
        exact = queries @ vectors.T
        top = np.argpartition(-exact, 10, axis=1)[:, :10]  # not a full sort: at 1M rows that is minutes
        order = np.argsort(-np.take_along_axis(exact, top, axis=1), axis=1)
        self.truth = np.take_along_axis(top, order, axis=1)
        self.tenth = np.take_along_axis(exact, self.truth[:, 9:10], axis=1)[:, 0]
        self.row = {c.chunk_id: i for i, c in enumerate(chunks)}

    def recall(self, query: int, hit_ids: list[str]) -> float:
        """Hits whose exact cosine ties or beats the exact 10th best, out of 10."""
        rows = [self.row[h] for h in hit_ids]
        scores = self.vectors[rows] @ self.queries[query] if rows else np.zeros(0)
        return float(np.sum(scores >= self.tenth[query] - 1e-5)) / 10

    def recall_by_id(self, query: int, hit_ids: list[str]) -> float:
        """Hits that are among the exact top 10 by chunk id, out of 10 (a tie with the 10th best is a miss)."""
        return len({self.row[h] for h in hit_ids} & set(self.truth[query].tolist())) / 10


def iso_date(number: int) -> str:
    return "" if number <= 0 else f"{number // 10000:04d}-{number // 100 % 100:02d}-{number % 100:02d}"


def read_real(data_dir: Path, collection: str) -> tuple[list[Chunk], np.ndarray]:
    """Every chunk vector and its metadata out of a data dir's Milvus Lite collection, in id order."""
    from pymilvus import MilvusClient

    client = MilvusClient(str(data_dir / "milvus.db"))
    fields = ["id", "vector", "doc_key", "section_id", "jurisdiction", "doc_type", "date", "tenant"]
    rows: list[dict[str, Any]] = []
    client.load_collection(collection)
    iterator = client.query_iterator(collection, batch_size=4096, filter='id != ""', output_fields=fields)
    try:
        while batch := iterator.next():
            rows.extend(batch)
    finally:
        iterator.close()
        client.close()
    rows.sort(key=lambda r: str(r["id"]))
    chunks = [
        Chunk(
            chunk_id=str(r["id"]),
            doc_key=r["doc_key"],
            section_id=r["section_id"],
            section_number="",
            section_heading="",
            title="",
            text="",
            ordinal=0,
            jurisdiction=r["jurisdiction"],
            doc_type=r["doc_type"],
            date=iso_date(int(r["date"])),
            tenant=r["tenant"],
        )  # fmt: skip
        for r in rows
    ]
    return chunks, np.asarray([r["vector"] for r in rows], dtype=np.float32)


def embed_questions(n: int) -> np.ndarray:
    """The shared question load, embedded by the packaged model as the service embeds a question."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from report import shared_questions

    from api.tools.embeddings import load_sentence_transformer

    questions = shared_questions(165)[:n]
    model = load_sentence_transformer()
    out = model.encode(questions, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    return np.asarray(out, dtype=np.float32)


def real_dataset(data_dir: Path, collection: str, n_queries: int) -> Dataset:
    chunks, vectors = read_real(data_dir, collection)
    queries = embed_questions(n_queries)
    dates = sorted(date_number(c.date) for c in chunks if c.date)
    if dates:
        median = iso_date(dates[len(dates) // 2])
        filters, kept = SearchFilters(date_from=median), sum(1 for c in chunks if c.date and c.date >= median)
        label = f"date ≥ {median} ({kept / len(chunks):.0%} of rows)"
    else:
        filters, label = SearchFilters(jurisdiction=chunks[0].jurisdiction), f"jurisdiction == {chunks[0].jurisdiction}"
    say(f"real: {len(chunks):,} chunks from {data_dir}, {len(queries)} questions; filter {label}")
    return Dataset(f"{len(chunks):,} real chunks", chunks, vectors, queries, filters, label)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


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
    """A server builds indexes in the background after a flush: wait until every row is indexed.

    Pending rows are not waited for: at 1M rows the server compacts its first segments and re-indexes the merged
    ones for over 20 minutes (``milvus_server_1m.md``), while the segments it serves keep their index."""
    if store.is_lite:
        return
    name = store.client.list_indexes(store.collection)[0]
    while True:
        info: dict[str, Any] = store.client.describe_index(store.collection, name)
        if int(info.get("indexed_rows", 0)) >= int(info.get("total_rows", 0)) > 0:
            return
        await asyncio.sleep(0.5)


async def wait_for_indexed_segments(store: MilvusVectorStore, rows: int) -> None:
    """Wait until the query node searches every row through the built index.

    ``describe_index`` says every row is indexed several seconds before the query node swaps the index in: until
    then it answers from the segment without it (Milvus 2.3's interim index), whose recall no search parameter moves
    (``milvus_searchable.md``). The earlier runs measured that window as the index."""
    if store.is_lite:
        return
    flat = store.index_type == "FLAT"  # the query node reports no index name on a FLAT segment: brute force is it
    started = time.perf_counter()
    while True:
        loaded = await asyncio.to_thread(store.client.list_loaded_segments, store.collection)
        sealed = [s for s in loaded if s.state_name == "Sealed" and (flat or s.index_name)]
        if sum(s.num_rows for s in sealed) >= rows and len(sealed) == len(loaded):
            return
        waited = time.perf_counter() - started
        if waited > INDEXED_WAIT_S:
            say(f"  WARNING: after {waited:.0f} s the query node still has {loaded}; measuring anyway")
            return
        await asyncio.sleep(0.5)


async def measure(
    store: MilvusVectorStore, data: Dataset, settle_s: float = 0.0, n_queries: int | None = None
) -> dict[str, float]:
    start = time.perf_counter()
    for at in range(0, len(data.vectors), BATCH):
        await store.upsert(data.chunks[at : at + BATCH], data.vectors[at : at + BATCH])
        if (at + BATCH) % 100_000 == 0:  # a long run cut short still says how fast it inserted
            say(f"  {at + BATCH:,} rows after {time.perf_counter() - start:.0f} s")
    inserted = time.perf_counter() - start
    say(f"  inserted {len(data.vectors):,} rows in {inserted:.0f} s")
    await store.flush()
    await wait_for_index(store)
    await asyncio.to_thread(store.client.load_collection, store.collection)
    await wait_for_indexed_segments(store, len(data.vectors))
    ready = time.perf_counter() - start
    say(f"  searchable through the index {ready:.0f} s after the first insert")
    if store.is_lite and settle_s:
        await asyncio.sleep(settle_s)  # Lite builds its index in the background, and says nothing about it
    measured = await query(store, data, n_queries)
    return {"insert_rows_s": len(data.vectors) / inserted, "ready_s": ready, **measured}


async def query(store: MilvusVectorStore, data: Dataset, n_queries: int | None = None) -> dict[str, float]:
    """Latency and recall of the dataset's first ``n_queries`` queries (all by default), plain and filtered, after
    warm-up queries (20, or a quarter of a shorter run)."""
    queries = data.queries[:n_queries]
    for q in queries[: min(20, len(queries) // 4)]:
        await store.search(q, 10)
    plain, filtered, recall, by_id = [], [], [], []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        hits = await store.search(q, 10)
        plain.append((time.perf_counter() - t) * 1000)
        recall.append(data.recall(i, [h.chunk_id for h in hits]))
        by_id.append(data.recall_by_id(i, [h.chunk_id for h in hits]))
        t = time.perf_counter()
        await store.search(q, 10, data.filters)
        filtered.append((time.perf_counter() - t) * 1000)
    return {
        "p50": statistics.median(plain), "p95": pct(plain, 95), "p50_filtered": statistics.median(filtered),
        "p95_filtered": pct(filtered, 95), "recall": float(np.mean(recall)), "recall_by_id": float(np.mean(by_id)),
        "queries": len(queries),
    }  # fmt: skip


def row(label: str, backend: str, index: str, params: dict[str, int], m: dict[str, float]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "-"
    insert = "″ | ″" if "insert_rows_s" not in m else f"{m['insert_rows_s']:,.0f} | {m['ready_s']:.1f}"
    return (
        f"| {label} | {backend} | {index} ({shown}) | {insert} | {m['queries']:.0f} | {m['p50']:.1f} | {m['p95']:.1f} "
        f"| {m['p50_filtered']:.1f} / {m['p95_filtered']:.1f} | {m['recall_by_id']:.3f} / {m['recall']:.3f} |"
    )


def synthetic_dataset(n: int, n_queries: int, rng: np.random.Generator, centres: np.ndarray) -> Dataset:
    vectors, queries = clustered(n, rng, centres), clustered(n_queries, rng, centres)
    return Dataset(f"{n:,}", chunks_for(n), vectors, queries, SearchFilters(jurisdiction="ZW"), 'jurisdiction == "ZW"')


def reindex(store: MilvusVectorStore, index_type: str, params: dict[str, int]) -> None:
    """Give a new, empty Lite collection another index than the AUTOINDEX the service asks of Lite."""
    client, name = store.client, store.collection
    client.release_collection(name)
    client.drop_index(name, "vector")
    index = client.prepare_index_params()
    index.add_index(field_name="vector", index_type=index_type, metric_type="COSINE", params=params)
    client.create_index(name, index)
    client.load_collection(name)


async def run(
    sizes: list[int], n_queries: int, server_indexes: list[str], partial: Path | None = None,
    real: tuple[Path, str] | None = None, lite_indexes: tuple[str, ...] = (), sweep_search: bool = False,
    settle_s: float = 0.0, consistency: str = "", lite_queries: int | None = None, nlist: int = 1024,
) -> list[str]:  # fmt: skip
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(500, DIM)).astype(np.float32)
    lines = [
        "| vectors | backend | index (build / search params) | insert rows/s | insert→searchable s | queries "
        "| query P50 ms | P95 ms | filtered P50 / P95 ms | recall@10 by id / tie-aware |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    # The real data is read (and its questions embedded) before the server starts, so neither competes with it.
    datasets: list[Dataset | int] = [real_dataset(*real, n_queries)] if real else []
    datasets += sizes
    with tempfile.TemporaryDirectory(prefix="milvus-bench-") as base:
        with milvus_server(Path(base) / "server") as uri:
            for item in datasets:
                data = item if isinstance(item, Dataset) else synthetic_dataset(item, n_queries, rng, centres)
                n = len(data.vectors)
                lite = str(Path(base) / f"lite-{n}.db")
                indexes = [
                    (name, {**build, "nlist": nlist} if "nlist" in build else build, search)
                    for name, build, search in SERVER_INDEXES
                ]  # fmt: skip
                configs: list[tuple[str, str, str, dict[str, int], dict[str, int]]] = []
                if lite_queries != 0:
                    configs.append(("Milvus Lite", lite, "AUTOINDEX (Lite's default)", {}, {}))
                    configs += [
                        ("Milvus Lite", lite, f"{name} (set on the collection)", build, search)
                        for name, build, search in indexes if name in lite_indexes
                    ]  # fmt: skip
                configs += [
                    ("server", uri, name, build, search) for name, build, search in indexes if name in server_indexes
                ]  # fmt: skip
                for backend, where, index, build, search in configs:
                    store = await asyncio.to_thread(
                        MilvusVectorStore, where, f"bench_{n}_{index.split()[0].lower()}", DIM, "",
                        index.split()[0] if backend == "server" else "AUTOINDEX", build, search,
                    )  # fmt: skip
                    if consistency and backend == "server":  # the service searches at the collection's default
                        store.client.search = functools.partial(store.client.search, consistency_level=consistency)
                    sweep = SEARCH_SWEEP.get(index.split()[0], []) if sweep_search else []
                    results: list[tuple[dict[str, int], dict[str, float]]] = []
                    n_q = lite_queries if backend == "Milvus Lite" else None
                    say(f"{data.label}: {backend} {index} {build} {search}")
                    try:
                        if backend == "Milvus Lite" and not index.startswith("AUTOINDEX"):
                            await asyncio.to_thread(reindex, store, index.split()[0], build)
                        results.append((search, await measure(store, data, settle_s, n_q)))
                        for other in sweep:  # the same index searched wider: no rebuild
                            store.search_params = {"params": other}
                            results.append((other, await query(store, data, n_q)))
                    finally:
                        if backend == "server":
                            await asyncio.to_thread(store.client.drop_collection, store.collection)
                        await store.close()
                    for used, m in results:
                        line = row(data.label, backend, index, {**build, **used}, m)
                        print(line, flush=True)
                        lines.append(line)
                    if partial:
                        await asyncio.to_thread(partial.write_text, "\n".join(lines) + "\n")  # kept if cut short
    return lines


async def query_existing(uri: str, sizes: list[int], n_queries: int, server_indexes: list[str], nlist: int) -> None:
    """Search the collections a cut-short run left on a live server (same seed, so the same vectors and queries),
    for when its wait for the server's background compaction outlasts the time there is."""
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(500, DIM)).astype(np.float32)
    for n in sizes:
        data = synthetic_dataset(n, n_queries, rng, centres)
        for name, build, search in SERVER_INDEXES:
            if name not in server_indexes:
                continue
            build = {**build, "nlist": nlist} if "nlist" in build else build
            store = await asyncio.to_thread(
                MilvusVectorStore, uri, f"bench_{n}_{name.lower()}", DIM, "", name, build, search
            )  # fmt: skip
            loaded = await asyncio.to_thread(store.client.list_loaded_segments, store.collection)
            say(f"{len(loaded)} loaded segments, {sum(s.num_rows for s in loaded if s.index_name):,} rows indexed")
            for used in [search, *SEARCH_SWEEP.get(name, [])]:
                store.search_params = {"params": used}
                say(row(data.label, "server", name, {**build, **used}, await query(store, data)))
            await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="38294,200000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--indexes", default="FLAT,IVF_FLAT,HNSW")
    parser.add_argument("--lite-indexes", default="", help="also Lite with these indexes (IVF_FLAT, HNSW)")
    parser.add_argument("--sweep", action="store_true", help="also search each IVF_FLAT/HNSW index wider")
    parser.add_argument("--lite-settle-s", type=float, default=0.0, help="wait this long after Lite's flush")
    parser.add_argument("--consistency", default="", help="search a server at this level (Strong) not its default")
    parser.add_argument("--real-data-dir", type=Path, help="also measure the real chunks of this ingested data dir")
    parser.add_argument(
        "--lite-queries", type=int, help="search Lite with only the first N queries (0: leave Lite out)"
    )
    parser.add_argument("--nlist", type=int, default=1024, help="IVF_FLAT's nlist")
    parser.add_argument("--collection", default="gweta_chunks", help="the data dir's vector collection")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "milvus_server.md"))
    parser.add_argument("--query-existing", metavar="URI", help="only search the collections a run left at URI")
    args = parser.parse_args()
    if args.query_existing:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        asyncio.run(query_existing(args.query_existing, sizes, args.queries, args.indexes.split(","), args.nlist))
        return 0
    if not in_private_network():
        inner = f"ip link set lo up && exec {shlex.quote(sys.executable)} " + " ".join(map(shlex.quote, sys.argv))
        return subprocess.run(["unshare", "-n", "sh", "-c", inner], cwd=ROOT).returncode
    sizes = [int(s) for s in args.sizes.split(",") if s]
    started, load_start = time.time(), os.getloadavg()
    real = (args.real_data_dir, args.collection) if args.real_data_dir else None
    lines = asyncio.run(
        run(
            sizes,
            args.queries,
            args.indexes.split(","),
            Path(args.out + ".partial"),
            real,
            tuple(filter(None, args.lite_indexes.split(","))),
            args.sweep,
            args.lite_settle_s,
            args.consistency,
            args.lite_queries,
            args.nlist,
        )
    )
    load = os.getloadavg()
    command = " ".join(["python", "benchmarks/milvus_server.py", *map(shlex.quote, sys.argv[1:])])
    header = [
        "# Milvus Lite vs a Milvus server",
        "",
        f"`{command}` ({time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))} UTC; {os.cpu_count()} cores, load "
        f"average {load_start[0]:.1f} at the start and {load[0]:.1f} at the end: the machine was shared, so treat "
        "absolute figures as upper bounds).",
        "",
        f"Inserts through `MilvusVectorStore.upsert` (batches of {BATCH:,}), {args.queries} queries through `search` "
        "(top 10). Synthetic rows: 384-d vectors around 500 centres, the filtered queries with "
        '`jurisdiction == "ZW"` (half the rows). Real rows: the chunk vectors an ingestion stored (read back, not '
        "re-embedded), queried with the zim_qa + ObliQA questions embedded by the packaged model, the filtered "
        "queries keeping the chunks dated on or after the median date. Recall@10 is against exact cosine search in "
        "NumPy, by chunk id and tie-aware (a hit whose exact cosine ties the exact 10th best within 1e-5 counts). "
        "A server row is searchable once every row is indexed and the query node has loaded the indexed segments "
        "(before that it answers without the index: `milvus_searchable.md`).",
        "",
    ]
    Path(args.out).write_text("\n".join(header + lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
