"""A replica's memory for the lexical index: the JSON artifact of token strings against memory-mapped token arrays.

Usage: python benchmarks/bm25_memory.py [--data-dir D] --sizes 100000,1000000 [--old-ref daa6d09^]
       [--work /tmp/bm25-memory] [--out benchmarks/results/bm25_memory.md]

Synthetic chunks are resampled from a source corpus's tokens (by frequency) and chunk lengths: an ingested data
dir's lexical artifact with ``--data-dir``, else the 385 Acts of the shared data, each Act's lines tokenized as
chunks of at most 200 tokens, with its title's tokens in front (the title field). For each size both artifacts of
the same chunks are written, then each is loaded as a replica loads it, each in a fresh (spawned) process, one
after the other: ``old`` with ``api/tools/bm25.py`` as of ``--old-ref`` (the JSON artifact, every token a string),
``new`` with this checkout's (``indexes/bm25.npz``, memory-mapped). Reported: the process's resident memory before
and after the load (VmRSS, and of it what is the process's own, RssAnon, and what is mapped from files, RssFile),
its peak (VmHWM) and the load time; then, in the ``old`` process with the new index loaded beside it, the latency
of ``_search`` (top 10, one thread) of both over the shared query set, query by query in turn, three passes after
20 warm-up queries; and whether both return the same top 10 for every query.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from report import SHARED, percentile, publish, shared_questions

from api.settings import BM25Settings
from api.tools import bm25
from api.tools.object_store import LocalObjectStore
from api.tools.token_arrays import TokenArrays

ROOT = Path(__file__).resolve().parents[1]
PASSES = 3


def status() -> dict[str, float]:
    """This process's memory figures from /proc/self/status, in MiB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            found[name] = int(value.split()[0]) / 1024
    return found


def source_tokens(data_dir: Path | None) -> tuple[str, TokenArrays]:
    """The corpus the synthetic chunks are resampled from, and how it was read."""
    if data_dir is not None:
        opened = asyncio.run(bm25.read_lexical_artifact(LocalObjectStore(data_dir / "objects")))
        assert opened is not None, f"{data_dir} has no lexical artifact"
        return f"the lexical artifact of `{data_dir}`", opened[1]
    tokens, fields = [], []
    with (SHARED / "corpus/zimbabwe_legislation/acts.jsonl").open() as lines:
        for line in lines:
            act = json.loads(line)
            title = bm25.tokenize(act["title"])
            for text in act["text"].splitlines():
                words = bm25.tokenize(text)
                for start in range(0, len(words), 200):
                    tokens.append(title + words[start : start + 200])
                    fields.append((len(title), 0))
    return "the 385 Acts of the shared data (each line, in pieces of at most 200 tokens, after its Act's title)", (
        TokenArrays.of_lists(tokens, fields)
    )


def write_artifacts(data_dir: Path | None, size: int, work: Path, seed: int = 7) -> dict[str, Any]:
    """Both artifacts of ``size`` chunks resampled from the source (run in a child: the parent stays small)."""
    described, source = source_tokens(data_dir)
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(source), size)
    lengths = np.diff(source.offsets)[picked]
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = rng.choice(source.ids, size=int(offsets[-1])).astype(np.int32)  # by frequency, as the source has them
    assert source.fields is not None
    fields = np.minimum(source.fields[picked], lengths[:, None]).astype(np.int32)
    fields[:, 1] = np.minimum(fields[:, 1], lengths - fields[:, 0])
    tokens = TokenArrays(source.vocabulary, ids, offsets, fields)
    chunk_ids = [f"syn/{i // 50}#s{i % 50}" for i in range(size)]
    new = work / f"{size}-new" / "objects" / bm25.BM25_KEY
    new.parent.mkdir(parents=True, exist_ok=True)
    new.write_bytes(tokens.to_bytes(chunk_ids))
    old = work / f"{size}-old" / "objects" / bm25.LEGACY_BM25_KEY
    old.parent.mkdir(parents=True, exist_ok=True)
    with old.open("w") as out:  # as the old save wrote it (put_json), chunk by chunk to keep this process small
        out.write('{"chunk_ids": ' + json.dumps(chunk_ids) + ', "fields": ' + json.dumps(fields.tolist()))
        out.write(', "tokens": [')
        for i in range(size):
            out.write(("," if i else "") + json.dumps(tokens[i]))
        out.write('], "version": 1}')
    n_source = len(source)
    return {"source": described, "source_chunks": n_source, "source_vocabulary": len(source.vocabulary),
            "source_per_chunk": len(source.ids) / max(1, n_source), "tokens": int(offsets[-1]),
            "old_mib": old.stat().st_size / 2**20, "new_mib": new.stat().st_size / 2**20}  # fmt: skip


