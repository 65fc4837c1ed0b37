"""Judge the evidence, not the wording: is a question answerable from what retrieval found, does an answer cover
every part of the question, and what an abstention tells the reader. Pure functions, besides the judge protocol."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from api.composer.answerability import AnswerabilityModel, evidence_features
from api.composer.support import content_terms
from api.tools.bm25 import LexicalIndex
from api.tools.retrieval import RetrievalResult
from api.tools.thesaurus import Thesaurus

STRONG_RANK = 3
"""Without a fitted judge, evidence is strong when the best chunk is in both backends' top this many…"""
STRONG_DENSE = 0.45
"""…and its dense cosine to the question is at least this."""
COVERED_SHARE = 0.5
"""A part of the question is covered when the answer and its quotes hold this share of its meaning-bearing words."""


@dataclass(frozen=True, slots=True)
class EvidenceVerdict:
    answerable: bool
    probability: float
    reason: str
    ungraded: bool | None = None
    """The verdict on the evidence alone when the model's grade (which only raises it) entered ``answerable``."""

    @property
    def without_grade(self) -> bool:
        """What the quote-only path decides on this evidence."""
        return self.answerable if self.ungraded is None else self.ungraded


class EvidenceJudge(Protocol):
    """Decides from one search's evidence whether the corpus answers the question (``grade``: the share of passages
    the model judged relevant, when it graded them)."""

    def __call__(
        self, question: str, result: RetrievalResult, grade: float | None, tenant: str = ""
    ) -> EvidenceVerdict: ...


@dataclass(frozen=True, slots=True)
class FittedJudge:
    """The answerability model fitted on the development questions (``api/composer/answerability.py``) as a judge."""

    model: AnswerabilityModel
    lexical: LexicalIndex
    thesaurus: Thesaurus | None = None
    titles_for: Callable[[str], Sequence[str]] | None = None
    """The titles a caller of a tenant may read (``Corpus.titles_for``), for the check that a law the question
    names is held: never another tenant's, whose names an abstention would otherwise give away."""

    def __call__(
        self, question: str, result: RetrievalResult, grade: float | None, tenant: str = ""
    ) -> EvidenceVerdict:
        titles = self.titles_for(tenant) if self.titles_for is not None else None
        features = evidence_features(question, result, self.lexical, self.thesaurus, titles)
        verdict = self.model.decide(features, grade)
        ungraded = None if grade is None else self.model.decide(features).answerable
        return EvidenceVerdict(verdict.answerable, round(verdict.probability, 3), verdict.reason, ungraded)


def strong_by_scores(result: RetrievalResult) -> EvidenceVerdict:
    """The fallback verdict from the best hit's own scores: found near the top by meaning and by words alike."""
    if not result.hits:
        return EvidenceVerdict(False, 0.0, "nothing was found")
    ranks = result.hits[0].ranks
    best = result.hits[0].chunk.chunk_id
    dense = next((score for cid, score in result.stages.get("dense", []) if cid == best), 0.0)
    agreed = all(ranks.get(source, STRONG_RANK + 1) <= STRONG_RANK for source in ("dense", "bm25"))
    strong = agreed and dense >= STRONG_DENSE
    reason = (f"the best passage ranks {ranks.get('dense', '-')} by meaning and {ranks.get('bm25', '-')} by words "
              f"(cosine {dense:.2f})")  # fmt: skip
    return EvidenceVerdict(strong, round(float(dense), 3), reason)


def strong_evidence(
    result: RetrievalResult, judge: EvidenceJudge | None, question: str, tenant: str = ""
) -> EvidenceVerdict:
    """Strong evidence overrules a model's ``clarify`` or ``out_of_scope``: the judge's verdict when there is one,
    and the best hit's scores either way (a judge saying answerable is enough, so is agreement of both backends)."""
    by_scores = strong_by_scores(result)
    if judge is None:
        return by_scores
    verdict = judge(question, result, None, tenant)
    return verdict if verdict.answerable or not by_scores.answerable else by_scores


def settled(judge: EvidenceJudge | None, question: str, result: RetrievalResult, tenant: str = "") -> bool:
    """True when one search's evidence answers the question whatever a model's grade of it would say: the judge finds
    it answerable even with a grade of nothing relevant (the grade only moves its verdict up with the share judged
    relevant). No judge: nothing is settled."""
    return judge is not None and judge(question, result, 0.0, tenant).answerable


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def uncovered_parts(parts: Sequence[str], answer: str, quotes: Iterable[str]) -> list[str]:
    """The parts of a question (the plan's sub-questions) that the answer and its quoted evidence do not address:
    fewer than half of the part's meaning-bearing words occur in them (a part with no such words counts as covered)."""
    said = content_terms(" ".join([answer, *quotes]))
    missing = []
    for part in parts:
        wanted = content_terms(part)
        if wanted and len(wanted & said) / len(wanted) < COVERED_SHARE:
            missing.append(part)
    return missing


def narrower_question(asked: str, titles: Sequence[str]) -> str:
    """A suggestion for a question the corpus is likelier to answer: name the Act, and one situation."""
    words = [w for w in _WORD.findall(asked) if w.lower() in content_terms(w)][:4]
    topic = " ".join(words).lower() or "your situation"
    if titles:
        return f"Try a narrower question that names the law and one situation, e.g. “What does the {titles[0]} " \
               f"say about {topic}?”"  # fmt: skip
    return f"Try a narrower question that names the law and one situation, e.g. “What does the law say about {topic}?”"


def searched_note(queries: Sequence[str]) -> str:
    """What was searched, for an abstention: each distinct query once, in order."""
    distinct = list(dict.fromkeys(q.strip() for q in queries if q.strip()))
    if not distinct:
        return ""
    return "Searches run: " + "; ".join(f"“{q}”" for q in distinct[:4]) + "."
