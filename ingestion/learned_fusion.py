"""Train the learned fusion (``api/tools/fusion.py``) on labelled questions, for ``gweta tune --questions``.

Each training question's fused candidates (both lists' top chunks, fused as the service fuses them) become rows of
the ranker's features, labelled by whether the chunk belongs to one of the question's gold provisions. scikit-learn's
gradient-boosted trees learn from them and are written out as plain arrays (``TreeFile``), which the service scores
with numpy. The settings are those measured in ``benchmarks/learned_fusion.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from api.evaluation.core import Scores
from api.tools.fusion import FEATURES, RRF_K, Candidates, LearnedFusion, Tree, TreeFile, Trees
from api.tools.retrieval import reciprocal_rank_fusion
from api.tools.vector_store import Hit

MIN_QUESTIONS = 30  # fewer labelled questions than this train no trees (a leaf needs 40 candidates)


@dataclass(frozen=True, slots=True)
class Asked:
    """One labelled question as the ranker reads it: its two lists, their RRF order, and its gold units."""

    text: str
    rankings: Mapping[str, Sequence[Hit]]
    fused: Sequence[str]
    gold: frozenset[str]
    lexical_scores: Mapping[str, float]

    @classmethod
    def of(
        cls, text: str, dense: Sequence[Hit], lexical: Sequence[Hit], dense_weight: float, gold: frozenset[str],
        pool: int = 30, rrf_k: int = RRF_K,
    ) -> Asked:  # fmt: skip
        """``lexical``: BM25's hits down to ``SCORED_DEPTH``, as the retriever reads them; its list is the first
        ``pool``, as the retriever fuses ``candidates`` of each backend with its ``rrf_k``."""
        rankings = {"dense": list(dense), "bm25": list(lexical[:pool])}
        fused = reciprocal_rank_fusion(rankings, rrf_k, {"dense": dense_weight, "bm25": 1.0})
        return cls(text, rankings, [cid for cid, _, _ in fused], gold, {h.chunk_id: h.score for h in lexical})


def ranker() -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(
        max_iter=300, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=40, l2_regularization=1.0,
        random_state=0,
    )  # fmt: skip


def fit(candidates: Candidates, questions: Sequence[Asked], unit: Mapping[str, str]) -> TreeFile | None:
    """Trees trained on ``questions`` (``unit`` maps a chunk id to the unit its gold names); None when there are too
    few questions or their candidates are all gold or all not (nothing to learn)."""
    if len(questions) < MIN_QUESTIONS:
        return None
    xs = [candidates.features(q.text, q.rankings, q.fused, q.lexical_scores) for q in questions]
    ys = [np.array([unit[cid] in q.gold for cid in q.fused], dtype=int) for q in questions]
    y = np.concatenate(ys)
    if y.all() or not y.any():
        return None
    return tree_file(ranker().fit(np.vstack(xs), y), len(questions))


def tree_file(model: HistGradientBoostingClassifier, questions: int) -> TreeFile:
    """A fitted binary classifier's trees as plain arrays (scikit-learn keeps them as one node table per tree)."""
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        leaf = nodes["is_leaf"].astype(bool)
        left, right = (np.where(leaf, -1, nodes[side].astype(np.int64)).tolist() for side in ("left", "right"))
        trees.append(Tree(feature=nodes["feature_idx"].tolist(), threshold=nodes["num_threshold"].tolist(), left=left,
                          right=right, value=nodes["value"].tolist()))  # fmt: skip
    baseline = float(np.ravel(model._baseline_prediction)[0])
    return TreeFile(features=list(FEATURES), baseline=baseline, trees=trees, questions=questions)


def ordered(fusion: LearnedFusion, question: Asked) -> list[str]:
    """``question``'s fused chunks in the trees' order, as the retriever orders them."""
    ranked = fusion.ranked(question.text, question.rankings, question.fused, question.lexical_scores)
    return [question.fused[i] for i, _ in ranked]


@dataclass(slots=True)
class FusionChoice:
    """What ``choose`` measured on the held-out questions (R@10 and MRR@10 by unit, each question once) and whether
    the trees serve."""

    trees: TreeFile | None
    questions: int
    held_out: int
    scores: dict[str, float]
    kept: bool
    reason: str


def choose(
    candidates: Candidates, train: Sequence[Asked], held: Sequence[Asked], unit: Mapping[str, str]
) -> FusionChoice:
    """Trees trained on ``train``, kept only when they order ``held``'s candidates better than RRF does: a higher
    MRR@10 and no lower R@10."""
    trees = fit(candidates, train, unit)
    scores = _scores("rrf", [q.fused for q in held], held, unit)
    if trees is None:
        reason = f"{len(train)} training questions (at least {MIN_QUESTIONS}, some gold among their candidates)"
        return FusionChoice(None, len(train), len(held), scores, False, reason)
    fusion = LearnedFusion(Trees(trees), candidates)
    scores |= _scores("learned", [ordered(fusion, q) for q in held], held, unit)
    better = scores["learned MRR@10"] > scores["rrf MRR@10"] and scores["learned R@10"] >= scores["rrf R@10"]
    reason = "beat RRF on the held-out questions" if better else "no better than RRF on the held-out questions"
    return FusionChoice(trees, len(train), len(held), scores, better, reason)


def _scores(
    name: str, orders: Sequence[Sequence[str]], questions: Sequence[Asked], unit: Mapping[str, str]
) -> dict[str, float]:
    """R@10 and MRR@10 of chunk ``orders`` by unit (each unit once, at its best chunk), as ``gweta eval`` counts."""
    measured = Scores()
    for order, question in zip(orders, questions, strict=True):
        measured.add(list(dict.fromkeys(unit[cid] for cid in order)), question.gold, 0.0)
    row = measured.row()
    return {f"{name} R@10": round(row["R@10"], 4), f"{name} MRR@10": round(row["MRR@10"], 4)}
