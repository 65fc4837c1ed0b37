"""A ranker learned over the fused candidates, in place of reciprocal rank fusion's fixed sum.

RRF sees only where each list put a chunk. This ranker also reads what a person reading both lists would: how the
chunk's document fares across them (its summed RRF, its rank among documents, how many of the fused top 10 it holds),
how its neighbours in the document rank (a question's gold provisions are often consecutive), how many of the
question's words it holds (plain and weighted by rarity), its BM25 score, its length and the depth of its number.
Nothing about one corpus: the trees are trained per data dir by ``gweta tune --questions`` on the user's labelled
questions (``ingestion/learned_fusion.py``) and served only when they beat RRF on questions they never saw.

The trees are data, not code: a JSON file of node arrays (``TreeFile``), scored here with numpy, so serving needs no
scikit-learn and loading runs nothing from the file. Measured in ``benchmarks/learned_fusion.py``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field, ValidationError, model_validator

from api.errors import ConfigError
from api.schemas.documents import Chunk
from api.text.words import tokenize
from api.tools.bm25 import LexicalIndex
from api.tools.chunk_table import ChunkTable
from api.tools.vector_store import Hit

LISTS = ("dense", "bm25")
MISSING = 61  # the rank given to a chunk a list did not return: one past two lists of 30
RRF_K = 60
TOP = 10  # the fused top whose share a document holds is a feature
# BM25 scores are read this deep: a candidate the dense list found below BM25's own top 30 still has its score, which
# the trees use (measured in benchmarks/results/learned_fusion.md).
SCORED_DEPTH = 300
NEIGHBOURS = (-2, -1, 1, 2)
FEATURES = (
    "dense_rank", "dense_rrf", "bm25_rank", "bm25_rrf", "fused_rank", "document_rank", "document_score",
    "document_in_top", "before_2", "before_1", "after_1", "after_2", "words_shared", "words_shared_by_rarity",
    "bm25_score", "bm25_score_of_best", "length", "depth",
)  # fmt: skip
Matrix = npt.NDArray[np.float64]


class Tree(BaseModel):
    """One tree's nodes: a row goes left when its ``feature`` is at most ``threshold``; a leaf has ``left`` -1 and
    adds its ``value`` to the score."""

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]

    @model_validator(mode="after")
    def _consistent(self) -> Tree:
        n = len(self.feature)
        if not n or any(len(a) != n for a in (self.threshold, self.left, self.right, self.value)):
            raise ValueError("a tree's node arrays must be non-empty and of one length")
        if any(not (-1 <= c < n) for c in (*self.left, *self.right)):
            raise ValueError("a tree's children must be nodes of the same tree")
        splits = [(node, pair) for node, pair in enumerate(zip(self.left, self.right, strict=True)) if min(pair) >= 0]
        children = [child for _, pair in splits for child in pair]
        if len(set(children)) != len(children) or any(min(pair) <= node for node, pair in splits):
            raise ValueError("a tree's nodes must each have one parent, listed before them (no cycles)")
        return self


class TreeFile(BaseModel):
    """Gradient-boosted trees as plain arrays: a chunk's score is ``baseline`` plus one leaf value per tree (the
    log-odds that it is one of the question's gold provisions)."""

    format: Literal["gweta-trees-1"] = "gweta-trees-1"
    features: list[str]
    baseline: float
    trees: list[Tree] = Field(min_length=1)
    questions: int = Field(0, description="How many labelled questions trained it.")

    @model_validator(mode="after")
    def _features(self) -> TreeFile:
        if self.features != list(FEATURES):
            raise ValueError(f"the trees read features {self.features}, this version computes {list(FEATURES)}")
        if any(not (0 <= f < len(FEATURES)) for tree in self.trees for f in tree.feature):
            raise ValueError("a tree reads a feature this version does not compute")
        return self


class Trees:
    """The trees of a ``TreeFile`` flattened into arrays, every tree walked at once: a leaf points to itself, so
    ``depth`` steps bring every row to its leaf in every tree."""

    def __init__(self, file: TreeFile) -> None:
        feature: list[int] = []
        threshold: list[float] = []
        value: list[float] = []
        left: list[int] = []
        right: list[int] = []
        roots: list[int] = []
        self.depth = 0
        for tree in file.trees:
            base = len(feature)
            roots.append(base)
            for i, (lo, hi) in enumerate(zip(tree.left, tree.right, strict=True)):
                leaf = lo < 0 or hi < 0
                left.append(base + i if leaf else base + lo)
                right.append(base + i if leaf else base + hi)
            feature += tree.feature
            threshold += tree.threshold
            value += tree.value
            self.depth = max(self.depth, _depth(tree))
        self.feature = np.array(feature, dtype=np.intp)
        self.threshold = np.array(threshold, dtype=np.float64)
        self.left, self.right = np.array(left, dtype=np.intp), np.array(right, dtype=np.intp)
        self.value = np.array(value, dtype=np.float64)
        self.roots = np.array(roots, dtype=np.intp)
        self.baseline = file.baseline

    def score(self, x: Matrix) -> npt.NDArray[np.float64]:
        """Each row's score (log-odds)."""
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        rows = np.arange(len(x))[:, None]
        for _ in range(self.depth):
            node = np.where(x[rows, self.feature[node]] <= self.threshold[node], self.left[node], self.right[node])
        return np.asarray(self.baseline + self.value[node].sum(axis=1), dtype=np.float64)


