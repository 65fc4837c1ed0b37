"""Learned fusion: a gradient-boosted ranker over the fused candidates, trained on labelled questions, against RRF.

RRF sees only each list's ranks. This ranker also sees what a reader of the candidate list would: how the passage's
document fares across the list (its summed RRF, its rank among documents, how many of the top 10 it holds), how its
neighbouring passages rank (a question's gold passages are often consecutive), how many of the question's words it
holds (plain and weighted by rarity), its BM25 score (stemmed and paired; also against the question's best), its
length and the depth of its number. Candidates are every passage in the top 30 of any list (BM25 plain, BM25 stemmed
and paired, dense; with ``--tuned`` also the dense model tuned on the other fold's questions, as
``benchmarks/tune_labelled.py`` trains it). Two-fold cross-validation over ObliQA's
development questions (the folds of ``tune_labelled.py``): the ranker scoring a question never saw it.

With ``--tuned`` the dense model tuned on fold A ranks fold B's questions, so a ranker trained on fold A would see a
dense model that knows its training questions and would over-trust it. The ranker is then cross-fitted inside the
scored fold instead: trained on half of fold B, scored on the other half (and the other way round), so neither
model saw the questions it scores (the ranker learns from half as many questions there).

Rankings are kept under ``--work`` and reused (the packaged rankings are ``benchmarks/tune_reranker.py``'s file).
Prints Markdown; progress goes to stderr.

    python -m benchmarks.learned_fusion --work /tmp/rr [--tuned]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from api.evaluation.core import Question, load_questions, unit_of
from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.tools.bm25 import Bm25sIndex
from api.tools.embeddings import load_sentence_transformer
from api.tools.fusion import SCORED_DEPTH, Candidates, LearnedFusion, Trees
from api.tools.vector_store import Hit
from benchmarks.tune_labelled import log, rankings, tuned_on
from benchmarks.tune_reranker import cached_rankings, recall_at
from benchmarks.tune_retrieval import DATA, POOL, load
from ingestion.learned_fusion import Asked, fit, ordered, ranker
from ingestion.pairs import held_out, split_questions

FUSED = "fused: dense x1.0 + bm25 stem+bigrams"
TUNED_FUSED = "tuned fused: dense x1.0 + bm25 stem+bigrams"
LISTS = ("bm25", "bm25 stem+bigrams", "dense")
SERVICE_LISTS = ("bm25 stem+bigrams", "dense")
SPENT: list[float] = []  # seconds per question to build a question's features and rank them, per ranked_by call
MISSING = 2 * POOL + 1  # the rank given to a passage a list did not return
RRF_K = 60
STOP = frozenset(
    "a an and any are as at be by can do does for from how if in into is it its may must of on or shall should such"
    " than that the their there this to under what when which who whom whose with".split()
)


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP}


class Passages:
    """Each passage (ObliQA's unit) as the ranker reads it: its text, document, length, number depth and neighbours."""

    def __init__(self, chunks: Sequence[Chunk], by_source: bool = True) -> None:
        self.text: dict[str, str] = {}
        self.doc: dict[str, str] = {}
        self.depth: dict[str, int] = {}
        for chunk in chunks:
            unit = unit_of(chunk, by_source)
            if unit not in self.text:
                self.doc[unit], self.depth[unit] = chunk.doc_key, chunk.section_number.strip(".").count(".")
                self.text[unit] = f"{chunk.title} {chunk.section_heading} {chunk.text}"
            else:
                self.text[unit] += " " + chunk.text
        order = list(self.text)
        self.neighbours: dict[str, list[str | None]] = {}
        for i, unit in enumerate(order):
            near = [order[j] if 0 <= j < len(order) and self.doc[order[j]] == self.doc[unit] else None
                    for j in (i - 2, i - 1, i + 1, i + 2)]  # fmt: skip
            self.neighbours[unit] = near
        self.words = {unit: words(text) for unit, text in self.text.items()}
        self.unit = {c.chunk_id: unit_of(c, by_source) for c in chunks}
        self.lexical = Bm25sIndex.of_chunks(chunks, BM25Settings(stem=True, bigrams=True))
        frequency = Counter(w for ws in self.words.values() for w in ws)
        self.idf = {w: math.log((len(order) + 1) / (n + 1)) for w, n in frequency.items()}

    def features(self, question: str, lists: dict[str, list[str]], fused: list[str]) -> tuple[np.ndarray, list[str]]:
        rank = {name: {u: r for r, u in enumerate(ranked, 1)} for name, ranked in lists.items()}
        fused_rank = {u: r for r, u in enumerate(fused, 1)}
        candidates = list(dict.fromkeys([*fused, *(u for ranked in lists.values() for u in ranked)]))
        document_score: dict[str, float] = defaultdict(float)
        for unit in candidates:
            document_score[self.doc[unit]] += sum(1 / (RRF_K + rank[n].get(unit, MISSING)) for n in lists)
        document_rank = {d: r for r, d in enumerate(sorted(document_score, key=lambda d: -document_score[d]), 1)}
        in_top = Counter(self.doc[u] for u in fused[:10])
        lexical: dict[str, float] = {}  # each passage's best chunk's BM25 score, deeper than the lists go
        for hit in self.lexical._search(question, 10 * POOL):
            lexical.setdefault(self.unit[hit.chunk_id], hit.score)
        best = max(lexical.values(), default=0.0) or 1.0
        asked = words(question)
        asked_weight = sum(self.idf.get(w, 0.0) for w in asked) or 1.0
        rows = []
        for unit in candidates:
            row: list[float] = []
            for name in lists:
                r = rank[name].get(unit, MISSING)
                row += [r, 1 / (RRF_K + r)]
            doc = self.doc[unit]
            row += [fused_rank.get(unit, 2 * MISSING), document_rank[doc], document_score[doc], in_top[doc]]
            row += [fused_rank.get(n, 2 * MISSING) if n else 3 * MISSING for n in self.neighbours[unit]]
            shared = asked & self.words[unit]
            row += [len(shared) / max(1, len(asked)), sum(self.idf.get(w, 0.0) for w in shared) / asked_weight]
            row += [lexical.get(unit, 0.0), lexical.get(unit, 0.0) / best, len(self.text[unit]), self.depth[unit]]
            rows.append(row)
        return np.array(rows, dtype=float), candidates


def fitted(
    passages: Passages, at: dict[str, int], rows: dict[str, list[list[str]]], lists: Sequence[str], fused: str,
    fit_on: Sequence[Question],
) -> HistGradientBoostingClassifier:  # fmt: skip
    """A ranker trained on ``fit_on``'s questions: each candidate labelled by whether it is one of the gold."""
    xs, ys = [], []
    for q in fit_on:
        i = at[q.qid]
        x, candidates = passages.features(q.text, {n: rows[n][i] for n in lists}, rows[fused][i])
        xs.append(x)
        ys.append(np.array([u in q.gold for u in candidates], dtype=int))
    return ranker().fit(np.vstack(xs), np.concatenate(ys))


def ranked_by(
    model: HistGradientBoostingClassifier, passages: Passages, at: dict[str, int], rows: dict[str, list[list[str]]],
    lists: Sequence[str], fused: str, score_on: Sequence[Question],
) -> dict[str, list[str]]:  # fmt: skip
    """``score_on``'s candidates in the order of ``model``'s scores."""
    out = {}
    start = time.perf_counter()
    for q in score_on:
        i = at[q.qid]
        x, candidates = passages.features(q.text, {n: rows[n][i] for n in lists}, rows[fused][i])
        out[q.qid] = [candidates[j] for j in np.argsort(-model.predict_proba(x)[:, 1], kind="stable")]
    SPENT.append((time.perf_counter() - start) / max(1, len(score_on)))
    return out


def learned(
    passages: Passages, at: dict[str, int], rows: dict[str, list[list[str]]], lists: Sequence[str], fused: str,
    fit_on: Sequence[Question], score_on: Sequence[Question],
) -> dict[str, list[str]]:  # fmt: skip
    """``score_on``'s questions ranked by a ranker trained on ``fit_on``'s."""
    model = fitted(passages, at, rows, lists, fused, fit_on)
    return ranked_by(model, passages, at, rows, lists, fused, score_on)


def tuned_rankings(
    path: Path, chunks: Sequence[Chunk], questions: Sequence[Question], folds: Sequence[Sequence[Question]]
) -> dict[str, list[list[str]]]:
    """Each question ranked by the dense model tuned on the other fold (and that model fused with BM25)."""
    if path.exists():
        return dict(json.loads(path.read_text()))
    at = {q.qid: i for i, q in enumerate(questions)}
    out: dict[str, list[list[str]]] = {"tuned dense": [[] for _ in questions], TUNED_FUSED: [[] for _ in questions]}
    for fit_on, score_on in ((folds[1], folds[0]), (folds[0], folds[1])):
        model, stats, _ = tuned_on(chunks, fit_on)
        log(f"tuned on {len(fit_on)} questions: {stats.steps} steps in {stats.seconds:.0f}s")
        ranked = rankings(chunks, [q.text for q in score_on], True, model)
        for q, dense, fused in zip(score_on, ranked["dense"], ranked[FUSED], strict=True):
            out["tuned dense"][at[q.qid]], out[TUNED_FUSED][at[q.qid]] = dense, fused
    path.write_text(json.dumps(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/gweta-learned-fusion"))
    parser.add_argument("--tuned", action="store_true", help="add the dense model tuned on the other fold")
    parser.add_argument("--zimbabwe", action="store_true", help="also the ObliQA-trained ranker on the Zimbabwe sample")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    chunks, _, _ = load("obliqa", {str(i) for i in range(1, 41)})
    questions, _ = load_questions(DATA / "obliqa" / "questions.jsonl")
    folds = split_questions(questions, share=0.5)
    at = {q.qid: i for i, q in enumerate(questions)}
    rows = cached_rankings(args.work / "obliqa_rankings.json", chunks, [q.text for q in questions], True)
    passages = Passages(chunks)
    log(f"obliqa: {len(passages.text)} passages, {len(questions)} questions, folds of {[len(f) for f in folds]}")
    ranked: dict[str, dict[str, list[str]]] = {
        "BM25 stemmed + paired": {q.qid: rows["bm25 stem+bigrams"][at[q.qid]] for q in questions},
        "RRF: packaged dense + BM25 stemmed + paired": {q.qid: rows[FUSED][at[q.qid]] for q in questions},
    }
    # The service fuses one BM25 analyzer with dense: the second row is what it would have to learn from.
    for name, lists in (("BM25 (plain, stemmed + paired)", LISTS), ("BM25 stemmed + paired", SERVICE_LISTS)):
        learned_name = f"learned: packaged dense + {name}"
        ranked[learned_name] = {}
        for fit_on, score_on in ((folds[0], folds[1]), (folds[1], folds[0])):
            ranked[learned_name] |= learned(passages, at, rows, lists, FUSED, fit_on, score_on)
    if args.tuned:
        rows |= tuned_rankings(args.work / "obliqa_tuned_rankings.json", chunks, questions, folds)
        ranked["RRF: tuned dense + BM25 stemmed + paired"] = {q.qid: rows[TUNED_FUSED][at[q.qid]] for q in questions}
        name = "learned: tuned dense + packaged dense + BM25, cross-fitted within each fold"
        ranked[name] = {}
        for fold in folds:
            # Another hash than the folds' (each fold is one side of theirs), so both halves are filled.
            one = [q for q in fold if held_out(f"inner:{q.text}", 0.5)]
            two = [q for q in fold if not held_out(f"inner:{q.text}", 0.5)]
            for fit_on, score_on in ((one, two), (two, one)):
                ranked[name] |= learned(passages, at, rows, (*LISTS, "tuned dense"), TUNED_FUSED, fit_on, score_on)
        # What `gweta tune --questions` does: the ranker learns from the training questions' lists with the packaged
        # model (which never saw them) and then reads the tuned model's lists, the one BM25 the service fuses.
        name = "learned as `gweta tune` trains it: packaged dense + BM25 on the other fold, then the tuned dense"
        ranked[name] = {}
        served = {**rows, "dense": rows["tuned dense"], FUSED: rows[TUNED_FUSED]}
        for fit_on, score_on in ((folds[0], folds[1]), (folds[1], folds[0])):
            model = fitted(passages, at, rows, SERVICE_LISTS, FUSED, fit_on)
            ranked[name] |= ranked_by(model, passages, at, served, SERVICE_LISTS, FUSED, score_on)
        for depth in (POOL, SCORED_DEPTH):
            name = f"the service's code, trained the same way; BM25 scores {depth} deep"
            ranked[name] = service_code(chunks, questions, folds, rows, depth)
    print(f"## ObliQA development questions: {len(questions)}, {len(passages.text)} passages, two folds\n")
    table(questions, ranked)
    print(f"\nFeatures and ranking at question time: {1000 * sum(SPENT) / len(SPENT):.1f} ms a question on average "
          f"(over {len(SPENT)} scoring runs; the BM25 scores' own search included).")  # fmt: skip
    if args.zimbabwe:
        print("\n" + zimbabwe(args.work, fitted(passages, at, rows, LISTS, FUSED, questions)))


def service_code(
    chunks: Sequence[Chunk], questions: Sequence[Question], folds: Sequence[Sequence[Question]],
    rows: dict[str, list[list[str]]], depth: int,
) -> dict[str, list[str]]:  # fmt: skip
    """The service's own features and training (``api/tools/fusion.py`` over chunks, ``ingestion/learned_fusion.py``)
    on these lists, as ``gweta tune --questions`` trains them: each fold's trees learn from its questions with the
    packaged dense list and BM25 (stemmed and paired, the scores read ``depth`` deep), then rank the other fold with
    the dense model tuned on the first in the packaged one's place. A passage's dense rank is its first chunk's."""
    first: dict[str, str] = {}
    for chunk in chunks:
        first.setdefault(unit_of(chunk, True), chunk.chunk_id)
    unit = {c.chunk_id: unit_of(c, True) for c in chunks}
    index = Bm25sIndex.of_chunks(chunks, BM25Settings(stem=True, bigrams=True))
    at = {q.qid: i for i, q in enumerate(questions)}
    lexical = {q.qid: index._search(q.text, depth) for q in questions}

    def asked(q: Question, dense: str) -> Asked:
        hits = [Hit(first[u], 1.0 - r / 1000) for r, u in enumerate(rows[dense][at[q.qid]])]
        return Asked.of(q.text, hits, lexical[q.qid], 1.0, frozenset(q.gold), POOL)

    candidates = Candidates(chunks, index)
    out: dict[str, list[str]] = {}
    for fit_on, score_on in ((folds[0], folds[1]), (folds[1], folds[0])):
        trees = fit(candidates, [asked(q, "dense") for q in fit_on], unit)
        assert trees is not None
        fusion = LearnedFusion(Trees(trees), candidates)
        for q in score_on:
            out[q.qid] = list(dict.fromkeys(unit[c] for c in ordered(fusion, asked(q, "tuned dense"))))
    return out


def table(questions: Sequence[Question], ranked: dict[str, dict[str, list[str]]]) -> None:
    gold = [q.gold for q in questions]
    print("| ranking | R@10 | R@20 | MRR@10 |")
    print("| --- | ---: | ---: | ---: |")
    for name, by_question in ranked.items():
        order = [by_question[q.qid] for q in questions]
        mrr = sum(
            next((1 / r for r, u in enumerate(o[:10], 1) if u in g), 0.0) for o, g in zip(order, gold, strict=True)
        )
        print(
            f"| {name} | {recall_at(order, gold, 10):.3f} | {recall_at(order, gold, 20):.3f} | {mrr / len(gold):.3f} |"
        )


def zimbabwe(work: Path, model: HistGradientBoostingClassifier) -> str:
    """On the Zimbabwe sample: the ranker trained on all of ObliQA's questions (packaged model), unchanged; and a
    ranker trained on the sample's own questions, two folds (each half scored by the ranker trained on the other)."""
    chunks, asked, _ = load("zim_qa", set())
    questions = [Question(f"z{i}", text, gold, kind, False) for i, (text, gold, kind) in enumerate(asked)]
    path = work / "zim_rankings.json"
    if path.exists():
        rows = dict(json.loads(path.read_text()))
    else:
        rows = rankings(chunks, [q.text for q in questions], False, load_sentence_transformer())
        path.write_text(json.dumps(rows))
    passages = Passages(chunks, by_source=False)
    at = {q.qid: i for i, q in enumerate(questions)}
    folds = split_questions(questions, share=0.5)
    own: dict[str, list[str]] = {}
    for fit_on, score_on in ((folds[0], folds[1]), (folds[1], folds[0])):
        own |= learned(passages, at, rows, LISTS, FUSED, fit_on, score_on)
    out = [f"## Zimbabwe sample ({len(passages.text)} sections, {len(questions)} questions)\n"]
    for kind in sorted({q.kind for q in questions}):
        some = [q for q in questions if q.kind == kind]
        ranked = {
            "RRF: packaged dense + BM25 stemmed + paired": {q.qid: rows[FUSED][at[q.qid]] for q in some},
            "learned, trained on ObliQA": ranked_by(model, passages, at, rows, LISTS, FUSED, some),
            f"learned, trained on the other half of these {len(questions)}": {q.qid: own[q.qid] for q in some},
        }
        out.append(f"### {kind}: {len(some)} questions\n")
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            table(some, ranked)
        out.append(buffer.getvalue())
    return "\n".join(out)


if __name__ == "__main__":
    main()
