"""What the ObliQA misses are: where each gold passage sits in the tuned hybrid list, how a question's several gold
passages relate, what a perfect reordering of the candidates could reach, and a seeded sample of one-gold questions
missed at 10, printed for a person to judge.

Reads the rankings ``benchmarks/learned_fusion.py --tuned`` keeps under its ``--work`` (every development question
ranked by the dense model tuned on the other fold, fused by RRF with BM25 stemmed and paired; and the packaged lists
the learned fusion reads beside it), so it re-ranks nothing. With ``--dense`` it also embeds every passage with the
packaged model (~3 min on 2 cores) to say how close a question's gold passages lie to each other in that space.
Prints Markdown; the judgements of the sample are a person's and live in ``results/obliqa_misses.md``.

    python -m benchmarks.learned_fusion --work /tmp/lf --tuned   # once, ~40 min
    python -m benchmarks.obliqa_misses --work /tmp/lf --sample 20 [--dense]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from api.evaluation import Question, load_questions, unit_of
from api.tools.embeddings import load_sentence_transformer
from benchmarks.learned_fusion import LISTS, TUNED_FUSED
from benchmarks.tune_retrieval import DATA, load

BUCKETS = ("1-10", "11-20", "21-30", "31+", "not in the list")


def bucket(rank: int | None) -> str:
    if rank is None:
        return BUCKETS[-1]
    return BUCKETS[min((rank - 1) // 10, 3)]


def rank_table(questions: Sequence[Question], ranked: dict[str, list[str]]) -> list[str]:
    """Where each gold passage sits in its question's list, by how many gold passages the question has."""
    lines = ["| questions | gold passages | " + " | ".join(BUCKETS) + " |", "| --- | ---: |" + " ---: |" * len(BUCKETS)]
    for name, keep in (("1 gold", lambda n: n == 1), ("2+ gold", lambda n: n > 1), ("all", lambda n: True)):
        counts: Counter[str] = Counter()
        for q in questions:
            if keep(len(q.gold)):
                order = ranked[q.qid]
                counts.update(bucket(order.index(g) + 1 if g in order else None) for g in q.gold)
        total = sum(counts.values())
        shares = " | ".join(f"{counts[b] / total:.3f}" for b in BUCKETS)
        lines.append(f"| {name} | {total} | {shares} |")
    return lines


def words(text: str) -> set[str]:
    return set(text.lower().split())


def structure(
    questions: Sequence[Question], ranked: dict[str, list[str]], position: dict[str, int], document: dict[str, str],
    text: dict[str, str],
) -> list[str]:  # fmt: skip
    """How a question's gold passages relate: one document or several, consecutive or apart, and how much of a found
    gold passage's words a missed one shares."""
    multi = [q for q in questions if len(q.gold) > 1]
    one_document = sum(len({document[g] for g in q.gold}) == 1 for q in multi)
    gaps: Counter[str] = Counter()
    for q in multi:
        at = sorted(position[g] for g in q.gold)
        for a, b in itertools.pairwise(at):
            gap = "next to each other" if b - a == 1 else "2-10 apart" if b - a <= 10 else "further or another document"
            gaps[gap] += 1
    sizes = Counter(len(q.gold) for q in questions)
    overlap = []
    for q in multi:
        found = [words(text[g]) for g in q.gold if g in ranked[q.qid][:10]]
        for missed in (words(text[g]) for g in q.gold if g not in ranked[q.qid][:10]):
            overlap += [max(len(missed & f) / len(missed | f) for f in found)] if found else []
    return [
        f"- gold passages per question: {', '.join(f'{n}: {c}' for n, c in sorted(sizes.items()))}",
        f"- of the {len(multi)} questions with 2+ gold, {one_document} have them all in one document",
        "- consecutive gold passages (in corpus order), "
        + ", ".join(f"{k}: {v}" for k, v in gaps.most_common())
        + f" (of {sum(gaps.values())} gaps)",
        f"- a gold passage missed at 10 beside one found: median Jaccard word overlap with the found one "
        f"{statistics.median(overlap):.2f} ({len(overlap)} passages; over 0.5: {sum(o > 0.5 for o in overlap)})",
    ]


def ceiling(questions: Sequence[Question], lists: dict[str, dict[str, list[str]]], depth: int = 30) -> list[str]:
    """R@10 that a perfect reordering of the candidates would reach: each question's gold passages found anywhere in
    the top ``depth`` of any of ``lists``, at most 10 of them counted."""
    lines = ["| questions | count | perfect reordering, R@10 |", "| --- | ---: | ---: |"]
    for name, keep in (("1 gold", lambda n: n == 1), ("2+ gold", lambda n: n > 1), ("all", lambda n: True)):
        chosen = [q for q in questions if keep(len(q.gold))]
        found = [set().union(*(set(ranked[q.qid][:depth]) for ranked in lists.values())) for q in chosen]
        recall = sum(min(len(q.gold & f), 10) / len(q.gold) for q, f in zip(chosen, found, strict=True))
        lines.append(f"| {name} | {len(chosen)} | {recall / len(chosen):.3f} |")
    return lines


