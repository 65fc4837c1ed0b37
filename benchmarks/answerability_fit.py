"""Fit the answerability model on the development questions and report its trade-off honestly.

Runs retrieval (the service's own retriever and settings, cache off) for every development question with a label:
our evaluation/dev_questions.jsonl and the zim_qa development set (answerable = has gold; unanswerable = kind
unanswerable; injections left out). Computes the evidence features (api/composer/answerability.py), then:

1. repeated stratified 5-fold cross-validation: each fold's model and threshold are fitted on the other folds only
   (threshold = the most abstaining one that keeps training answerable abstentions within the budget), and the
   held-out questions are scored with them; the report gives those held-out rates;
2. a trade-off table across thresholds of the out-of-fold probabilities;
3. single-feature rules for comparison;
4. the model fitted on all questions, with the threshold chosen on the out-of-fold probabilities, written to
   api/data/answerability.toml with --write.

Vetoes (``--veto``, "quantity" and "named_law" by default) are checks rather than weights: a question they fail
is abstained on whatever its probability, in the cross-validation as in the service. A check that separates a few
questions perfectly is learned as a weight only when those questions are in the training folds, so held out it adds
nothing. (The service screens a question naming a foreign jurisdiction before retrieval; this fit scores the judge
alone, so zim_qa's "UK Employment Rights Act" question counts here although the screen answers it first.)

    .venv/bin/python benchmarks/answerability_fit.py --data-dir .bench-data --write \
        --out benchmarks/results/answerability.md

Nothing here is tuned on any question outside the two development sets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from report import SHARED, publish

from api.composer.answerability import CLIP, DEFAULT_PATH, FEATURES, evidence_features
from api.evaluation.core import section_unit
from api.services import open_services
from api.settings import RetrievalSettings, Settings

ROOT = Path(__file__).resolve().parent.parent
Matrix = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
# Feature sets compared in the report (each cross-validated the same way); --features picks the shipped one.
# The logistic model's inputs; "quantity" is a veto by default (--veto), a check rather than a weight.
LEXICAL = FEATURES[:9]
MEANING = ("dense_best", "dense_margin", "heading_named", "act_focus")
LOGISTIC = (*LEXICAL, *MEANING)
FEATURE_SETS = {
    "first six": FEATURES[:6],
    "lexical (the judge before meaning features)": LEXICAL,
    "all": LOGISTIC,
    "meaning and agreement only": ("dense_top", "agreement", "best_rank", *MEANING),
    "meaning, agreement and coverage": ("dense_top", "agreement", "best_rank", "coverage", "unknown", *MEANING),
    "all, quantity as a weight too": (*LOGISTIC, "quantity"),
    "coverage, rarity and pairs only": ("coverage", "coverage_idf", "key_covered", "unknown", "pairs"),
}
# An abstention shows the closest distinct provisions (retrieval.related_provisions, 3 by default); the proxy counts
# the gold provision shown when it is among this many of the best hits (a lower bound: three hits may be two sections).
RELATED_HITS = 3


@dataclass(frozen=True)
class Item:
    qid: str
    source: str
    kind: str
    answerable: bool
    features: dict[str, float]
    gold_found: bool
    """A gold provision is among the evidence the answer would be composed from (top_k hits)."""
    gold_rank: int
    """The rank of the first gold provision among the hits (0 first); -1 when none is there."""


def load(path: Path, source: str) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{**r, "source": source} for r in rows if r.get("kind") != "injection"]


async def collect(data_dir: Path, questions: list[dict[str, object]], lay_terms: bool) -> tuple[list[Item], str]:
    retrieval = RetrievalSettings(cache_ttl_s=0, lay_terms=lay_terms)
    async with open_services(Settings(data_dir=data_dir, retrieval=retrieval)) as services:
        retriever = services.orchestrator.deps.retriever
        laws = set(services.corpus.manifest.documents)
        note = f"{len(laws)} documents, {len(services.corpus)} chunks, corpus version {services.corpus.version}"
        items = []
        for q in questions:
            gold = q["gold"]
            assert isinstance(gold, list)
            if any(g["law_id"] not in laws for g in gold):
                # A data dir holding part of the corpus: a question whose law is absent is not answerable here.
                sys.stderr.write(f"left out {q['id']}: its gold law is not ingested in {data_dir}\n")
                continue
            result = await retriever.retrieve(str(q["question"]))
            features = evidence_features(
                str(q["question"]), result, retriever.lexical, retriever.thesaurus, services.corpus.titles_for("")
            )
            wanted = {f"{g['law_id']}#{g['section']}" for g in gold}
            ranks = [i for i, h in enumerate(result.hits) if section_unit(h.chunk.section_id) in wanted]
            found = bool(ranks)
            rank = ranks[0] if ranks else -1
            items.append(Item(str(q["id"]), str(q["source"]), str(q["kind"]), bool(gold), features, found, rank))
        return items, note


def fit(x: Matrix, y: Matrix, l2: float = 1.0, steps: int = 3000) -> tuple[Matrix, Matrix, Matrix, float]:
    """Class-balanced, L2-regularised logistic regression by gradient descent on standardised features."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = np.clip((x - mean) / scale, -CLIP, CLIP)  # as the service reads features (AnswerabilityModel.logit)
    weight = np.where(y == 1, 0.5 / max(1, int(y.sum())), 0.5 / max(1, int((1 - y).sum())))
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = weight * (p - y)
        w -= 0.5 * (z.T @ g + l2 * w / len(y))
        b -= 0.5 * float(g.sum())
    return mean, scale, w, b