def load_old(module_path: str) -> Any:
    """``api/tools/bm25.py`` as it was at the old commit."""
    spec = importlib.util.spec_from_file_location("bm25_old", module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(index: Any, q: str, into: list[float]) -> list[tuple[str, float]]:
    start = time.perf_counter()
    hits = index._search(q, 10)
    into.append((time.perf_counter() - start) * 1000)
    return [(h.chunk_id, h.score) for h in hits]


def load_and_query(variant: str, module_path: str, data_dir: str, qs: list[str], new_dir: str) -> dict[str, Any]:
    """One replica's load of the lexical index and its memory (in a fresh process). For ``old``, then the new index
    is loaded beside it (its memory is no longer measured) and the two answer the query load in turn, query by query
    and alternating which goes first, so a busy machine slows both alike."""
    module = load_old(module_path) if variant == "old" else bm25
    before = status()
    start = time.perf_counter()
    index = asyncio.run(module.load_lexical_index(LocalObjectStore(Path(data_dir) / "objects"), BM25Settings()))
    load_s = time.perf_counter() - start
    after = status()
    result = {"chunks": len(index), "before": before, "after": after, "load_s": load_s, "peak": status()["VmHWM"]}
    if variant == "new":
        return result
    new = asyncio.run(bm25.load_lexical_index(LocalObjectStore(Path(new_dir) / "objects"), BM25Settings()))
    indexes = {"old": index, "new": new}
    for q in qs[:20]:
        for each in indexes.values():
            each._search(q, 10)
    times: dict[str, list[float]] = {"old": [], "new": []}
    rankings: dict[str, list[list[tuple[str, float]]]] = {"old": [], "new": []}
    for round_ in range(PASSES):
        for i, q in enumerate(qs):
            order = ("old", "new") if (i + round_) % 2 == 0 else ("new", "old")
            for name in order:
                hits = timed(indexes[name], q, times[name])
                if round_ == 0:
                    rankings[name].append(hits)
    result["latency"] = {name: (statistics.median(t), percentile(t, 0.95)) for name, t in times.items()}
    result["same"] = sum(a == b for a, b in zip(rankings["old"], rankings["new"], strict=True))
    return result


def chunk_objects(n: int) -> dict[str, float]:
    """What ``n`` chunks cost resident as the corpus holds them (``Corpus.chunks``: a ``Chunk`` each, parsed from its
    document's chunks object, 50 to a document), their texts cut from the Acts' lines (in a fresh process)."""
    from api.schemas.documents import Chunk

    texts = []
    with (SHARED / "corpus/zimbabwe_legislation/acts.jsonl").open() as lines:
        for line in lines:
            act = json.loads(line)
            texts += [(act["id"], act["title"], text[i : i + 1200]) for text in act["text"].splitlines()
                      for i in range(0, len(text), 1200) if text[i : i + 1200].strip()]  # fmt: skip
    before = status()["VmRSS"]
    chunks: dict[str, Chunk] = {}
    for first in range(0, n, 50):
        raw = json.dumps([{"chunk_id": f"{doc}/{i}#s{i}-0", "doc_key": f"{doc}/{first}", "section_id": f"{doc}#s{i}",
                           "section_number": str(i), "section_heading": "Heading", "title": title, "text": text,
                           "ordinal": 0, "provision_id": f"{doc}#s{i}"}
                          for i in range(first, min(n, first + 50))
                          for doc, title, text in [texts[i % len(texts)]]])  # fmt: skip
        chunks.update((c.chunk_id, c) for c in (Chunk.model_validate(r) for r in json.loads(raw)))
    size = sum(len(c.text) for c in chunks.values()) / len(chunks)
    return {"chunks": len(chunks), "mib": status()["VmRSS"] - before, "text_chars": size}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="an ingested data dir to resample (else the shared Acts)")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--old-ref", default="daa6d09^", help="the commit whose api/tools/bm25.py is `old`")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bm25-memory"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--chunk-objects", type=int, help="instead: what this many corpus chunks hold resident")
    args = parser.parse_args()
    if args.chunk_objects:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            r = pool.submit(chunk_objects, args.chunk_objects).result()
        command = " ".join(["python", "benchmarks/bm25_memory.py", *sys.argv[1:]])
        publish([f"# The corpus's chunks resident ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC)", "",
                 f"`{command}`: {r['chunks']:,} `Chunk` objects, parsed from JSON as `Corpus.load` parses them, with "
                 f"texts cut from the 385 Acts' lines (at most 1,200 characters, {r['text_chars']:.0f} on average), "
                 f"hold {r['mib']:,.0f} MiB of the process's RSS: {r['mib'] * 1024 / r['chunks']:.2f} KiB a chunk."],
                args.out)  # fmt: skip
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    old_module = args.work / "bm25_old.py"
    old_module.write_text(subprocess.run(["git", "show", f"{args.old_ref}:api/tools/bm25.py"], cwd=ROOT,
                                         check=True, capture_output=True, text=True).stdout)  # fmt: skip
    old_commit = subprocess.run(["git", "rev-parse", "--short", args.old_ref], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip()  # fmt: skip
    qs = shared_questions(165)
    load = os.getloadavg()
    command = " ".join(["python", "benchmarks/bm25_memory.py", *sys.argv[1:]])
    lines = ["# A replica's memory for the lexical index: JSON token strings against memory-mapped token arrays", "",
             f"- `{command}` ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC); {os.cpu_count()} cores, load "
             f"average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the start (a shared machine: times are "
             "upper bounds)",
             f"- `old`: `api/tools/bm25.py` of {old_commit} loading `indexes/bm25.json`; `new`: this checkout loading "
             "`indexes/bm25.npz` (memory-mapped); each load in a fresh spawned process, one after the other; backend "
             "bm25s, default analyzer",
             f"- {len(qs)} queries (zim_qa + first 165 ObliQA questions), top 10, one thread, 20 warm-up queries, "
             f"{PASSES} passes timed",
             "- RSS before = the interpreter and its imports; after = once the index is loaded and its frequencies "
             "built (as `load_lexical_index` returns); anon / file = of RSS after, the process's own memory and "
             "pages mapped from files; peak = VmHWM over the load",
             "- latency: in the `old` process after its memory is read, with the new index loaded beside it, the two "
             "answering each query in turn (alternating which goes first)", ""]  # fmt: skip
    spawn = multiprocessing.get_context("spawn")
    rows: list[str] = []
    same: dict[int, int] = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            made = pool.submit(write_artifacts, args.data_dir, size, args.work).result()
        if not rows:
            lines.insert(
                5,
                f"- source: {made['source']}: {made['source_chunks']:,} chunks, "
                f"{made['source_vocabulary']:,} distinct tokens, {made['source_per_chunk']:.1f} tokens "
                "a chunk; synthetic chunks resampled from its chunk lengths and its tokens by frequency",
            )
        results = {}
        for variant in ("new", "old"):  # old last: it then times both side by side
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:  # a fresh interpreter: its own peak
                results[variant] = pool.submit(
                    load_and_query, variant, str(old_module), str(args.work / f"{size}-{variant}"), qs,
                    str(args.work / f"{size}-new"),
                ).result()  # fmt: skip
            print(f"{size} {variant}: {results[variant]}", flush=True)
        latency = results["old"]["latency"]
        for variant in ("old", "new"):
            r = results[variant]
            before, after = r["before"], r["after"]
            rows.append(f"| {size:,} | {made['tokens']:,} | {variant} | {made[variant + '_mib']:,.0f} "
                        f"| {r['load_s']:.1f} | {before['VmRSS']:,.0f} | {after['VmRSS']:,.0f} "
                        f"| {after['RssAnon']:,.0f} | {after['RssFile']:,.0f} | {r['peak']:,.0f} "
                        f"| {latency[variant][0]:.2f} | {latency[variant][1]:.2f} |")  # fmt: skip
            print(rows[-1], flush=True)
        same[size] = results["old"]["same"]
        for variant, key in (("old", bm25.LEGACY_BM25_KEY), ("new", bm25.BM25_KEY)):
            (args.work / f"{size}-{variant}" / "objects" / key).unlink()
    lines += ["| chunks | tokens | artifact | artifact MiB | load s | RSS before MiB | RSS after MiB | anon MiB "
              "| file MiB | peak MiB | query P50 ms | query P95 ms |",
              "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
              *rows, ""]  # fmt: skip
    lines += [f"Same top 10 (chunk ids and scores) from old and new: {n} of {len(qs)} queries at {size:,} chunks."
              for size, n in same.items()]  # fmt: skip
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
