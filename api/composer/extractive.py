"""Answers with no LLM: quote the retrieved sentences that best answer the question, each with its citation.

Every quoted span is a verbatim slice of a stored chunk; the only other words are connective phrasing
("Section 3 of the ... provides:"). When no retrieved sentence shares meaning-bearing words with the question,
the answer abstains and says what was searched.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from api.errors import GwetaError
from api.schemas.events import Citation
from api.text.provisions import provision_at, provision_starts
from api.text.units import quotable_units
from api.text.words import stem, tokenize
from api.tools.embeddings import Embedder
from api.tools.retrieval import Retrieved
from api.tools.thesaurus import with_legal_terms

from .citations import CitationTracker, list_case, make_citation, provision_label, stream_words
from .judge.meaning import content_terms
from .judge.topic import QUESTION_FILLER, same_family, topic_terms

log = logging.getLogger(__name__)
MAX_QUOTES = 3
PART_QUOTES = 2
"""What the own search of each part of a question asked in parts may add to its answer, in quotes at most."""
# Cosine similarity (all-MiniLM-L6-v2) below SIM_FLOOR says nothing; at SIM_FULL and above it is a strong match.
SIM_FLOOR, SIM_FULL = 0.25, 0.65
MIN_LEXICAL = 0.2
MIN_SCORE = 0.2
# How much a sentence's place in the ranking counts against what it shares with the question: retrieval has already
# weighed the whole provision (both search sides, the lay-term thesaurus), which a sentence's word overlap cannot.
# A sentence's merit is what it shares with the question (words and meaning, equally); its score adds its
# provision's rank, so that of two sentences of similar merit the better-ranked provision's comes first.
RANK_SHARE = 0.3
MIN_MERIT = 0.12  # below this a sentence does not answer, whatever its rank
CONTINUES = "It also provides"
"""How a paragraph quoting the same provision as the one before it opens."""
CLOSE_ENOUGH = 0.75  # an answer's further quotes score at least this share of its best quote's score
LAY_TERM_WEIGHT = 0.5  # a thesaurus term counts half as much as one of the question's own words


def terms(text: str) -> set[str]:
    return {stem(t) for t in tokenize(text)}


@dataclass(frozen=True, slots=True)
class Quote:
    hit: Retrieved
    rank: int
    text: str
    score: float


# "contravenes subsection (1)", "in contravention of subsection (2)", "fails to comply with subsection (3)": what a
# penalty punishes. ("Subject to subsection (3)" qualifies a sentence; it does not say what the sentence is about.)
_SUBSECTION_REFERENCE = re.compile(
    r"\b(?:contravenes?|contravention\s+of|fails?\s+to\s+comply\s+with|in\s+breach\s+of)\s+subsections?\s*"
    r"((?:\(\d{1,3}[A-Za-z]?\)(?:\s*(?:,|or|and|to)\s*)?)+)",
    re.I,
)
_SUBSECTION = re.compile(r"(?:^|\n)\s*\((\d{1,3}[A-Za-z]?)\)\s+([^\n]+)")


def referred_terms(hit: Retrieved, unit: str) -> set[str]:
    """The words of the subsections of its own section whose breach a sentence punishes: "A landlord who contravenes
    subsection (1) shall be guilty of an offence" is the penalty for what subsection (1) forbids, so a question about
    cutting off the electricity is answered by it, not by another section's penalty that shares its other words."""
    numbers = [n for m in _SUBSECTION_REFERENCE.finditer(unit) for n in re.findall(r"\((\w+)\)", m.group(1))]
    if not numbers:
        return set()
    texts = {m.group(1): m.group(2) for m in _SUBSECTION.finditer(hit.chunk.text)}
    return set().union(*(terms(texts[n]) for n in numbers if n in texts))


def candidate_units(hits: Sequence[Retrieved], max_hits: int = 4) -> list[tuple[int, Retrieved, str]]:
    """(rank, hit, sentence) for every quotable sentence of the best hits."""
    return [(rank, hit, unit) for rank, hit in enumerate(hits[:max_hits]) for unit in quotable_units(hit.chunk)]