def closeness(questions: Sequence[Question], ranked: dict[str, list[str]], text: dict[str, str]) -> list[str]:
    """How close a question's gold passages lie to each other for the packaged model, against the wrong passages in
    its top 10; and where a gold passage missed at 10 ranks among a found one's nearest passages (would expanding a
    hit to the passages most like it find the rest?)."""
    units = list(text)
    at = {u: i for i, u in enumerate(units)}
    vectors = load_sentence_transformer().encode(
        [text[u] for u in units], batch_size=64, normalize_embeddings=True, show_progress_bar=False
    )
    gold_pairs: list[float] = []
    gold_wrong: list[float] = []
    nearest: list[int] = []
    for q in (q for q in questions if len(q.gold) > 1):
        top = ranked[q.qid][:10]
        golds = [at[g] for g in q.gold]
        gold_pairs += [float(vectors[a] @ vectors[b]) for a, b in itertools.combinations(golds, 2)]
        gold_wrong += [float(vectors[g] @ vectors[at[u]]) for g in golds for u in top if u not in q.gold]
        found = [at[u] for u in top if u in q.gold]
        if found:
            order = np.argsort(-(vectors @ vectors[found[0]]))
            rank = {units[i]: r for r, i in enumerate(order)}  # 0 is the found passage itself
            nearest += [rank[g] for g in q.gold if g not in top]
    within = ", ".join(f"{k}: {sum(r <= k for r in nearest)}" for k in (5, 10, 20, 50))
    return [
        f"- cosine between two gold passages of one question: median {statistics.median(gold_pairs):.3f} "
        f"({len(gold_pairs)} pairs); between a gold passage and a wrong one in the top 10: median "
        f"{statistics.median(gold_wrong):.3f} ({len(gold_wrong)} pairs)",
        f"- a gold passage missed at 10, among the nearest passages to the first gold one found ({len(nearest)} "
        f"passages): within {within}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/gweta-learned-fusion"))
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--dense", action="store_true", help="embed every passage to measure gold closeness")
    args = parser.parse_args()
    path = args.work / "obliqa_tuned_rankings.json"
    if not path.exists():
        sys.exit(f"{path} is missing: run 'python -m benchmarks.learned_fusion --work {args.work} --tuned' first")
    chunks, _, _ = load("obliqa", {str(i) for i in range(1, 41)})
    questions, _ = load_questions(DATA / "obliqa" / "questions.jsonl")
    tuned = json.loads(path.read_text())
    rows = tuned[TUNED_FUSED]
    ranked = {q.qid: rows[i] for i, q in enumerate(questions)}
    packaged = json.loads((args.work / "obliqa_rankings.json").read_text())
    candidates = {
        name: {q.qid: lists[i] for i, q in enumerate(questions)}
        for name, lists in [("tuned dense", tuned["tuned dense"]), *((n, packaged[n]) for n in LISTS)]
    }
    position: dict[str, int] = {}
    document: dict[str, str] = {}
    text: dict[str, str] = {}
    for chunk in chunks:
        unit = unit_of(chunk, True)
        if unit not in position:
            position[unit], document[unit] = len(position), chunk.doc_key
            text[unit] = f"{chunk.section_heading} | {chunk.text}".replace("\n", " ").replace("\t", " ")

    print(f"## Where the gold passages sit: tuned dense + BM25 by RRF, {len(questions)} questions, two folds\n")
    print("\n".join(rank_table(questions, ranked)))
    print("\n## How a question's gold passages relate\n")
    print("\n".join(structure(questions, ranked, position, document, text)))
    if args.dense:
        print("\n".join(closeness(questions, ranked, text)))
    print(f"\n## What a perfect reordering of the candidates could reach ({', '.join(candidates)}; 30 deep each)\n")
    print("\n".join(ceiling(questions, candidates)))
    single = [q for q in questions if len(q.gold) == 1]
    missed = [q for q in single if next(iter(q.gold)) not in ranked[q.qid][:10]]
    print(f"\n## A sample of one-gold questions missed at 10 ({args.sample} of {len(missed)}, seed {args.seed})\n")
    for n, q in enumerate(random.Random(args.seed).sample(missed, min(args.sample, len(missed))), 1):
        gold, order = next(iter(q.gold)), ranked[q.qid]
        rank = order.index(gold) + 1 if gold in order else "-"
        print(f"{n}. **{q.text}**  \n   gold (rank {rank}): {text[gold][:300]}  \n   first: {text[order[0]][:300]}\n")


if __name__ == "__main__":
    main()
