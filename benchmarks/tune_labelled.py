"""Tuning on labelled questions (``gweta tune --questions``), scored on questions it never saw: two-fold
cross-validation over ObliQA's development questions, then the fold-one model on the Zimbabwe sample (the other
development set).

Each fold trains the packaged MiniLM on the pairs ``labelled_pairs`` makes from half of the questions (the question,
its gold passage, BM25's best wrong passage) with the same ``train`` as ``gweta tune``, re-embeds the whole corpus, and
scores the other half: dense alone, BM25 (default, and stemmed with adjacent-word pairs), and RRF fusion. Searched
in memory (numpy cosine, bm25s), like ``benchmarks/tune_retrieval.py``. Prints Markdown; progress goes to stderr.

    python -m benchmarks.tune_labelled --epochs 2 --batch-size 32
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from api.evaluation.core import Question, load_questions
from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.text.words import tokenize
from api.tools.bm25 import Bm25sIndex, lexical_text
from api.tools.embeddings import load_sentence_transformer
from benchmarks.tune_retrieval import DATA, POOL, load, print_scores, units
from ingestion.pairs import labelled_pairs, split_questions
from ingestion.tuning import TrainStats, fuse, train

LEXICAL = {"bm25": BM25Settings(), "bm25 stem+bigrams": BM25Settings(stem=True, bigrams=True)}
WEIGHTS = (0.5, 1.0, 2.0)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rankings(
    chunks: Sequence[Chunk], texts: Sequence[str], by_source: bool, model: object | None
) -> dict[str, list[list[str]]]:
    """Ranked units per question: each BM25 variant, and dense with ``model`` (when given)."""
    ids = [c.chunk_id for c in chunks]
    tokens = [tokenize(lexical_text(c)) for c in chunks]
    pos = {cid: i for i, cid in enumerate(ids)}
    out: dict[str, list[list[str]]] = {}
    for name, cfg in LEXICAL.items():
        index = Bm25sIndex(ids, tokens, cfg)
        out[name] = [units(chunks, [pos[h.chunk_id] for h in index._search(q, POOL)], by_source) for q in texts]
    if model is not None:
        start = time.perf_counter()
        vectors = model.encode([c.embed_text for c in chunks], batch_size=32, normalize_embeddings=True)  # type: ignore[attr-defined]
        log(f"embedded {len(chunks)} chunks in {time.perf_counter() - start:.0f}s")
        queries = model.encode(list(texts), batch_size=32, normalize_embeddings=True)  # type: ignore[attr-defined]
        out["dense"] = [units(chunks, np.argsort(-(vectors @ q))[:POOL], by_source) for q in queries]
        for name in LEXICAL:
            for weight in WEIGHTS:
                out[f"fused: dense x{weight} + {name}"] = [
                    fuse(d, s, weight) for d, s in zip(out["dense"], out[name], strict=True)
                ]
    return out


def tuned_on(
    chunks: Sequence[Chunk], questions: Sequence[Question], epochs: int = 2, batch_size: int = 32,
    seconds: float = 3600.0, learning_rate: float = 2e-5,
) -> tuple[Any, TrainStats, int]:  # fmt: skip
    """The packaged model trained on ``questions``' labelled pairs as ``gweta tune --questions`` trains it; with the
    training's figures and the number of pairs."""
    pairs = labelled_pairs(chunks, questions)
    model = load_sentence_transformer()
    return model, train(model, pairs, epochs, batch_size, seconds, learning_rate), len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--max-minutes", type=float, default=60.0, help="training time limit per fold")
    args = parser.parse_args()

    chunks, _, _ = load("obliqa", {str(i) for i in range(1, 41)})
    questions, _ = load_questions(DATA / "obliqa" / "questions.jsonl")
    one, two = split_questions(questions, share=0.5)
    log(f"obliqa: {len(chunks)} chunks, {len(questions)} questions, folds of {len(one)} and {len(two)}")
    texts = [q.text for q in questions]
    rows: dict[str, list[list[str]]] = {}
    packaged = rankings(chunks, texts, True, load_sentence_transformer())
    rows |= {f"{name} (packaged model)" if "dense" in name else name: r for name, r in packaged.items()}
    tuned: dict[str, list[list[str]]] = {}
    at = {q.qid: i for i, q in enumerate(questions)}
    notes = []
    first_model = None
    for fold, (fit_on, score_on) in enumerate(((two, one), (one, two)), 1):
        model, stats, pairs = tuned_on(
            chunks, fit_on, args.epochs, args.batch_size, args.max_minutes * 60, args.learning_rate
        )
        log(f"fold {fold}: {pairs} pairs, {stats.steps} steps in {stats.seconds}s ({stats.stopped_by})")
        notes.append(
            f"- fold {fold}: trained on {len(fit_on)} questions ({pairs} pairs), {stats.steps} steps in "
            f"{stats.seconds:.0f} s (stopped by {stats.stopped_by}), scored on the other {len(score_on)}"
        )
        ranked = rankings(chunks, [q.text for q in score_on], True, model)
        for name, r in ranked.items():
            if "dense" in name:
                merged = tuned.setdefault(f"{name} (tuned on the other fold)", [[] for _ in questions])
                for q, one_ranking in zip(score_on, r, strict=True):
                    merged[at[q.qid]] = one_ranking
        if first_model is None:
            first_model = model
    rows |= tuned
    scored = [(q.text, q.gold, "all") for q in questions]
    scored += [(q.text, q.gold, f"fold {f}") for f, fold in ((1, one), (2, two)) for q in fold]
    rows = {name: r + [r[at[q.qid]] for q in (*one, *two)] for name, r in rows.items()}
    title = "obliqa (every question scored by the model that did not see it)"
    print_scores(title, len(chunks), scored, rows, len(questions))
    print("\n" + "\n".join(notes))
    print(f"- epochs, batch size, learning rate: {args.epochs}, {args.batch_size}, {args.learning_rate}")

    zim_chunks, zim_questions, _ = load("zim_qa", set())
    log(f"zim_qa sample: {len(zim_chunks)} chunks, {len(zim_questions)} questions with gold")
    zim_texts = [q for q, _, _ in zim_questions]
    zim_rows = {f"{k} (packaged model)" if "dense" in k else k: v
                for k, v in rankings(zim_chunks, zim_texts, False, load_sentence_transformer()).items()}  # fmt: skip
    zim_rows |= {f"{k} (tuned on ObliQA fold 1's training half)": v
                 for k, v in rankings(zim_chunks, zim_texts, False, first_model).items() if "dense" in k}  # fmt: skip
    print()
    print_scores(
        "zimbabwe sample: the ObliQA-tuned model on the other corpus", len(zim_chunks), zim_questions, zim_rows
    )


if __name__ == "__main__":
    main()