def select_quotes(
    question: str,
    candidates: Sequence[tuple[int, Retrieved, str]],
    similarity: Sequence[float] | None = None,
    max_quotes: int = MAX_QUOTES,
    lay_terms: Sequence[str] = (),
) -> list[Quote]:
    """Score each candidate sentence against the question; return the best few, the best-ranked provision first.

    A sentence scores by the question words it (or its section heading, or a subsection it refers to) contains,
    weighted by rarity among the candidates, by meaning when ``similarity`` gives its embedding cosine to the
    question, and by its provision's place in the retrieval ranking. ``lay_terms`` (the legal terms the lay-term
    thesaurus added to the search) count as question words at half weight, so "my boss sacked me" credits a sentence
    about an employer's dismissal.
    The answer leads with the best sentence of the best-ranked provision that has one close enough to answer, so a
    lay paraphrase is answered from the provision retrieval found rather than from a sentence that merely shares
    its everyday words. Nothing is returned when no sentence is close enough to answer.
    """
    own = terms(question)
    wanted = own | terms(" ".join(lay_terms))
    if not candidates or not own:
        return []
    sims = list(similarity) if similarity is not None else [0.0] * len(candidates)
    unit_terms = [terms(unit) for _, _, unit in candidates]
    # Words rare among the candidates say more about which sentence answers.
    df = {t: sum(t in ut for ut in unit_terms) for t in wanted}
    weight = {t: math.log(1 + len(candidates) / (1 + df[t])) * (1.0 if t in own else LAY_TERM_WEIGHT) for t in wanted}
    total = sum(weight[t] for t in own)
    # A provision ranks where its best chunk ranks: two chunks of one section are one provision.
    section_rank: dict[str, int] = {}
    for rank, hit, _ in candidates:
        section_rank[hit.chunk.section_id] = min(rank, section_rank.get(hit.chunk.section_id, rank))
    quotes = []
    for (_, hit, unit), ut, sim in zip(candidates, unit_terms, sims, strict=True):
        rank = section_rank[hit.chunk.section_id]
        heading = terms(hit.chunk.section_heading) | terms(hit.chunk.title) | referred_terms(hit, unit)
        matched = sum(weight[t] for t in wanted & ut) + 0.5 * sum(weight[t] for t in wanted & heading - ut)
        lexical = min(1.0, matched / total)
        semantic = min(1.0, max(0.0, (sim - SIM_FLOOR) / (SIM_FULL - SIM_FLOOR)))
        merit = 0.5 * lexical + 0.5 * semantic
        if (lexical < MIN_LEXICAL and semantic == 0.0) or merit < MIN_MERIT:
            continue
        score = (1 - RANK_SHARE) * merit + RANK_SHARE / (1 + rank)
        quotes.append(Quote(hit, rank, unit, score))
    quotes.sort(key=lambda q: (-q.score, q.rank))
    if not quotes:
        return []
    # Lead with the best-ranked provision's best sentence (each quote here is close enough to answer on its own).
    top_rank = min(q.rank for q in quotes)
    lead = next(q for q in quotes if q.rank == top_rank)
    quotes.remove(lead)
    quotes.insert(0, lead)
    best = max(q.score for q in quotes)
    chosen: list[Quote] = []
    for quote in quotes:
        if len(chosen) == max_quotes or (chosen and quote.score < CLOSE_ENOUGH * best):
            break
        if _new(quote, chosen):
            chosen.append(quote)
    # A second provision that is relevant enough is quoted too: an answer resting on one provision when the
    # evidence holds two hides the one that may qualify it (the AttributionGate checks this).
    sections = {q.hit.chunk.section_id for q in chosen}
    if len(sections) == 1:
        other = next((q for q in quotes if q.hit.chunk.section_id not in sections and q.score >= MIN_SCORE), None)
        if other is not None:
            chosen = [*chosen[: max_quotes - 1], other]
    return chosen


