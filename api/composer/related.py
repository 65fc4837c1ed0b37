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
from .extractive import Quote, _similarity, _where, candidate_units, quote_provision, select_quotes, shown

RELATED_PROVISIONS = 3
"""By default at most this many provisions (distinct sections) are shown, one sentence each."""
RELATED_RRF_K = 1
"""The fusion constant of ``closest_in_meaning``: small, so each order's first places weigh."""
OPENING = "I could not find a provision that answers this directly; these are the closest I found."
CLOSING = (
    "They may not settle your question: read them in full, or ask again naming the law or the one situation you mean."
)


def closest_sections(hits: Sequence[Retrieved], provisions: int) -> list[str]:
    """The first ``provisions`` distinct sections among ``hits``, in the order their best chunk ranks: two chunks of
    one section are one provision, so a long section found twice does not crowd out its neighbours."""
    sections: list[str] = []
    for hit in hits:
        if hit.chunk.section_id not in sections:
            sections.append(hit.chunk.section_id)
            if len(sections) == provisions:
                break
    return sections


def closest_in_meaning(
    sections: Sequence[str], candidates: Sequence[tuple[int, Retrieved, str]], sims: Sequence[float], provisions: int
) -> list[str]:
    """The ``provisions`` of ``sections`` (in the search's order) ranked best by reciprocal rank fusion of two
    orders: the search's, and the closeness in meaning of each provision's nearest sentence to the question. A
    provision the search ranked a little lower but one of whose sentences is about the question's situation is
    shown before one that only shares its words; the order shown stays the search's."""
    nearest = {s: max((sims[i] for i, c in enumerate(candidates) if c[1].chunk.section_id == s), default=-1.0)
               for s in sections}  # fmt: skip
    by_meaning = {s: r for r, s in enumerate(sorted(sections, key=lambda s: -nearest[s]), start=1)}
    score = {s: 1 / (RELATED_RRF_K + r) + 1 / (RELATED_RRF_K + by_meaning[s]) for r, s in enumerate(sections, 1)}
    chosen = set(sorted(sections, key=lambda s: -score[s])[:provisions])
    return [s for s in sections if s in chosen]


async def related_quotes(
    embedder: Embedder,
    question: str,
    hits: Sequence[Retrieved],
    lay_terms: Sequence[str] = (),
    provisions: int = RELATED_PROVISIONS,
    among: int = 0,
) -> list[Quote]:
    """One sentence of each of the closest provisions: the first ``provisions`` distinct sections of ``hits`` (the
    evidence, best first), best-ranked first. For each, the sentence the quote-only answer would choose from that
    provision alone when one is close enough to answer; otherwise its sentence nearest the question in meaning: the
    provision was found close enough (the caller's evidence verdict), so one of its sentences stands for it.

    A lay question's provision is often not the search's first: showing several distinct provisions, rather than
    the best sentences of the first few chunks (often one long section twice), puts it before the reader more
    often, and each is still quoted verbatim and introduced as the closest found, never as the answer.

    ``among`` larger than ``provisions``: the provisions are chosen among that many distinct sections of ``hits`` by
    ``closest_in_meaning`` (the search's order fused with each one's nearest sentence to the question), and shown in
    the search's order."""
    sections = closest_sections(hits, max(provisions, among))
    candidates = [c for c in candidate_units(hits, len(hits)) if c[1].chunk.section_id in sections]
    if not candidates:
        return []
    meant = with_legal_terms(question, lay_terms)
    similarity = await _similarity(embedder, meant, [unit for _, _, unit in candidates])
    sims = list(similarity) if similarity is not None else [0.0] * len(candidates)
    if len(sections) > provisions:
        sections = closest_in_meaning(sections, candidates, sims, provisions)
    chosen: list[Quote] = []
    for section in sections:
        at = [i for i, (_, hit, _) in enumerate(candidates) if hit.chunk.section_id == section]
        if not at:
            continue  # no quotable sentence in this provision's chunks
        own = select_quotes(question, [candidates[i] for i in at], [sims[i] for i in at], 1, lay_terms=lay_terms)
        if own:
            chosen.append(own[0])
            continue
        best = max(at, key=lambda i: (sims[i], -candidates[i][0]))
        _, hit, unit = candidates[best]
        chosen.append(Quote(hit, min(candidates[i][0] for i in at), unit, 0.0))
    return sorted(chosen, key=lambda q: q.rank)


def related_text(quotes: Sequence[Quote], start: int = 1) -> tuple[str, list[Citation]]:
    """The reply showing ``quotes`` as the closest provisions, [n] markers from ``start``; empty without quotes."""
    if not quotes:
        return "", []
    lines = [OPENING]
    citations = []
    for index, quote in enumerate(quotes, start=start):
        citations.append(make_citation(index, quote.hit.chunk, quote.text, quote_provision(quote)))
        lines.append(f"{_where(quote)} says: “{shown(quote.text)}” [{index}]")
    lines.append(CLOSING)
    return "\n\n".join(lines), citations
