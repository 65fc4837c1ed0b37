"""What the ObliQA misses are: where each gold passage sits in the tuned hybrid list, how a question's several gold
passages relate, and a seeded sample of one-gold questions missed at 10, printed for a person to judge.

Reads the rankings ``benchmarks/learned_fusion.py --tuned`` keeps under its ``--work`` (every development question
ranked by the dense model tuned on the other fold, fused by RRF with BM25 stemmed and paired), so it re-ranks nothing.
Prints Markdown; the judgements of the sample are a person's and live in ``results/obliqa_misses.md``.

    python -m benchmarks.learned_fusion --work /tmp/lf --tuned   # once, ~40 min
    python -m benchmarks.obliqa_misses --work /tmp/lf --sample 20
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

from api.evaluation import Question, load_questions, unit_of
from benchmarks.learned_fusion import TUNED_FUSED
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/gweta-learned-fusion"))
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    path = args.work / "obliqa_tuned_rankings.json"
    if not path.exists():
        sys.exit(f"{path} is missing: run 'python -m benchmarks.learned_fusion --work {args.work} --tuned' first")
    chunks, _, _ = load("obliqa", {str(i) for i in range(1, 41)})
    questions, _ = load_questions(DATA / "obliqa" / "questions.jsonl")
    rows = json.loads(path.read_text())[TUNED_FUSED]
    ranked = {q.qid: rows[i] for i, q in enumerate(questions)}
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
    single = [q for q in questions if len(q.gold) == 1]
    missed = [q for q in single if next(iter(q.gold)) not in ranked[q.qid][:10]]
    print(f"\n## A sample of one-gold questions missed at 10 ({args.sample} of {len(missed)}, seed {args.seed})\n")
    for n, q in enumerate(random.Random(args.seed).sample(missed, min(args.sample, len(missed))), 1):
        gold, order = next(iter(q.gold)), ranked[q.qid]
        rank = order.index(gold) + 1 if gold in order else "-"
        print(f"{n}. **{q.text}**  \n   gold (rank {rank}): {text[gold][:300]}  \n   first: {text[order[0]][:300]}\n")


if __name__ == "__main__":
    main()
