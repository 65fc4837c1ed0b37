"""More hard negatives per labelled pair: does the tuned dense model, and the hybrid over it, gain from three wrong
passages per (question, gold passage) instead of the one ``labelled_pairs`` gives?

The same two folds and settings as ``benchmarks/tune_labelled.py`` (2 epochs, batch 32, learning rate 2e-5, seed 0,
MultipleNegativesRankingLoss): each question's negatives are BM25's best wrong passage, the packaged dense model's best
wrong passage and BM25's second, each passage by its first chunk. The training loop is ``ingestion.tuning.train``'s
with one column per negative (``train`` takes one). The one-negative rows are the rankings that
``benchmarks/learned_fusion.py --tuned`` kept (``tune_labelled``'s training), so only the three-negative models are
trained here (~35 min on 2 cores).
Prints Markdown; progress goes to stderr.

    python -m benchmarks.tune_negatives --work /tmp/lf
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from api.evaluation import Question, load_questions, unit_of
from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.tools.bm25 import Bm25sIndex
from api.tools.embeddings import load_sentence_transformer
from benchmarks.learned_fusion import FUSED, TUNED_FUSED
from benchmarks.tune_labelled import log, rankings
from benchmarks.tune_reranker import recall_at
from benchmarks.tune_retrieval import DATA, load
from ingestion.pairs import split_questions

Group = tuple[str, str, list[str]]  # question, gold passage, wrong passages (as embedded)


def groups(
    questions: Sequence[Question], chunks: Sequence[Chunk], dense: dict[str, list[str]], negatives: int
) -> list[Group]:
    """One group per (question, gold passage): BM25's best wrong passage, the packaged dense model's, BM25's next."""
    first: dict[str, Chunk] = {}
    for chunk in chunks:
        first.setdefault(unit_of(chunk, True), chunk)
    by_id = {c.chunk_id: c for c in chunks}
    index = Bm25sIndex.of_chunks(chunks, BM25Settings())
    out = []
    for q in questions:
        lexical = dict.fromkeys(unit_of(by_id[h.chunk_id], True) for h in index._search(q.text, 30))
        bm25 = [u for u in lexical if u not in q.gold]
        wrong = list(dict.fromkeys([*bm25[:1], *[u for u in dense[q.qid] if u not in q.gold][:1], *bm25[1:]]))
        if len(wrong) >= negatives:
            texts = [first[u].embed_text for u in wrong[:negatives]]
            out += [(q.text, first[g].embed_text, texts) for g in sorted(q.gold) if g in first]
    return out


def train(model: Any, data: Sequence[Group], negatives: int, epochs: int = 2, batch_size: int = 32) -> int:
    """``ingestion.tuning.train`` with ``negatives`` wrong-passage columns; the number of steps."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(0)
    loss_fn = MultipleNegativesRankingLoss(model)
    encode = getattr(model, "preprocess", None) or model.tokenize
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    rng, steps = random.Random(0), 0
    model.train()
    for _ in range(epochs):
        order = list(data)
        rng.shuffle(order)
        for at in range(0, len(order), batch_size):
            batch = order[at : at + batch_size]
            if len(batch) < 2:
                continue
            columns = [[g[0] for g in batch], [g[1] for g in batch]]
            columns += [[g[2][j] for g in batch] for j in range(negatives)]
            loss = loss_fn([encode(column) for column in columns], torch.empty(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
    model.eval()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/gweta-learned-fusion"))
    parser.add_argument("--negatives", type=int, default=3)
    args = parser.parse_args()
    kept = args.work / "obliqa_tuned_rankings.json"
    if not kept.exists():
        sys.exit(f"{kept} is missing: run 'python -m benchmarks.learned_fusion --work {args.work} --tuned' first")
    chunks, _, _ = load("obliqa", {str(i) for i in range(1, 41)})
    questions, _ = load_questions(DATA / "obliqa" / "questions.jsonl")
    folds = split_questions(questions, share=0.5)
    at = {q.qid: i for i, q in enumerate(questions)}
    packaged = json.loads((args.work / "obliqa_rankings.json").read_text())["dense"]
    dense = {q.qid: packaged[at[q.qid]] for q in questions}
    ours: dict[str, list[list[str]]] = {"dense": [[] for _ in questions], "fused": [[] for _ in questions]}
    for fit_on, score_on in ((folds[1], folds[0]), (folds[0], folds[1])):
        data = groups(fit_on, chunks, dense, args.negatives)
        model = load_sentence_transformer()
        start = time.perf_counter()
        steps = train(model, data, args.negatives)
        log(f"{args.negatives} negatives: {len(data)} groups, {steps} steps in {time.perf_counter() - start:.0f}s")
        ranked = rankings(chunks, [q.text for q in score_on], True, model)
        for q, d, f in zip(score_on, ranked["dense"], ranked[FUSED], strict=True):
            ours["dense"][at[q.qid]], ours["fused"][at[q.qid]] = d, f
    one = json.loads(kept.read_text())
    gold = [q.gold for q in questions]

    def mrr(order: Sequence[Sequence[str]]) -> float:
        hits = (next((1 / r for r, u in enumerate(o[:10], 1) if u in g), 0.0) for o, g in zip(order, gold, strict=True))
        return sum(hits) / len(gold)

    print(
        f"## ObliQA development questions: {len(questions)}, two folds (each scored by the model that did not see it)\n"
    )
    print("| tuned dense model | R@10 | R@20 | MRR@10 |\n| --- | ---: | ---: | ---: |")
    for name, order in (
        ("1 negative (`labelled_pairs`): dense", one["tuned dense"]),
        ("1 negative: fused with BM25 stemmed + paired (RRF)", one[TUNED_FUSED]),
        (f"{args.negatives} negatives: dense", ours["dense"]),
        (f"{args.negatives} negatives: fused with BM25 stemmed + paired (RRF)", ours["fused"]),
    ):
        print(f"| {name} | {recall_at(order, gold, 10):.3f} | {recall_at(order, gold, 20):.3f} | {mrr(order):.3f} |")


if __name__ == "__main__":
    main()