def _new(quote: Quote, chosen: Sequence[Quote]) -> bool:
    """Whether ``quote`` says something the ``chosen`` quotes do not already quote (neither holds the other)."""
    return all(quote.text not in c.text and c.text not in quote.text for c in chosen)


def quote_provision(quote: Quote) -> str:
    """The subsection or paragraph the quoted words sit in, finer than the chunk's own starting provision."""
    chunk = quote.hit.chunk
    base = chunk.provision_id or chunk.section_id
    offset = chunk.text.find(quote.text)
    return provision_at(provision_starts(chunk.text, chunk.section_id, base), max(offset, 0), base)


_ENDS = (".", ";", ":", "?", "!", "—")


def shown(text: str) -> str:
    """A quote as the reader sees it: a sentence cut short (at a clause, or where its passage ends) ends in " …", as
    a lawyer marks a quotation that goes on, so that a rule's first limb is not read as the whole rule. The
    citation keeps the verbatim words alone."""
    return text if text.rstrip().endswith(_ENDS) else f"{text.rstrip()} …"


def _where(quote: Quote) -> str:
    chunk = quote.hit.chunk
    heading = f" ({chunk.section_heading})" if chunk.section_heading and chunk.section_number else ""
    label = provision_label(chunk)
    return f"{label[0].upper()}{label[1:]} of the {chunk.title}{heading}"


# Headings that name a measure ("Minimum age of marriage", "Period of notice", "Maximum deposit"): the provision sets
# it. Any other heading is what the provision deals with.
_MEASURE = re.compile(
    r"^(?:minimum|maximum|age|period|periods|duration|length|amount|amounts|rate|rates|limit|limits|number|hours|"
    r"time|times|fee|fees|term|terms)\b",
    re.I,
)


def heading_phrase(heading: str) -> str:
    """What a provision does, in words drawn from its own heading: "sets the minimum age of marriage" for "Minimum
    age of marriage", "deals with notice of termination" for "Notice of termination". The heading's words are kept
    as written (only its first letter lowered, unless the first word is an acronym or a name); the verb states
    nothing the heading does not."""
    words = " ".join(heading.strip().rstrip(".:;").split())
    if not words:
        return ""
    first = words.split()[0]
    if not (first.isupper() and len(first) > 1) and not (len(first) > 1 and first[1:].lower() != first[1:]):
        words = words[0].lower() + words[1:]
    return f"sets the {words}" if _MEASURE.match(words) else f"deals with {words}"


def directness(quote: Quote, wanted: set[str]) -> int:
    """How directly a quote's provision answers: how many of the question's topic words (``wanted``, content stems,
    by word family) its heading names. A provision whose heading names what is asked ("Notice of termination" for
    "How much notice …?") answers it directly; one that only mentions the words in passing ("Maternity leave" for a
    question on dismissal) does not."""
    heading = content_terms(quote.hit.chunk.section_heading)
    return sum(any(same_family(word, h) for h in heading) for word in wanted)


def _wanted(question: str, lay_terms: Sequence[str]) -> set[str]:
    return topic_terms(question) | topic_terms(" ".join(lay_terms))


def ordered(quotes: Sequence[Quote], question: str, lay_terms: Sequence[str] = ()) -> list[Quote]:
    """``quotes`` grouped by provision, the provisions ordered by how directly they answer (``directness``; a tie
    keeps the order they were chosen in, the best first), each provision's quotes in the order chosen."""
    wanted = _wanted(question, lay_terms)
    sections = list(dict.fromkeys(q.hit.chunk.section_id for q in quotes))
    best = {s: max(directness(q, wanted) for q in quotes if q.hit.chunk.section_id == s) for s in sections}
    order = sorted(sections, key=lambda s: (-best[s], sections.index(s)))
    return [q for s in order for q in quotes if q.hit.chunk.section_id == s]


