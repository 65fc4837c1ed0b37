"""Judge the evidence, not the wording: is a question answerable from what retrieval found, does an answer cover
every part of the question, and what an abstention tells the reader. Pure functions, besides the judge protocol."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from api.composer.answerability import AnswerabilityModel, evidence_features
from api.composer.judge.meaning import content_terms
from api.composer.judge.topic import same_family, topic_terms
from api.schemas.documents import Chunk
from api.tools.bm25 import LexicalIndex
from api.tools.retrieval import RetrievalResult
from api.tools.thesaurus import Thesaurus

STRONG_RANK = 3
"""Without a fitted judge, evidence is strong when the best chunk is in both backends' top this many…"""
STRONG_DENSE = 0.45
"""…and its dense cosine to the question is at least this."""
RELATED_DENSE = 0.35
"""Without a fitted judge, evidence is close enough to show as the closest provisions when the best chunk's dense
cosine to the question is at least this."""
COVERED_SHARE = 0.5
"""A part of the question is covered when the answer and its quotes hold this share of its meaning-bearing words."""


@dataclass(frozen=True, slots=True)
class EvidenceVerdict:
    answerable: bool
    probability: float
    reason: str
    ungraded: bool | None = None
    """The verdict on the evidence alone when the model's grade (which only raises it) entered ``answerable``."""
    related: bool = False
    """Whether the evidence, answering or not, is close enough to the question to be shown as the closest
    provisions found (always true when ``answerable``)."""

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
        # A question naming a law the documents lack is told so: another law's provisions are not its closest.
        related = verdict.answerable or (
            verdict.probability >= self.model.related_threshold and features.get("named_law", 1.0) != 0.0
        )
        return EvidenceVerdict(verdict.answerable, round(verdict.probability, 3), verdict.reason, ungraded, related)


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
    return EvidenceVerdict(strong, round(float(dense), 3), reason, related=strong or dense >= RELATED_DENSE)


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


NEARBY = 3
"""An abstention names at most this many nearby provisions."""


def suggestions(asked: str, found: Sequence[Chunk]) -> str:
    """What to ask instead, drawn only from what the search found: the nearest provisions (by heading) that hold
    at least one of the question's own topic words, and a narrower question in those words within the Act that holds
    most of them. Nothing when no provision found holds any of its words (no Act picked at random, no filler word)."""
    topic = topic_terms(asked)
    near: dict[str, Chunk] = {}
    held: dict[str, set[str]] = {}
    for chunk in found:
        terms = content_terms(f"{chunk.section_heading} {chunk.text}")
        holds = {t for t in topic if any(same_family(t, w) for w in terms)}
        if holds and chunk.section_heading:
            near.setdefault(chunk.section_id, chunk)
            held[chunk.section_id] = held.get(chunk.section_id, set()) | holds
    if not near:
        return ""
    shown = list(near.values())[:NEARBY]
    listing = "; ".join(f"{c.label} of the {c.title} ({c.section_heading})" for c in shown)
    act = Counter(c.title for c in near.values()).most_common(1)[0][0]
    said: set[str] = set().union(*(held[c.section_id] for c in near.values() if c.title == act))
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(asked) if topic_terms(w) & said))[:3]
    ask = f" You could ask, for example, “What does the {act} say about {' '.join(words)}?”" if words else ""
    return f"The nearest provisions I found are {listing}.{ask}"


def searched_note(queries: Sequence[str]) -> str:
    """What was searched, for an abstention: each distinct query once, in order."""
    distinct = list(dict.fromkeys(q.strip() for q in queries if q.strip()))
    if not distinct:
        return ""
    return "Searches run: " + "; ".join(f"“{q}”" for q in distinct[:4]) + "."