def predict(model: tuple[Matrix, Matrix, Matrix, float], x: Matrix) -> Matrix:
    mean, scale, w, b = model
    result: Matrix = 1 / (1 + np.exp(-(np.clip((x - mean) / scale, -CLIP, CLIP) @ w + b)))
    return result


def pick_threshold(p: Matrix, y: Matrix, budget: float) -> float:
    """The highest threshold (most abstentions) that abstains on at most ``budget`` of the answerable questions."""
    answerable = np.sort(p[y == 1])
    allowed = int(np.floor(budget * len(answerable)))
    return float(answerable[allowed]) if allowed < len(answerable) else 1.0


def pick_answering(p: Matrix, unanswerable: Matrix, budget: float) -> float:
    """The lowest threshold (most answers) that answers at most ``budget`` of the ``unanswerable`` questions."""
    scores = np.sort(p[unanswerable == 1])[::-1]
    allowed = int(np.floor(budget * len(scores)))
    return float(np.nextafter(scores[allowed], 1.0)) if allowed < len(scores) else 0.0


PICK = "answerable"
"""How a threshold is chosen: "answerable" (abstain on at most the budget of label-answerable questions) or
"unanswerable" (answer at most the budget of the questions the corpus does not answer); set from --pick."""


def choose(p: Matrix, y: Matrix, budget: float, unanswerable: Matrix) -> float:
    return pick_answering(p, unanswerable, budget) if PICK == "unanswerable" else pick_threshold(p, y, budget)


def folds(y: Matrix, k: int, rng: random.Random) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(k)]
    for label in (0, 1):
        idx = [i for i in range(len(y)) if y[i] == label]
        rng.shuffle(idx)
        for n, i in enumerate(idx):
            out[n % k].append(i)
    return out


def rates(p: Matrix, y: Matrix, t: float) -> tuple[float, float]:
    abstain = p < t
    return float(abstain[y == 0].mean()), float(abstain[y == 1].mean())


@dataclass(frozen=True)
class HeldOut:
    """Per question: how often it was abstained on when held out, of how many times, and its mean held-out p."""

    abstained: Matrix
    seen: Matrix
    oof: Matrix

    def rate(self, mask: npt.NDArray[np.bool_]) -> tuple[float, int, int]:
        a, n = int(self.abstained[mask].sum()), int(self.seen[mask].sum())
        return (a / n if n else 0.0), a, n