def opening(quote: Quote, question: str, lay_terms: Sequence[str] = ()) -> str:
    """The answer's first words, before its first quote: one plain sentence built from the quoted provision's own
    heading when the heading names something the question asks ("Section 3 of the Marriages Act, 2022 sets the
    minimum age of marriage"); else where the quote comes from, its heading in brackets ("… (Heading) provides").
    It states no fact of its own: the heading is the provision's, and the quote that follows carries the answer."""
    chunk = quote.hit.chunk
    wanted = _wanted(question, lay_terms)
    phrase = heading_phrase(chunk.section_heading) if chunk.section_number and directness(quote, wanted) else ""
    if not phrase:
        return f"{_where(quote)} provides"
    label = provision_label(chunk)
    return f"{label[0].upper()}{label[1:]} of the {chunk.title} {phrase}"


def compose_extractive(
    question: str,
    candidates: Sequence[tuple[int, Retrieved, str]],
    similarity: Sequence[float] | None = None,
    start: int = 1,
    lay_terms: Sequence[str] = (),
    sections: Mapping[str, str] | None = None,
) -> tuple[str, list[Citation]]:
    """Return the answer text with [n] markers (from ``start``) and its citations; empty when nothing answers."""
    quotes = select_quotes(question, candidates, similarity, lay_terms=lay_terms)
    return _written(quotes, start, question, lay_terms, sections)


def _written(
    quotes: Sequence[Quote],
    start: int,
    question: str = "",
    lay_terms: Sequence[str] = (),
    sections: Mapping[str, str] | None = None,
) -> tuple[str, list[Citation]]:
    """The answer quoting ``quotes`` (``ordered``, when the ``question`` is given), a paragraph per quote with [n]
    markers from ``start``, and its citations. The first paragraph opens with a plain sentence from its provision's
    heading (``opening``); a further quote of the same provision follows as "It also provides". ``sections``: the
    quoted sections' whole text, by section id, where a list's opening may lie in a chunk before its item's."""
    if question:
        quotes = ordered(quotes, question, lay_terms)
    # A list item quoted from its start is shown after the opening that states the case it holds in ("If an offer …
    # is accepted —” … “the goods shall …"); an opening so shown is not quoted again on its own.
    whole = sections or {}
    cases = {id(q): list_case(q.text, whole.get(q.hit.chunk.section_id) or q.hit.chunk.text) for q in quotes}
    with_items = {(q.hit.chunk.section_id, _clause(cases[id(q)])) for q in quotes if cases[id(q)]}
    quotes = [q for q in quotes if (q.hit.chunk.section_id, _clause(q.text)) not in with_items]
    lines: list[str] = []
    citations: list[Citation] = []
    previous_section = ""
    for index, quote in enumerate(quotes, start=start):
        citations.append(make_citation(index, quote.hit.chunk, quote.text, quote_provision(quote)))
        if quote.hit.chunk.section_id == previous_section:
            lead = CONTINUES
        elif not lines and question:
            lead = opening(quote, question, lay_terms)
        else:
            lead = f"{_where(quote)} provides"
        case = f"“{cases[id(quote)]}” … " if cases[id(quote)] else ""
        lines.append(f"{lead}: {case}“{shown(quote.text)}” [{index}]")
        previous_section = quote.hit.chunk.section_id
    return "\n\n".join(lines), citations


def _clause(text: str) -> str:
    """A clause's words, spacing and its closing dash or colon aside."""
    return " ".join(text.split()).rstrip(" —–:")


def standalone(paragraph: str, citation: Citation) -> str:
    """A paragraph that goes on from a quote of the same provision ("It also provides: “…”"), written to stand on
    its own when that quote is not shown (left out by verification): it names its provision, as a first quote does."""
    if not paragraph.startswith(f"{CONTINUES}:"):
        return paragraph
    heading = f" ({citation.heading})" if citation.heading else ""
    label = citation.section
    return f"{label[:1].upper()}{label[1:]} of the {citation.title}{heading} provides{paragraph[len(CONTINUES) :]}"


def abstention(question: str, searched: int) -> str:
    filler = {w for word in QUESTION_FILLER for w in tokenize(word)}
    looked_for = ", ".join(sorted(set(tokenize(question)) - filler)[:8]) or "your question"
    return (
        "I could not find an answer to this in the documents I have, so I will not guess. "
        f"I searched {searched} passages for: {looked_for}."
    )


