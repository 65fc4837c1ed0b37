"""Why the answerability judge refuses lay situations whose gold provision is in the evidence, and what a second
model fitted on them would trade.

Runs the service's retrieval (its settings, cache off) for the lay questions (``evaluation/lay_questions.jsonl``:
``split`` dev and heldout) and the development questions in the law's words (``evaluation/dev_questions.jsonl``),
computes the judge's evidence features and the packaged judge's verdict, and reports, development and held-out
apart:

1. each answerable question by where its gold provision is (the first hit, lower in the evidence, not there) and
   whether the judge answers; the feature that pulls hardest against the ones refused with the gold first;
2. each feature's median per group (gold first, lower, absent; unanswerable);
3. a second logistic model fitted on the development lay questions only (label: a gold provision is in the
   evidence), answering when the packaged judge or it does: for each budget of development near misses (the
   unanswerable situations) the two may answer together, the threshold chosen on the development questions, and
   what that gives on the held-out fifth, never seen by the fit. Direct questions keep the packaged judge's answers.

    python benchmarks/judge_gap.py --data-dir D [--out benchmarks/results/judge_gap.md]

Nothing is written to the packaged judge: this measures a candidate.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from statistics import median

import numpy as np
from answerability_fit import LOGISTIC, Item, collect, fit, load, predict
from report import publish

from api.composer.answerability import CLIP, AnswerabilityModel, load_answerability_model, standard

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("gold first", "gold lower", "gold absent", "unanswerable")
BUDGETS = (0.06, 0.08, 0.10, 0.12)


def group(item: Item) -> str:
    if not item.answerable:
        return "unanswerable"
    return "gold first" if item.gold_rank == 0 else "gold lower" if item.gold_found else "gold absent"


def vetoed(item: Item, veto: tuple[str, ...]) -> bool:
    return any(item.features.get(name, 1.0) == 0.0 for name in veto)


def weakest(item: Item, model: AnswerabilityModel) -> str:
    """The feature pulling the judge's logit down the most, or the veto that stopped it."""
    failed = [name for name in model.veto if item.features.get(name, 1.0) == 0.0]
    if failed:
        return f"veto {failed[0]}"
    pulls = zip(model.features, model.mean, model.scale, model.weights, strict=True)
    return min(pulls, key=lambda f: f[3] * standard(item.features[f[0]], f[1], f[2]))[0]


def table(items: list[Item], answered: list[bool]) -> list[str]:
    rows = ["| group | questions | answered |", "| --- | ---: | ---: |"]
    for name in GROUPS:
        at = [i for i, item in enumerate(items) if group(item) == name]
        rows.append(f"| {name} | {len(at)} | {sum(answered[i] for i in at)} |")
    return rows