def cross_validate(
    x: Matrix, y: Matrix, repeats: int, budget: float, keep: Matrix, unanswerable: Matrix | None = None
) -> HeldOut:
    """Repeated stratified 5-fold CV; each fold's model and threshold come from the other folds only. ``keep`` is 0
    for a question a veto feature abstains on (its probability counts as 0), else 1."""
    rng = random.Random(20261122)
    none = np.zeros(len(y)) if unanswerable is None else unanswerable
    oof_sum, seen, abstained = np.zeros(len(y)), np.zeros(len(y)), np.zeros(len(y))
    for _ in range(repeats):
        for test in folds(y, 5, rng):
            train = [i for i in range(len(y)) if i not in set(test)]
            model = fit(x[train], y[train])
            # The threshold comes from the training folds' own out-of-sample view: an inner 5-fold split.
            inner_p = np.zeros(len(train))
            for inner in folds(y[train], 5, rng):
                inner_train = [j for j in range(len(train)) if j not in set(inner)]
                inner_model = fit(x[train][inner_train], y[train][inner_train])
                inner_p[inner] = predict(inner_model, x[train][inner]) * keep[train][inner]
            t = choose(inner_p, y[train], budget, none[train])
            p = predict(model, x[test]) * keep[test]
            oof_sum[test] += p
            seen[test] += 1
            abstained[test] += p < t
    return HeldOut(abstained, seen, oof_sum / seen)