async def quote_answer(
    embedder: Embedder,
    question: str,
    hits: Sequence[Retrieved],
    searched: int,
    tracker: CitationTracker,
    lay_terms: Sequence[str] = (),
) -> None:
    """Stream the extractive answer (numbered after any citations already offered), or an abstention."""
    text, citations = await extractive_answer(embedder, question, hits, len(tracker.available) + 1, lay_terms)
    tracker.available.update({c.index: c for c in citations})
    stream_words(text or abstention(question, searched), tracker)


async def extractive_answer(
    embedder: Embedder,
    question: str,
    hits: Sequence[Retrieved],
    start: int = 1,
    lay_terms: Sequence[str] = (),
    sections: Mapping[str, str] | None = None,
) -> tuple[str, list[Citation]]:
    """The extractive answer and its citations, not streamed (empty when nothing answers). A sentence's meaning is
    weighed against the question with the legal terms its search added (``lay_terms``), as the dense search embedded
    it: a lay question's everyday words ("the business was sold") would otherwise favour a sentence about something
    else that shares them over the provision the search found by those terms ("transfer of undertaking")."""
    quotes = await _quotes(embedder, question, hits, lay_terms, MAX_QUOTES)
    return _written(quotes, start, question, lay_terms, sections)


async def _quotes(
    embedder: Embedder, question: str, hits: Sequence[Retrieved], lay_terms: Sequence[str], max_quotes: int
) -> list[Quote]:
    """The best quotes for ``question`` among the best of ``hits``, by wording and by meaning."""
    candidates = candidate_units(hits)
    meant = with_legal_terms(question, lay_terms)
    similarity = await _similarity(embedder, meant, [unit for _, _, unit in candidates])
    return select_quotes(question, candidates, similarity, max_quotes, lay_terms=lay_terms)


@dataclass(frozen=True, slots=True)
class Part:
    """What one part of a question asked in parts found: its own search's best hits and the legal terms it added."""

    hits: Sequence[Retrieved]
    lay_terms: Sequence[str] = ()


async def extractive_answer_in_parts(
    embedder: Embedder,
    question: str,
    hits: Sequence[Retrieved],
    parts: Sequence[Part],
    start: int = 1,
    lay_terms: Sequence[str] = (),
    sections: Mapping[str, str] | None = None,
) -> tuple[str, list[Citation]]:
    """The extractive answer to a question asked in parts: the answer from all the evidence (``hits``, the first
    part's first), then what each part's own search adds, in the parts' order. Every set of quotes is weighed against
    the whole question; one whose best quote does not come close enough to the best set's is left out (re-evaluation
    then says which part was not found); a sentence is quoted once.

    From all the evidence alone, the quotes came from the first part's provisions and the second part went
    unanswered (one of ten two-part questions over the 385 Acts had both parts' provisions cited); weighed against
    its part alone, a part with no subject of its own ("… and what does it consider?") was answered by sentences that
    only shared its words."""
    answers = await asyncio.gather(
        _quotes(embedder, question, hits, lay_terms, MAX_QUOTES),
        *(_quotes(embedder, question, part.hits, part.lay_terms, PART_QUOTES) for part in parts),
    )
    best = max((quotes[0].score for quotes in answers if quotes), default=0.0)
    chosen: list[Quote] = []
    for quote in (q for quotes in answers if quotes and quotes[0].score >= CLOSE_ENOUGH * best for q in quotes):
        if _new(quote, chosen):
            chosen.append(quote)
    return _written(chosen, start, question, lay_terms, sections)


async def _similarity(embedder: Embedder, question: str, sentences: list[str]) -> list[float] | None:
    """Cosine of each sentence to the question; None (lexical scoring only) if the embedder fails."""
    if not sentences:
        return []
    try:
        asked = await embedder.embed_query(question)  # computed once per request, then reused
        vectors = await embedder.embed_documents(sentences)
    except GwetaError as exc:
        log.warning("sentence similarity unavailable: %s", exc.message)
        return None
    return [float(v) for v in vectors @ asked]
