"""The closest provisions, for a question that nothing found answers: quoted verbatim and cited, and introduced as
the closest found, never as the answer.

A bare "I could not find this" leaves a reader with nothing, although the search often found the provisions on the
question's subject that stop short of settling it (the right Act, a neighbouring rule). Those are shown instead,
each as one verbatim sentence with its citation, between an opening that says nothing found answers the question
directly and a closing that tells the reader to read them in full. No sentence here says or implies that a quoted
provision answers the question: the only words besides the quotes are these two fixed sentences and the
"Section 3 of the … says:" that names each quote's place.
"""

from __future__ import annotations

from collections.abc import Sequence

from api.schemas.events import Citation
from api.tools.embeddings import Embedder
from api.tools.retrieval import Retrieved
from api.tools.thesaurus import with_legal_terms

from .citations import make_citation
from .extractive import Quote, _similarity, _where, candidate_units, quote_provision, select_quotes

RELATED_QUOTES = 2
"""At most this many provisions are shown, one sentence each."""
RELATED_HITS = 3
"""They are chosen from this many of the best hits."""
OPENING = "I could not find a provision that answers this directly; these are the closest I found."
CLOSING = (
    "They may not settle your question: read them in full, or ask again naming the law or the one situation you mean."
)


async def related_quotes(
    embedder: Embedder, question: str, hits: Sequence[Retrieved], lay_terms: Sequence[str] = ()
) -> list[Quote]:
    """The best sentence of each of the closest provisions (at most ``RELATED_QUOTES``, one per section, the
    best-ranked first). A sentence close enough to answer, as the quote-only answer chooses them, is preferred;
    otherwise the sentence of the best-ranked provision nearest the question in meaning: the provision was found
    close enough (the caller's evidence verdict), so one of its sentences stands for it."""
    candidates = candidate_units(hits, RELATED_HITS)
    if not candidates:
        return []
    meant = with_legal_terms(question, lay_terms)
    similarity = await _similarity(embedder, meant, [unit for _, _, unit in candidates])
    chosen: list[Quote] = []
    for quote in select_quotes(question, candidates, similarity, RELATED_QUOTES * 2, lay_terms=lay_terms):
        if all(quote.hit.chunk.section_id != q.hit.chunk.section_id for q in chosen):
            chosen.append(quote)
    if not chosen:
        sims = list(similarity) if similarity is not None else [0.0] * len(candidates)
        top = min(rank for rank, _, _ in candidates)
        best = max((i for i, (rank, _, _) in enumerate(candidates) if rank == top), key=lambda i: sims[i])
        rank, hit, unit = candidates[best]
        chosen.append(Quote(hit, rank, unit, 0.0))
    return sorted(chosen[:RELATED_QUOTES], key=lambda q: q.rank)


def related_text(quotes: Sequence[Quote], start: int = 1) -> tuple[str, list[Citation]]:
    """The reply showing ``quotes`` as the closest provisions, [n] markers from ``start``; empty without quotes."""
    if not quotes:
        return "", []
    lines = [OPENING]
    citations = []
    for index, quote in enumerate(quotes, start=start):
        citations.append(make_citation(index, quote.hit.chunk, quote.text, quote_provision(quote)))
        lines.append(f"{_where(quote)} says: “{quote.text}” [{index}]")
    lines.append(CLOSING)
    return "\n\n".join(lines), citations