def graded_header(lay: int, direct: int, unanswerable: int) -> str:
    return (
        f"| threshold | lay (n={lay}): gold shown | lay: answered with gold | direct (n={direct}): gold shown | "
        f"direct: answered with gold | unanswerable (n={unanswerable}): answered | unanswerable: related |"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".bench-data")
    parser.add_argument(
        "--budget", type=float, default=0.10,
        help="Answerable questions we may abstain on (--pick answerable) or unanswerable ones we may answer.",
    )  # fmt: skip
    parser.add_argument(
        "--pick", choices=["answerable", "unanswerable"], default="answerable",
        help="Choose each threshold by abstentions on answerable questions or by answers to unanswerable ones.",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-lay-terms", action="store_true", help="Features without the thesaurus.")
    parser.add_argument("--features", type=lambda v: v.split(","), default=list(LOGISTIC), help="Comma-separated.")
    parser.add_argument(
        "--veto", type=lambda v: [f for f in v.split(",") if f], default=["quantity", "named_law"],
        help="Comma-separated features whose 0 means abstain ('' for none).",
    )  # fmt: skip
    parser.add_argument(
        "--label", choices=["evidence", "corpus"], default="evidence", help="What 'answerable' means to the fit."
    )
    parser.add_argument(
        "--related-budget", type=float, default=0.03,
        help="The share of answerable questions (gold among the closest hits) that may get neither an answer nor the "
        "closest provisions: sets the related threshold (unanswerable questions may be shown them).",
    )  # fmt: skip
    parser.add_argument("--extra", type=Path, action="append", default=[], help="More question files (JSONL).")
    parser.add_argument("--write", action="store_true", help="Write api/data/answerability.toml.")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    global PICK
    PICK = args.pick
    questions = load(ROOT / "evaluation/dev_questions.jsonl", "ours") + load(
        SHARED / "zim_qa/questions.jsonl", "zim_qa"
    )
    for extra in args.extra:
        questions += load(extra, extra.stem)
    every, corpus_note = asyncio.run(collect(args.data_dir, questions, not args.no_lay_terms))
    # A question file's held-out part ("split": "heldout") is never fitted on: it is scored once, at the end.
    heldout_ids = {str(q["id"]) for q in questions if q.get("split") == "heldout"}
    items = [it for it in every if it.qid not in heldout_ids]
    kept = [it for it in every if it.qid in heldout_ids]
    x_all = np.array([[it.features[f] for f in FEATURES] for it in items])
    answerable = np.array([it.answerable for it in items])
    found = np.array([it.gold_found for it in items])
    # What the judge is fitted to say: "the evidence answers" (a gold provision is in it) or "the corpus answers".
    y = np.array([1.0 if a and (f or args.label == "corpus") else 0.0 for a, f in zip(answerable, found, strict=True)])
    groups = {
        "unanswerable": ~answerable,
        "answerable, gold in the evidence": answerable & found,
        "answerable, gold not in the evidence": answerable & ~found,
        "answerable, all": answerable,
    }

    def cells(held: HeldOut) -> str:
        return " | ".join(f"{r:.2f} ({a}/{n})" for r, a, n in (held.rate(m) for m in groups.values()))

    unanswerable = (~answerable).astype(float)
    keep = np.ones(len(y))
    for name in args.veto:
        keep *= x_all[:, FEATURES.index(name)] != 0.0
    comparison = []
    veto_note = f" (veto: {', '.join(args.veto)})" if args.veto else ""
    for name, subset in FEATURE_SETS.items():
        one = cross_validate(
            x_all[:, [FEATURES.index(f) for f in subset]], y, args.repeats, args.budget, keep, unanswerable
        )
        comparison.append(f"| {name}{veto_note} | {', '.join(subset)} | {cells(one)} |")
    x = x_all[:, [FEATURES.index(f) for f in args.features]]
    if args.veto:
        none = cross_validate(x, y, args.repeats, args.budget, np.ones(len(y)), unanswerable)
        comparison.append(f"| shipped features, no veto | {', '.join(args.features)} | {cells(none)} |")
    held = cross_validate(x, y, args.repeats, args.budget, keep, unanswerable)
    oof = held.oof
    threshold = choose(oof, y, args.budget, unanswerable)
    final = fit(x, y)
    kinds = sorted({f"{it.source}/{it.kind}" for it in items})
    per_kind = [(k, held.rate(np.array([f"{it.source}/{it.kind}" == k for it in items]))) for k in kinds]
    header = "| " + " | ".join(f"abstained: {g}" for g in groups) + " |"
    rule = "| " + " | ".join("---:" for _ in groups) + " |"
    n_unans, n_ans = int((~answerable).sum()), int(answerable.sum())
    label = {
        "evidence": "answerable = a gold provision is among the retrieved evidence (top_k hits); a question whose "
        "evidence lacks every gold provision counts as one to abstain on, since any answer would quote a provision "
        "that is not the answer",
        "corpus": "answerable = the corpus holds a gold provision, whatever retrieval found",
    }[args.label]
    lines = [
        "# Answerability from evidence: fit and trade-off",
        "",
        f"- questions: {len(y)} development questions ({n_unans} unanswerable, {n_ans} answerable): "
        f"evaluation/dev_questions.jsonl ({sum(it.source == 'ours' for it in items)}) and zim_qa dev "
        f"({sum(it.source == 'zim_qa' for it in items)}, injections left out)"
        + "".join(f", {e.name} ({sum(it.source == e.stem for it in items)})" for e in args.extra),
        f"- evidence: the service's hybrid retrieval over `{args.data_dir.name}` ({corpus_note}), top_k 6, cache off, "
        f"lay-term thesaurus {'off' if args.no_lay_terms else 'on'}",
        f"- features: {', '.join(args.features)}; class-balanced L2 logistic regression (numpy)"
        + (f"; veto (a 0 means abstain): {', '.join(args.veto)}" if args.veto else ""),
        f"- label the judge is fitted to (`--label {args.label}`): {label}",
        f"- honest figures: {args.repeats} × stratified 5-fold cross-validation; every fold's model *and* threshold "
        "are chosen on the other folds only (threshold: "
        + (
            f"most answering that keeps training answers to unanswerable questions ≤ {args.budget:.0%}"
            if args.pick == "unanswerable"
            else f"most abstaining that keeps training abstentions on label-answerable questions ≤ {args.budget:.0%}"
        )
        + ", from an inner 5-fold split)",
        "",
        "## Held-out result (cross-validated, threshold chosen inside each training split)",
        "",
        header,
        rule,
        f"| {cells(held)} |",
        "",
        "By question source and kind (held-out abstention rate, all repeats):",
        "",
        "| source/kind | abstained |",
        "| --- | ---: |",
        *[f"| {k} | {r:.2f} ({a}/{n}) |" for k, (r, a, n) in per_kind],
        "",
        "## Feature sets compared (held-out, same protocol)",
        "",
        "| set | features | " + header.removeprefix("| "),
        "| --- | --- | " + rule.removeprefix("| "),
        *comparison,
        "",
        "## Trade-off across thresholds (out-of-fold probabilities, averaged over repeats)",
        "",
        "| threshold | " + " | ".join(f"abstained: {g}" for g in groups) + " |",
        "| ---: | " + rule.removeprefix("| "),
    ]
    for t in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, threshold]:
        mark = " (chosen)" if t == threshold else ""
        lines.append(f"| {t:.3f}{mark} | " + " | ".join(f"{(oof[m] < t).mean():.2f}" for m in groups.values()) + " |")
    # The graded answer: p ≥ threshold answers; related_threshold ≤ p < threshold shows the closest provisions.
    shown = np.array([0 <= it.gold_rank < RELATED_HITS for it in items])
    # A veto stops an answer, not the closest provisions (the service compares the unvetoed probability with the
    # related threshold), except a named law the documents lack: that question is told so instead.
    named = (x_all[:, FEATURES.index("named_law")] != 0.0).astype(float)
    raw = cross_validate(x, y, args.repeats, args.budget, named, unanswerable).oof if args.veto else oof
    related_threshold = min(threshold, pick_threshold(raw, (answerable & shown).astype(float), args.related_budget))
    lay = np.array([it.kind in ("paraphrase", "lay") for it in items]) & answerable
    direct = np.array([it.kind == "direct" for it in items]) & answerable

    def outcome_cells(t: float, r: float) -> str:
        return graded(oof, raw, t, r, lay, direct, answerable, found, shown)

    def graded(
        p: Matrix,
        unvetoed: Matrix,
        t: float,
        r: float,
        lay: Mask,
        direct: Mask,
        answerable: Mask,
        found: Mask,
        shown: Mask,
    ) -> str:
        answered = p >= t
        related = (unvetoed >= r) & ~answered
        cells = []
        for mask in (lay, direct):
            n = max(1, int(mask.sum()))
            gold_answered = int((answered & found & mask).sum())
            gold_shown = gold_answered + int((related & shown & mask).sum())
            cells += [f"{gold_shown / n:.2f}", f"{gold_answered / n:.2f}"]
        n_u = max(1, int((~answerable).sum()))
        cells += [f"{(answered & ~answerable).sum() / n_u:.2f}", f"{(related & ~answerable).sum() / n_u:.2f}"]
        return " | ".join(cells)

    lines += [
        "",
        "## The graded answer across thresholds (out-of-fold probabilities)",
        "",
        f"At or above the threshold the question is answered; from the related threshold ({related_threshold:.3f}: "
        f"chosen so that at most {args.related_budget:.0%} of answerable questions whose gold provision is among the "
        f"{RELATED_HITS} best hits get neither) up to it, the closest provisions are shown (`related`); below, "
        "`not_found`. Gold shown = answered with the gold provision in the evidence, or related with it among the "
        f"{RELATED_HITS} best hits (a proxy for what `gweta eval answers` measures on the whole graph).",
        "",
        graded_header(int(lay.sum()), int(direct.sum()), int((~answerable).sum())),
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    grid = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, threshold]
    for t in grid:
        mark = " (chosen)" if t == threshold else ""
        lines.append(f"| {t:.3f}{mark} | {outcome_cells(t, min(t, related_threshold))} |")
    if kept:
        x_k = np.array([[it.features[f] for f in args.features] for it in kept])
        keep_k = np.ones(len(kept))
        for name in args.veto:
            keep_k *= np.array([it.features[name] != 0.0 for it in kept])
        unvetoed_k = predict(final, x_k)
        ans_k = np.array([it.answerable for it in kept])
        lay_k = np.array([it.kind in ("paraphrase", "lay") for it in kept]) & ans_k
        direct_k = np.array([it.kind == "direct" for it in kept]) & ans_k
        lines += [
            "",
            f"## Held-out questions ({len(kept)}, never fitted on: the shipped model and thresholds)",
            "",
            graded_header(int(lay_k.sum()), int(direct_k.sum()), int((~ans_k).sum())),
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {threshold:.3f} | "
            + graded(unvetoed_k * keep_k, unvetoed_k, threshold, related_threshold,
                     lay_k, direct_k, ans_k,
                     np.array([it.gold_found for it in kept]),
                     np.array([0 <= it.gold_rank < RELATED_HITS for it in kept]))
            + " |",
        ]  # fmt: skip
    lines += [
        "",
        "## Single features as rules (in-sample, best threshold within the budget)",
        "",
        "| feature | abstained when unanswerable | abstained when answerable |",
        "| --- | ---: | ---: |",
    ]
    for j, name in enumerate(args.features):
        col = x[:, j]
        sign = 1.0 if col[y == 1].mean() >= col[y == 0].mean() else -1.0
        t = pick_threshold(sign * col, y, args.budget)
        u, a = rates(sign * col, y, t)
        lines.append(f"| {name} | {u:.2f} | {a:.2f} |")
    mean, scale, w, b = final
    lines += [
        "",
        "## Shipped model (fitted on all questions; threshold from the out-of-fold probabilities)",
        "",
        "| feature | answerable mean | unanswerable mean | weight (standardised) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for j, name in enumerate(args.features):
        lines.append(f"| {name} | {x[y == 1, j].mean():.3f} | {x[y == 0, j].mean():.3f} | {w[j]:+.3f} |")
    lines.append(f"\nbias {b:+.3f}; threshold {threshold:.3f}")
    worst = sorted(((oof[i], items[i].qid, items[i].kind) for i in range(len(y)) if y[i] == 0), reverse=True)[:5]
    lines += ["", "Unanswerable questions the model is least sure of (out-of-fold p):", ""]
    lines += [f"- {qid} ({kind}): {p:.2f}" for p, qid, kind in worst]
    missed = sorted((oof[i], items[i].qid, items[i].kind) for i in range(len(y)) if y[i] == 1)[:5]
    lines += ["", "Answerable questions with the lowest out-of-fold p:", ""]
    lines += [f"- {qid} ({kind}): {p:.2f}" for p, qid, kind in missed]
    if args.write:
        toml = [
            "# Answerability model: logistic regression over evidence features (api/composer/answerability.py).",
            "# Written by benchmarks/answerability_fit.py from the development questions only; see",
            "# benchmarks/results/answerability.md for the cross-validated trade-off. grade_weight is a prior",
            "# (not fitted): the grade skill's share of relevant passages raises the logit by weight*max(0,g-0.5).",
            f"# Fitted over {corpus_note}",
            f"# on {len(y)} development questions (held-out parts never read);",
            f"# threshold picked by --pick {args.pick} within {args.budget:.0%}; related_threshold: the lowest that",
            f"# leaves at most {args.related_budget:.0%} of answerable questions with their gold among the 3 best hits "
            "shown nothing.",
            f"# The trade-off curve and the feature sets compared: the report this run wrote ({args.out}).",
            f'version = "{len(y)}q-{threshold:.3f}' + "".join(f"-{v}" for v in args.veto) + '"',
            f"features = {json.dumps(list(args.features))}",
            f"mean = {json.dumps([round(float(v), 6) for v in mean])}",
            f"scale = {json.dumps([round(float(v), 6) for v in scale])}",
            f"weights = {json.dumps([round(float(v), 6) for v in w])}",
            f"bias = {b:.6f}",
            f"threshold = {threshold:.6f}",
            f"related_threshold = {max(1e-6, related_threshold):.6f}",
            "grade_weight = 2.0",
            f"veto = {json.dumps(list(args.veto))}",
        ]
        DEFAULT_PATH.write_text("\n".join(toml) + "\n")
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
