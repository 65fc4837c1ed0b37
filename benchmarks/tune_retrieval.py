"""Packaged vs tuned MiniLM, default vs tuned BM25, and the fusion ``gweta tune`` chooses, on a development set.

The corpus (a sample of it: the documents named, parsed and chunked by the real parser and chunker) is searched in
memory (numpy cosine, bm25s), so the figures measure the models and parameters, not Milvus. Tuning uses only pairs
mined from that corpus (``ingestion.tuning``); the questions are read only to score. Prints Markdown.

    python -m benchmarks.tune_retrieval obliqa --docs 10,19,34 --max-minutes 10 --max-pairs 1500
    python -m benchmarks.tune_retrieval zim_qa --max-minutes 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from api.evaluation.core import section_unit
from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.text.words import tokenize
from api.tools.bm25 import Bm25sIndex, lexical_text
from api.tools.embeddings import load_sentence_transformer
from ingestion.chunking import chunk_document
from ingestion.pairs import mine_pairs, split_pairs
from ingestion.parsers import parse
from ingestion.tuning import choose_fusion, fit_bm25, fuse, train

DATA = Path(os.environ.get("GWETA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
OURS = Path(__file__).resolve().parents[1] / "evaluation" / "dev_questions.jsonl"
POOL = 30


def load(name: str, docs: set[str]) -> tuple[list[Chunk], list[tuple[str, frozenset[str], str]], bool]:
    """Chunks of the sample corpus, and (question, gold units, kind) whose gold lies wholly inside it."""
    questions = []
    if name == "obliqa":
        rows = [json.loads(line) for line in (DATA / "obliqa" / "corpus.jsonl").read_text().splitlines()]
        rows = [r for r in rows if str(r["document_id"]) in docs]
        source, by_source = "obliqa-sample.jsonl", True
        ids = {r["id"] for r in rows}
        for line in (DATA / "obliqa" / "questions.jsonl").read_text().splitlines():
            q = json.loads(line)
            if set(q["gold_ids"]) <= ids:
                questions.append((q["question"], frozenset(q["gold_ids"]), "all"))
    else:  # zim_qa's dev questions and ours (evaluation/dev_questions.jsonl), kinds kept apart by source
        records = [
            {**json.loads(line), "source": source}
            for source, path in (("zim_qa", DATA / "zim_qa" / "questions.jsonl"), ("ours", OURS))
            for line in path.read_text().splitlines()
        ]
        gold_laws = {g["law_id"] for r in records for g in r.get("gold", [])}
        acts = (DATA / "corpus" / "zimbabwe_legislation" / "acts.jsonl").read_text().splitlines()
        rows = [r for r in map(json.loads, acts) if r["id"] in gold_laws or r["id"] in docs]
        source, by_source = "zim-sample.jsonl", False
        for r in records:
            if r.get("gold"):
                gold = frozenset(f"{g['law_id']}#{g['section']}" for g in r["gold"])
                questions.append((r["question"], gold, f"{r['source']}/{r.get('kind', 'all')}"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source
        path.write_text("\n".join(json.dumps(r) for r in rows))
        documents = parse(path, path.read_bytes())
    tokenizer = load_sentence_transformer().tokenizer
    count = lambda text: len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])  # noqa: E731
    chunks = [c for d in documents for c in chunk_document(d, count)]
    return chunks, questions, by_source


def units(chunks: Sequence[Chunk], order: Sequence[int], by_source: bool) -> list[str]:
    seen: dict[str, None] = {}
    for i in order:
        seen.setdefault(chunks[i].source_id if by_source else section_unit(chunks[i].section_id), None)
    return list(seen)


def score(rankings: Sequence[Sequence[str]], gold: Sequence[frozenset[str]]) -> tuple[float, float]:
    recall = mrr = 0.0
    for ranked, want in zip(rankings, gold, strict=True):
        top = ranked[:10]
        recall += len(want & set(top)) / len(want)
        mrr += next((1 / r for r, u in enumerate(top, 1) if u in want), 0.0)
    return recall / len(gold), mrr / len(gold)


def print_scores(
    corpus: str, n_chunks: int, questions: Sequence[tuple[str, frozenset[str], str]], rows: dict[str, list[list[str]]],
    count: int | None = None,
) -> None:  # fmt: skip
    """The Markdown table of R@10 / MRR@10 per question kind for each configuration's rankings, then the kinds
    (``count``: the questions, when some are listed under two kinds)."""
    kinds = sorted({k for _, _, k in questions})
    gold = [g for _, g, _ in questions]
    print(f"## {corpus}: {n_chunks} chunks, {count or len(questions)} questions with gold\n")
    print("| configuration | " + " | ".join(f"R@10 {k} | MRR@10 {k}" for k in kinds) + " |")
    print("|" + " --- |" * (1 + 2 * len(kinds)))
    for name, ranked in rows.items():
        cells = []
        for kind in kinds:
            pick = [i for i, (_, _, k) in enumerate(questions) if k == kind]
            r, m = score([ranked[i] for i in pick], [gold[i] for i in pick])
            cells.append(f"{r:.3f} | {m:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nkinds: {', '.join(f'{k} {sum(q[2] == k for q in questions)}' for k in kinds)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", choices=["obliqa", "zim_qa"])
    parser.add_argument("--docs", default="", help="ObliQA document ids (or extra Act ids) in the sample")
    parser.add_argument("--max-minutes", type=float, default=10.0)
    parser.add_argument("--max-pairs", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--bm25-only", action="store_true", help="Skip the embedders (a corpus too big to embed twice)")
    args = parser.parse_args()
    log = lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)  # noqa: E731

    chunks, questions, by_source = load(args.corpus, set(filter(None, args.docs.split(","))))
    log(f"{len(chunks)} chunks, {len(questions)} questions with gold")
    ids = [c.chunk_id for c in chunks]
    tokens = [tokenize(lexical_text(c)) for c in chunks]
    pairs = mine_pairs(chunks, args.max_pairs)
    fit_pairs, held = split_pairs(pairs)
    log(f"{len(pairs)} pairs mined ({len(fit_pairs)} train, {len(held)} held out)")
    t = time.perf_counter()
    fit = fit_bm25(chunks, fit_pairs[:500], held)
    bm25_fit_s = time.perf_counter() - t
    log(f"bm25 fit k1={fit.k1} b={fit.b} in {bm25_fit_s:.0f}s")

    def bm25_rank(k1: float, b: float, texts: Sequence[str]) -> list[list[str]]:
        index = Bm25sIndex(ids, tokens, BM25Settings(k1=k1, b=b))
        pos = {cid: i for i, cid in enumerate(ids)}
        return [units(chunks, [pos[h.chunk_id] for h in index._search(q, POOL)], by_source) for q in texts]

    texts = [q for q, _, _ in questions]
    rows: dict[str, list[list[str]]] = {
        "bm25 default (k1 1.5, b 0.75)": bm25_rank(1.5, 0.75, texts),
        f"bm25 tuned (k1 {fit.k1}, b {fit.b})": bm25_rank(fit.k1, fit.b, texts),
    }
    timings: dict[str, float | str] = {"bm25 fit (s)": bm25_fit_s}
    model = load_sentence_transformer()
    embeds: dict[str, np.ndarray] = {}
    steps = itertools.count(1)

    def progress(stage: str, advance: int, total: int | None) -> None:
        if advance and (step := next(steps)) % 10 == 0:
            log(f"{stage}: {step}")

    for label in () if args.bm25_only else ("packaged", "tuned"):
        if label == "tuned":
            stats = train(
                model, fit_pairs, args.epochs, args.batch_size, args.max_minutes * 60, args.learning_rate, 0, progress
            )
            timings["training (s)"] = stats.seconds
            timings["training steps"] = stats.steps
            timings["training pairs seen"] = stats.steps * args.batch_size
            timings["epochs, batch size, learning rate"] = f"{args.epochs}, {args.batch_size}, {args.learning_rate}"
            timings["loss first / last 10 steps"] = (
                f"{np.mean(stats.losses[:10]):.3f} / {np.mean(stats.losses[-10:]):.3f}" if stats.losses else "-"
            )
            log(f"trained {stats.steps} steps in {stats.seconds}s, stopped by {stats.stopped_by}")
        t = time.perf_counter()
        doc_vectors = model.encode([c.embed_text for c in chunks], batch_size=32, normalize_embeddings=True)
        timings[f"embed {len(chunks)} chunks, {label} (s)"] = round(time.perf_counter() - t, 1)
        log(f"embedded {label} in {timings[f'embed {len(chunks)} chunks, {label} (s)']}s")
        queries = model.encode(texts, batch_size=32, normalize_embeddings=True)
        rows[f"dense {label}"] = [units(chunks, np.argsort(-(doc_vectors @ q))[:POOL], by_source) for q in queries]
        held_q = model.encode([p.query for p in held], batch_size=32, normalize_embeddings=True)
        embeds[label] = doc_vectors
        held_dense = [
            [chunks[i].section_id or chunks[i].chunk_id for i in np.argsort(-(doc_vectors @ q))[:POOL]] for q in held_q
        ]
        held_dense = [list(dict.fromkeys(r)) for r in held_dense]
        index = Bm25sIndex(ids, tokens, BM25Settings(k1=fit.k1, b=fit.b))
        pos = {cid: i for i, cid in enumerate(ids)}
        held_lex = [
            list(dict.fromkeys(chunks[pos[h.chunk_id]].section_id for h in index._search(p.query, POOL))) for p in held
        ]
        weight = choose_fusion(held_dense, held_lex, [p.section_id for p in held])
        lexical = rows[f"bm25 tuned (k1 {fit.k1}, b {fit.b})"]
        rows[f"fused RRF: dense {label} x1 + bm25 tuned x1"] = [
            fuse(d, s, 1.0) for d, s in zip(rows[f"dense {label}"], lexical, strict=True)
        ]
        rows[f"fused RRF: dense {label} x{weight} (chosen on mined pairs) + bm25 tuned"] = [
            fuse(d, s, weight) for d, s in zip(rows[f"dense {label}"], lexical, strict=True)
        ]

    print_scores(args.corpus, len(chunks), questions, rows)
    mined = ", ".join(f"{k} {sum(p.kind == k for p in pairs)}" for k in ("heading", "definition", "sentence"))
    print(f"pairs mined: {len(pairs)} ({len(fit_pairs)} train, {len(held)} held out), by kind: {mined}")
    print(f"held-out mined pairs MRR@10, bm25 default {fit.mrr_default:.3f}, tuned {fit.mrr_tuned:.3f}")
    for key, value in timings.items():
        print(f"- {key}: {value}")


if __name__ == "__main__":
    main()