def lexical_depth(candidates: int) -> int:
    """How deep BM25 is searched when the trees order the result (its list stays ``candidates`` long); training reads
    the same depth."""
    return max(candidates, SCORED_DEPTH)


_REMEDY = "run 'gweta tune --questions' again, or set GWETA_RETRIEVAL__LEARNED_FUSION=false to order by RRF"


def load_trees(path: Path | None) -> Trees | None:
    """The trees at ``path`` (None when unset); ConfigError names what is wrong with the file."""
    if path is None:
        return None
    try:
        return Trees(TreeFile.model_validate_json(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ConfigError(f"learned fusion {path} does not exist: {_REMEDY}") from None
    except ValidationError as exc:
        raise ConfigError(f"learned fusion {path} is invalid ({exc}): {_REMEDY}") from None


def _depth(tree: Tree) -> int:
    """The longest root-to-leaf path (children come after their parent, each once: ``Tree`` checks)."""
    depth = [0] * len(tree.feature)
    for node, (left, right) in enumerate(zip(tree.left, tree.right, strict=True)):
        if left >= 0 and right >= 0:
            depth[left] = depth[right] = depth[node] + 1
    return max(depth)


class Candidates:
    """What the ranker reads about one corpus's chunks: each one's tokens in the lexical index (its words and length),
    its document, the depth of its number, and the chunks around it in its document (``chunks`` in document order,
    as the corpus holds them; read from the table as a question needs them)."""

    def __init__(self, chunks: Iterable[Chunk] | ChunkTable, lexical: LexicalIndex) -> None:
        self.chunks = chunks if isinstance(chunks, ChunkTable) else ChunkTable.build(chunks)
        self.lexical = lexical

    def _tokens(self, chunk_id: str) -> Sequence[str]:
        at = self.lexical.positions.get(chunk_id)
        return self.lexical.tokens[at] if at is not None else ()

    def features(
        self, question: str, rankings: Mapping[str, Sequence[Hit]], fused: Sequence[str],
        lexical_scores: Mapping[str, float] | None = None,
    ) -> Matrix:  # fmt: skip
        """One row of ``FEATURES`` per chunk of ``fused`` (the RRF order of ``rankings``' chunks, each in the
        corpus). ``lexical_scores``: BM25's scores deeper than its list (``SCORED_DEPTH``); else the list's own."""
        rank = {name: {h.chunk_id: r for r, h in enumerate(rankings.get(name, ()), 1)} for name in LISTS}
        fused_rank = {cid: r for r, cid in enumerate(fused, 1)}
        chunks = self.chunks.many(fused)
        doc = {cid: chunks[cid].doc_key for cid in fused}
        document_score: dict[str, float] = defaultdict(float)
        for cid in fused:
            document_score[doc[cid]] += sum(1 / (RRF_K + rank[n].get(cid, MISSING)) for n in LISTS)
        by_score = sorted(document_score, key=lambda d: -document_score[d])
        document_rank = {d: r for r, d in enumerate(by_score, 1)}
        in_top = Counter(doc[cid] for cid in fused[:TOP])
        lexical = (
            lexical_scores if lexical_scores is not None else {h.chunk_id: h.score for h in rankings.get("bm25", ())}
        )
        best = max(lexical.values(), default=0.0) or 1.0
        asked = set(tokenize(question))
        n = len(self.lexical) + 1
        rarity = {w: math.log(n / (self.lexical.document_frequency(w) + 1)) for w in asked}
        asked_weight = sum(rarity.values()) or 1.0
        rows = []
        for cid in fused:
            row: list[float] = []
            for name in LISTS:
                r = rank[name].get(cid, MISSING)
                row += [r, 1 / (RRF_K + r)]
            d = doc[cid]
            row += [fused_rank[cid], document_rank[d], document_score[d], in_top[d]]
            row += [
                fused_rank.get(near, 2 * MISSING) if near else 3 * MISSING
                for near in self.chunks.neighbours(cid, NEIGHBOURS)
            ]
            tokens = self._tokens(cid)
            shared = asked.intersection(tokens)
            row += [len(shared) / max(1, len(asked)), sum(rarity[w] for w in shared) / asked_weight]
            chunk = chunks[cid]
            score = lexical.get(cid, 0.0)
            row += [score, score / best, len(tokens), chunk.section_number.strip(".").count(".")]
            rows.append(row)
        return np.array(rows, dtype=np.float64).reshape(len(fused), len(FEATURES))


class LearnedFusion:
    """Orders a question's fused chunks by the trees' scores."""

    def __init__(self, trees: Trees, candidates: Candidates) -> None:
        self.trees = trees
        self.candidates = candidates

    def applies(self, rankings: Mapping[str, Sequence[Hit]]) -> bool:
        """The trees learned from both lists: with one missing (a backend down) RRF orders the rest."""
        return all(rankings.get(name) for name in LISTS)

    def ranked(
        self, question: str, rankings: Mapping[str, Sequence[Hit]], fused: Sequence[str],
        lexical_scores: Mapping[str, float] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """(position in ``fused``, the trees' score) of each of ``fused``'s chunks, best first; ties keep RRF's
        order."""
        if not fused:
            return []
        scores = self.trees.score(self.candidates.features(question, rankings, fused, lexical_scores))
        return [(int(i), float(scores[i])) for i in np.argsort(-scores, kind="stable")]
