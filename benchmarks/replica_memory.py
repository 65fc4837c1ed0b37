"""A serving replica's memory at national scale: the corpus's chunks held as objects against read from their table.

Usage: python benchmarks/replica_memory.py --sizes 100000,1000000 [--work /tmp/replica-memory]
       [--out benchmarks/results/replica_memory.md]

For each size a synthetic data dir is written as ingestion writes one (``indexes/manifest.json``, one chunks object
per document of 50 chunks, ``indexes/bm25.npz``): chunk texts are the 385 Acts' lines (cut at 1,200 characters), in
turn, each after its Act's title, tokenized as ingestion tokenizes them. Then a replica's load is measured, each in a
fresh (spawned) process, one after the other: ``objects``, the chunks as the corpus held them before (a dict of
``Chunk`` objects parsed from the stored JSON), and ``table``, ``Corpus.load`` (``api.tools.chunk_table``), each
with the lexical index loaded as a replica loads it. Reported: the process's resident memory after the load (VmRSS,
and of it RssAnon, the process's own, and RssFile, pages mapped from files), its peak (VmHWM) and the load time.

Then, in the ``objects`` process with the table loaded beside it, what an answer does with the chunks, timed for
both in turn (alternating which goes first), over the shared query set: BM25's top 10 (``_search``, one thread) and,
for each hit, the chunk and its neighbours in its section (as the context bundler reads them); and the mask of a
search filter (a document type), built once for each. Sentence vectors and the vector store (Milvus Lite's own
process, or a server) are not part of this measure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from bm25_memory import status
from report import SHARED, percentile, publish, shared_questions

from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.tools import bm25
from api.tools.corpus import MANIFEST_KEY, Corpus, Manifest, ManifestEntry, chunks_object_key, load_chunks
from api.tools.object_store import LocalObjectStore
from api.tools.retrieval import filter_mask
from api.tools.token_arrays import TokenArrays
from api.tools.vector_store import SearchFilters

PASSES = 3
PER_DOCUMENT = 50


def source_texts() -> list[tuple[str, str]]:
    """(title, text) of each line of the 385 Acts, cut at 1,200 characters."""
    texts = []
    with (SHARED / "corpus/zimbabwe_legislation/acts.jsonl").open() as lines:
        for line in lines:
            act = json.loads(line)
            texts += [(act["title"], text[i : i + 1200]) for text in act["text"].splitlines()
                      for i in range(0, len(text), 1200) if text[i : i + 1200].strip()]  # fmt: skip
    return texts


def write_data_dir(size: int, root: Path) -> dict[str, Any]:
    """The synthetic data dir of ``size`` chunks (run in a child: the parent stays small)."""
    texts = source_texts()
    source = TokenArrays.of_lists(
        (bm25.tokenize(title) + bm25.tokenize(text) for title, text in texts),
        [(len(bm25.tokenize(title)), 0) for title, _ in texts],
    )
    objects = root / "objects"
    (objects / "chunks").mkdir(parents=True, exist_ok=True)
    manifest = Manifest(embedder="synthetic", dimensions=384)
    chunk_ids: list[str] = []
    for first in range(0, size, PER_DOCUMENT):
        doc_key = f"syn/act/{first // PER_DOCUMENT}"
        chunks = []
        for n in range(first, min(size, first + PER_DOCUMENT)):
            title, text = texts[n % len(texts)]
            section = f"{doc_key}#s{n - first + 1}"
            chunks.append(Chunk(chunk_id=f"{section}/c0", doc_key=doc_key, section_id=section,
                                section_number=str(n - first + 1), section_heading="Heading", title=title,
                                jurisdiction="ZW", text=text, ordinal=0, provision_id=section,
                                doc_type="act" if first % 1000 else "si", date="2020-01-01"))  # fmt: skip
        (objects / chunks_object_key(doc_key)).write_text(json.dumps([c.model_dump() for c in chunks]))
        ids = [c.chunk_id for c in chunks]
        chunk_ids += ids
        manifest.documents[doc_key] = ManifestEntry(content_hash=doc_key, source="synthetic", title=chunks[0].title,
                                                    chunk_ids=ids)  # fmt: skip
    (objects / MANIFEST_KEY).parent.mkdir(parents=True, exist_ok=True)
    (objects / MANIFEST_KEY).write_text(manifest.model_dump_json())
    picked = np.arange(size) % len(texts)
    lengths = np.diff(source.offsets)[picked]
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    starts = np.repeat(source.offsets[picked] - offsets[:-1], lengths)
    ids = source.ids[np.arange(int(offsets[-1])) + starts]
    assert source.fields is not None
    tokens = TokenArrays(source.vocabulary, ids, offsets, source.fields[picked])
    (objects / bm25.BM25_KEY).write_bytes(tokens.to_bytes(chunk_ids))
    chars = sum(len(texts[n % len(texts)][1]) for n in range(size)) / size
    return {"texts": len(texts), "chars": chars, "tokens": int(offsets[-1])}


async def load(variant: str, objects: Path) -> tuple[Any, bm25.LexicalIndex]:
    """The chunks as ``variant`` holds them, and the lexical index."""
    store = LocalObjectStore(objects)
    if variant == "objects":
        manifest = await Manifest.load(store)
        chunks: Any = {c.chunk_id: c for c in await load_chunks(store, manifest.documents)}
    else:
        chunks = (await Corpus.load(store)).chunks
    return chunks, await bm25.load_lexical_index(store, BM25Settings())


def old_mask(chunks: dict[str, Chunk], lexical: bm25.LexicalIndex, filters: SearchFilters) -> Any:
    """The filter mask as the retriever built it over a dict of chunks: each chunk read and admitted in turn."""
    return np.array([cid in chunks and filters.admits(chunks[cid]) for cid in lexical.chunk_ids], dtype=bool)


def answer_reads(chunks: Any, lexical: bm25.LexicalIndex, q: str) -> int:
    """BM25's top 10 and, for each, the chunk and its section's neighbours; the characters read (kept, so the reads
    are not optimised away)."""
    read = 0
    for hit in lexical._search(q, 10):  # type: ignore[attr-defined]
        chunk = chunks[hit.chunk_id]
        read += len(chunk.text)
        for ordinal in (chunk.ordinal - 1, chunk.ordinal + 1):
            if (near := chunks.get(f"{chunk.section_id}/c{ordinal}")) is not None:
                read += len(near.text)
    return read


def measure(variant: str, data_dir: str, qs: list[str]) -> dict[str, Any]:
    """One replica's load and memory (in a fresh process); for ``objects``, then the table beside it and both timed."""
    objects = Path(data_dir) / "objects"
    before = status()
    start = time.perf_counter()
    chunks, lexical = asyncio.run(load(variant, objects))
    result = {"chunks": len(chunks), "before": before, "after": status(), "load_s": time.perf_counter() - start}
    result["peak"] = status()["VmHWM"]
    if variant == "table":
        return result
    table, _ = asyncio.run(load("table", objects))
    held = {"objects": chunks, "table": table}
    for q in qs[:20]:
        for each in held.values():
            answer_reads(each, lexical, q)
    times: dict[str, list[float]] = {"objects": [], "table": []}
    read: dict[str, int] = {"objects": 0, "table": 0}
    for round_ in range(PASSES):
        for i, q in enumerate(qs):
            for name in ("objects", "table") if (i + round_) % 2 == 0 else ("table", "objects"):
                start = time.perf_counter()
                read[name] += answer_reads(held[name], lexical, q)
                times[name].append((time.perf_counter() - start) * 1000)
    result["latency"] = {name: (statistics.median(t), percentile(t, 0.95)) for name, t in times.items()}
    result["same_reads"] = read["objects"] == read["table"]
    filters = SearchFilters(doc_type="si")
    start = time.perf_counter()
    expected = old_mask(chunks, lexical, filters)
    mask_s = {"objects": time.perf_counter() - start}
    start = time.perf_counter()
    got = filter_mask(table, lexical, filters)
    mask_s["table"] = time.perf_counter() - start
    result["mask_s"], result["same_mask"] = mask_s, bool(np.array_equal(expected, got)) and bool(got.any())
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--work", type=Path, default=Path("/tmp/replica-memory"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    qs = shared_questions(165)
    load_avg = os.getloadavg()
    command = " ".join(["python", "benchmarks/replica_memory.py", *sys.argv[1:]])
    lines = ["# A serving replica's memory: the corpus's chunks as objects against read from their table", "",
             f"- `{command}` ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC); {os.cpu_count()} cores, load "
             f"average {load_avg[0]:.1f} / {load_avg[1]:.1f} / {load_avg[2]:.1f} at the start (a shared machine: "
             "times are upper bounds)",
             "- `objects`: the chunks as the corpus held them before (a dict of `Chunk` objects parsed from the stored "
             "JSON); `table`: `Corpus.load` (the chunks in an SQLite table in the temporary folder, "
             "`api/tools/chunk_table.py`); each with the lexical index (`indexes/bm25.npz`, memory-mapped), each in a "
             "fresh spawned process, one after the other",
             "- RSS after = once the chunks and the lexical index are loaded; anon / file = of it, the process's own "
             "memory and pages mapped from files; peak = VmHWM over the load",
             f"- reads: {len(qs)} queries (zim_qa + first 165 ObliQA questions), BM25's top 10 (one thread) and each "
             f"hit's chunk and section neighbours, {PASSES} passes after 20 warm-up queries, in the `objects` process "
             "with the table loaded beside it, the two in turn (alternating which goes first); mask: a document-type "
             "filter's mask over the lexical index, built once by each", ""]  # fmt: skip
    spawn = multiprocessing.get_context("spawn")
    rows: list[str] = []
    notes: list[str] = []
    for size in [int(s) for s in args.sizes.split(",")]:
        root = args.work / str(size)
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            made = pool.submit(write_data_dir, size, root).result()
        print(f"{size}: written {made}", flush=True)
        results = {}
        for variant in ("table", "objects"):  # objects last: it then times both side by side
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:  # a fresh interpreter: its own peak
                results[variant] = pool.submit(measure, variant, str(root), qs).result()
            print(f"{size} {variant}: {results[variant]}", flush=True)
        latency, mask_s = results["objects"]["latency"], results["objects"]["mask_s"]
        for variant in ("objects", "table"):
            r = results[variant]
            after = r["after"]
            rows.append(f"| {size:,} | {variant} | {r['load_s']:.1f} | {after['VmRSS']:,.0f} | {after['RssAnon']:,.0f} "
                        f"| {after['RssFile']:,.0f} | {r['peak']:,.0f} | {latency[variant][0]:.2f} "
                        f"| {latency[variant][1]:.2f} | {mask_s[variant]:.2f} |")  # fmt: skip
            print(rows[-1], flush=True)
        same = results["objects"]
        notes.append(f"- {size:,} chunks ({made['texts']:,} distinct texts of {made['chars']:.0f} characters on "
                     f"average, {made['tokens']:,} tokens): the same characters read by both: {same['same_reads']}; "
                     f"the same filter mask: {same['same_mask']}")  # fmt: skip
    lines += ["| chunks | held as | load s | RSS after MiB | anon MiB | file MiB | peak MiB | reads P50 ms "
              "| reads P95 ms | mask s |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *rows, "", *notes]  # fmt: skip
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