async def measure(args: argparse.Namespace) -> list[str]:
    lay = load(args.lay, "lay_questions")
    ours = load(args.ours, "ours")
    split = {str(q["id"]): str(q.get("split", "dev")) for q in lay}
    items, note = await collect(args.data_dir, [*lay, *ours], lay_terms=True)
    judge = load_answerability_model()
    verdict = {it.qid + it.source: judge.decide(it.features).answerable for it in items}
    parts = {
        "development lay": [it for it in items if it.source == "lay_questions" and split[it.qid] == "dev"],
        "held-out lay": [it for it in items if it.source == "lay_questions" and split[it.qid] == "heldout"],
        "development, the law's words": [it for it in items if it.source == "ours"],
    }
    lines = [
        "# Why the judge refuses lay situations, and a second model's trade",
        "",
        f"- data dir `{args.data_dir.name}` ({note}); the service's retrieval settings (cache off)",
        f"- packaged judge {judge.version} (threshold {judge.threshold:.3f}, veto {', '.join(judge.veto)})",
        "- groups: where the first gold provision stands among the evidence (the search's top_k hits)",
        "",
        "## The packaged judge",
        "",
    ]
    for name, part in parts.items():
        lines += [f"### {name}", "", *table(part, [verdict[it.qid + it.source] for it in part]), ""]
    refused = [it for it in parts["development lay"] if group(it) == "gold first" and not verdict[it.qid + it.source]]
    pulls = Counter(weakest(it, judge) for it in refused)
    lines += [
        f"Development lay situations with the gold provision first that the judge refuses ({len(refused)}): the "
        "feature pulling hardest against each: " + ", ".join(f"{name} {n}" for name, n in pulls.most_common()) + ".",
        "",
        "## Feature medians (development lay situations)",
        "",
        "| feature | " + " | ".join(GROUPS) + " |",
        "| --- | " + " | ".join("---:" for _ in GROUPS) + " |",
    ]
    dev = parts["development lay"]
    for feature in LOGISTIC:
        cells = [median([it.features[feature] for it in dev if group(it) == g] or [0.0]) for g in GROUPS]
        lines.append(f"| {feature} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")

    # A second model over the same features, fitted on the development lay situations only.
    features = list(LOGISTIC)
    x = np.array([[it.features[f] for f in features] for it in dev])
    y = np.array([1.0 if it.gold_found else 0.0 for it in dev])
    model = fit(x, y)
    held = parts["held-out lay"]
    ours_part = parts["development, the law's words"]
    p_dev = predict(model, x)
    p_held = predict(model, np.array([[it.features[f] for f in features] for it in held]))
    p_ours = predict(model, np.array([[it.features[f] for f in features] for it in ours_part]))
    near = [i for i, it in enumerate(dev) if not it.answerable]
    lines += [
        "",
        "## A second model (fitted on the development lay situations; answers when either does)",
        "",
        f"Features: {', '.join(features)}; label: a gold provision is in the evidence; class-balanced L2 logistic "
        f"regression, features clipped at ±{CLIP:g} standard deviations; the packaged judge's vetoes apply to both.",
        "Answered with gold in the evidence = answered and a gold provision among the evidence (what an answer is "
        "composed from); near misses answered = unanswerable situations answered (judge level, whole questions: the "
        "answer evaluation also judges each part of a question asked in parts).",
        "",
        "| budget (dev near misses) | threshold | dev: answered, gold in evidence | dev: near misses answered "
        "| held-out: answered, gold in evidence | held-out: near misses answered | law's words: answered, gold in "
        "evidence | law's words: unanswerable answered |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def both(part: list[Item], p: np.ndarray, t: float) -> list[bool]:
        return [(verdict[it.qid + it.source] or p[i] >= t) and not vetoed(it, judge.veto) for i, it in enumerate(part)]

    def cell(part: list[Item], answered: list[bool], answerable: bool) -> str:
        at = [i for i, it in enumerate(part) if (it.gold_found if answerable else not it.answerable)]
        total = len([it for it in part if it.answerable]) if answerable else len(at)
        return f"{sum(answered[i] for i in at)}/{total}"

    base = {name: [verdict[it.qid + it.source] for it in part] for name, part in parts.items()}
    in_words = base["development, the law's words"]
    lines.append(
        f"| packaged judge alone | {judge.threshold:.3f} | {cell(dev, base['development lay'], True)} "
        f"| {cell(dev, base['development lay'], False)} | {cell(held, base['held-out lay'], True)} "
        f"| {cell(held, base['held-out lay'], False)} | {cell(ours_part, in_words, True)} "
        f"| {cell(ours_part, in_words, False)} |"
    )
    for budget in BUDGETS:
        t = next(
            (float(t) for t in np.arange(0.30, 1.0, 0.01)
             if np.mean([both(dev, p_dev, float(t))[i] for i in near]) <= budget),
            1.0,
        )  # fmt: skip
        lines.append(
            f"| {budget:.2f} | {t:.2f} | {cell(dev, both(dev, p_dev, t), True)} "
            f"| {cell(dev, both(dev, p_dev, t), False)} | {cell(held, both(held, p_held, t), True)} "
            f"| {cell(held, both(held, p_held, t), False)} | {cell(ours_part, both(ours_part, p_ours, t), True)} "
            f"| {cell(ours_part, both(ours_part, p_ours, t), False)} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--lay", type=Path, default=ROOT / "evaluation" / "lay_questions.jsonl")
    parser.add_argument("--ours", type=Path, default=ROOT / "evaluation" / "dev_questions.jsonl")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    publish(asyncio.run(measure(args)), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
