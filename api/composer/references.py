"""The provisions an answer's cited words refer to, quoted verbatim and cited as their own citations (``kind:
"reference"``).

"Subject to section 12, a licence lapses …" is read with section 12; "the period referred to in subsection (3)" with
subsection (3). Ingestion resolved such references to provision ids (``api.tools.links``) and research may already
have fetched the referenced provision into the evidence, but an answer quotes a provision only when its own words
match the question. So when a cited quote itself makes a reference the link graph resolves, the referenced provision is
added below the answer as its own paragraph and citation: its sentence most relevant to the question and to the
words around the reference, quoted verbatim, which passes the same check as every other quote. Like a definition, it
supports no other sentence; it is the context the cited words point to.

Bounds: at most ``MAX_REFERENCES`` an answer; only dependencies ("subject to", "referred to in", …), never plain
mentions; only from a document a caller of the tenant may read; never a provision whose words the answer already quotes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from api.schemas.documents import Chunk, Document, Section
from api.schemas.events import Citation
from api.text.provisions import provision_at, provision_span, provision_starts
from api.text.sentences import sentence_spans
from api.text.words import stem, tokenize
from api.tools.links import FOLLOWED, Definition, Links, Reference

from .citations import MIN_QUOTE_WORDS, list_case, make_citation, provision_label, subsection_label
from .definitions import chunk_holding, everyday_terms

MAX_REFERENCES = 2
"""At most this many referenced provisions are added to one answer."""
MAX_QUOTED_CHARS = 600
"""A longer sentence is quoted up to the last item or clause boundary before this many characters."""
CONTEXT_CHARS = 200
"""How much of the cited quote on each side of a reference is read as the context the referenced words must fit."""

MAX_TERM_WORDS = 4
"""A defined term longer than this is a description, not a name a provision uses."""
MIN_SHARED_OUTSIDE = 2
"""A provision that refers to a cited one, from outside the answer's evidence, shares at least this many words with
the question (one from the evidence at least one): the sections that refer to a provision are many, and only those
about what was asked are read with it."""

_LABEL = re.compile(r"^\s*(?:\(\s*\w{1,4}\s*\)\s*)+")
_NOTE_BEFORE = re.compile(r"\s*(?:\[[^\[\]]*\]\s*)+")
_NOTE_AFTER = re.compile(r"\s*(?:\[[^\[\]]*\]\s*[.;]?\s*)+$")
_JOINED_ITEM = re.compile(r"(?:(?:and|or)\s+)?(?:\(\s*\w{1,4}\s*\)\s*)+")
_DEFINES_IN = re.compile(r"[\"”’']\s*,?\s*(?:means|includes)\b")


@dataclass(frozen=True, slots=True)
class Referenced:
    """A referenced provision to add: the reference, the words to quote, where they are, and who refers to it."""

    reference: Reference
    chunk: Chunk
    quote: str
    provision_id: str
    referred_by: Citation
    refers: bool = False
    """True when the quoted provision is the one that makes the reference, to the cited ``referred_by``."""


def _stems(text: str) -> set[str]:
    return {stem(t) for t in tokenize(text) if not t.isdigit()}


def _normal(text: str) -> str:
    return " ".join(text.split())


def _heading_end(section: Section) -> int:
    """Where the section's words start after its number and heading ("3. Hygiene"), which are not its words."""
    heading = r"\s+".join(re.escape(w) for w in section.heading.split())
    opening = re.match(rf"\s*{re.escape(section.number)}\.?\s+{heading}\s*" if heading else r"\s*", section.text)
    return opening.end() if opening is not None else 0


def _clipped(sentence: str) -> str:
    if len(sentence) <= MAX_QUOTED_CHARS:
        return sentence
    cut = max(sentence.rfind(";", 0, MAX_QUOTED_CHARS), sentence.rfind(":", 0, MAX_QUOTED_CHARS))
    return sentence[: cut + 1] if cut > 40 else sentence[:MAX_QUOTED_CHARS].rsplit(" ", 1)[0]


def best_quote(text: str, start: int, end: int, wanted: set[str], context: set[str]) -> tuple[str, int]:
    """The sentence of ``text[start:end]`` that shares most words with ``wanted`` (the question's), on a tie the
    first, then the one sharing most with ``context`` (the words around the reference), with the next sentences
    while it is shorter than a quote worth checking; and where it starts in ``text``. ('', 0) when the span holds no
    sentence."""
    return next(iter(best_quotes(text, start, end, wanted, context)), ("", 0))


def best_quotes(text: str, start: int, end: int, wanted: set[str], context: set[str]) -> list[tuple[str, int]]:
    """Every quote ``best_quote`` could make of ``text[start:end]``, the best first: a quote one chunk cannot hold
    gives way to the next."""
    spans = []
    offset = start
    for sentence, separator, _ in sentence_spans(text[start:end]):
        at = text.find(sentence, offset)
        if at < 0:
            continue
        offset = at + len(sentence)
        # A provision's own label ("(1) ", "(b) ") is where it starts, not words it says.
        label = _LABEL.match(sentence)
        if label is not None:
            at, sentence = at + label.end(), sentence[label.end() :]
        # An editorial note ("[subsection amended by section 49 of Act 23 of 2001]") is not the law's words.
        if (note := _NOTE_BEFORE.match(sentence)) is not None:
            at, sentence = at + note.end(), sentence[note.end() :]
        if (note := _NOTE_AFTER.search(sentence)) is not None:
            sentence, separator = sentence[: note.start()], ""
        if sentence.strip():
            spans.append((at, sentence + separator))
    if not spans:
        return []
    # The question's words first; then the provision's opening, where a reader of a reference starts; then the words
    # around the reference.
    scores = [(len(_stems(s) & wanted), i == 0, len(_stems(s) & context), -i) for i, (_, s) in enumerate(spans)]
    quotes = []
    for best in sorted(range(len(spans)), key=lambda i: scores[i], reverse=True):
        at, quote = spans[best][0], spans[best][1]
        for _, following in spans[best + 1 :]:
            if len(quote.split()) >= MIN_QUOTE_WORDS or len(quote) + len(following) > MAX_QUOTED_CHARS:
                break
            quote += following
        quotes.append((_clipped(quote.strip()), at))
    return quotes


def _already_quoted(quote: str, citations: Sequence[Citation]) -> bool:
    normal = _normal(quote)
    return any(normal in _normal(c.quote) or (len(c.quote) > 40 and _normal(c.quote) in normal) for c in citations)


def referring(
    citations: Iterable[Citation], links: Links, documents: Mapping[str, Document | None] | None = None
) -> list[tuple[Reference, Citation]]:
    """The dependencies the cited words make (after "subject to", "referred to in" and the like), one for each place
    a reference is made (a range, "subsections (2) to (5)", counts once, by its first provision). The cited words are
    the quote; with ``documents``, also the rest of the provision the quote is cited to and the lead-in of each
    provision above it ("(2) If, … without belonging to a community referred to in section 75(3), and at the time of
    the marriage—" for a quoted paragraph (c)), which a lawyer reads with the quote. Ranked: a reference in the
    quote first; then one to a section the answer does not already cite (a reader holding section 34 needs section
    25 more than another subsection of 34); then the most binding relation; then the answer's order and the place
    in the quote. A plain mention ("under section 6") is left out: what it names is rarely what the quoted words
    mean."""
    provisions = [c for c in citations if c.kind == "provision"]
    cited_sections = {c.section_id for c in provisions}
    ranked: list[tuple[tuple[int, int, int, int, int], Reference, Citation]] = []
    seen: set[tuple[str, str, int]] = set()
    for order, citation in enumerate(provisions):
        quote = _normal(citation.quote)
        spans = _read_with(citation, documents) if documents is not None else None
        for reference in links.refers_to(citation.section_id):
            if reference.relation not in FOLLOWED:
                continue
            at = quote.find(reference.words)
            if spans is None:
                if at < 0:
                    continue
                place = 0
            elif (place := next((i for i, (a, b) in enumerate(spans) if a <= reference.at < b), -1)) < 0:
                continue
            if (citation.section_id, reference.words, reference.at) in seen:
                continue  # one provision for each reference made: a range's first
            seen.add((citation.section_id, reference.words, reference.at))
            elsewhere = int(reference.target.split("(")[0] in cited_sections)
            key = (min(place, 1), elsewhere, FOLLOWED.index(reference.relation), order, max(at, 0))
            ranked.append((key, reference, citation))
    return [(r, c) for _, r, c in sorted(ranked, key=lambda r: r[0])]


def _read_with(citation: Citation, documents: Mapping[str, Document | None]) -> list[tuple[int, int]] | None:
    """Where the words a citation stands for run in its section's text, the quote first: the quote, the provision
    it is cited to, and the lead-in of each provision above that one (its words before its first item); None when
    the quote cannot be found in its section (the quote's own words are then all there is). A provision or lead-in
    that defines terms is left out: the other definitions of an interpretation provision are not what one of them
    depends on."""
    document = documents.get(citation.doc_key)
    section = document.section(citation.section_id) if document is not None else None
    at = section.text.find(citation.quote.rstrip(" …").rstrip()) if section is not None else -1
    if section is None or at < 0:
        return None
    text, section_id = section.text, citation.section_id
    spans = [(at, at + len(citation.quote))]
    provision = citation.provision_id or section_id
    starts = provision_starts(text, section_id)
    if provision != section_id and (own := provision_span(text, section_id, provision)) is not None:
        spans.append(own)
    labels = re.findall(r"\([^()]*\)", provision.removeprefix(section_id))
    for depth in range(len(labels) - 1, 0, -1):
        above = section_id + "".join(labels[:depth])
        span = provision_span(text, section_id, above)
        first_item = next((o for o, p in starts if p.startswith(above + "(")), None)
        if span is not None and first_item is not None and span[0] < first_item:
            spans.append((span[0], first_item))
    return [spans[0], *(s for s in spans[1:] if not _DEFINES_IN.search(text[s[0] : s[1]]))]


def needed_references(
    question: str,
    citations: Sequence[Citation],
    links: Links,
    chunks: Mapping[str, Chunk],
    documents: Mapping[str, Document | None],
    tenant: str,
    limit: int = MAX_REFERENCES,
) -> list[Referenced]:
    """Up to ``limit`` provisions the cited quotes refer to (``referring``), each with its words to quote: only from
    the public corpus or the caller's ``tenant``, only words found verbatim in the provision's section and one of its
    chunks, and never a provision already cited or whose words the answer already quotes."""
    found: list[Referenced] = []
    taken = {(c.provision_id or c.section_id) for c in citations}
    wanted = _stems(question)
    for reference, citation in referring(citations, links, documents):
        section_id = reference.target.split("(")[0]
        doc_key = section_id.split("#")[0]
        opening = chunks.get(f"{section_id}/c0")
        if reference.target in taken or opening is None or opening.tenant not in ("", tenant):
            continue
        document = documents.get(doc_key)
        section = document.section(section_id) if document is not None else None
        if section is None:
            continue
        quote_at = _normal(citation.quote).find(reference.words)
        around = _normal(citation.quote)[max(0, quote_at - CONTEXT_CHARS) : quote_at + CONTEXT_CHARS]
        start, end = provision_span(section.text, section_id, reference.target) or (0, len(section.text))
        start = max(start, _heading_end(section))
        quotes = best_quotes(section.text, start, end, wanted, _stems(around))
        quote, at, chunk = next(((q, a, c) for q, a in quotes if (c := chunk_holding(q, section_id, chunks))),
                                ("", 0, None))  # fmt: skip
        if chunk is None or chunk.tenant not in ("", tenant) or _already_quoted(quote, citations):
            continue
        if any(_normal(quote) == _normal(f.quote) for f in found):
            continue
        taken.add(reference.target)
        provision_id = provision_at(provision_starts(section.text, section_id), at, section_id)
        found.append(Referenced(reference, chunk, quote, provision_id, citation))
        if len(found) == limit:
            break
    return found


def _overlap(one: str, other: str) -> bool:
    """Whether two provision ids name the same words: one is the other or within it."""
    return one == other or one.startswith(other + "(") or other.startswith(one + "(")


def referring_quote(text: str, at: int, start: int) -> tuple[str, int]:
    """The sentence of ``text`` (from ``start``) that holds the referring words at ``at``, without its provision's
    label, and where it starts; a sentence too long to quote whole is cut to the clause around them. ('', 0) when
    none holds them."""
    offset = start
    for sentence, separator, _ in sentence_spans(text[start:]):
        found = text.find(sentence, offset)
        if found < 0:
            continue
        offset = found + len(sentence)
        if not found <= at < offset:
            continue
        label = _LABEL.match(sentence)
        if label is not None:
            found, sentence = found + label.end(), sentence[label.end() :]
        quote = (sentence + separator).strip()
        if len(quote) > MAX_QUOTED_CHARS:
            # The clause around the reference: from the last item or clause boundary before it to the next after.
            inside = at - found
            left = max(quote.rfind(";", 0, inside), quote.rfind(":", 0, inside), quote.rfind("—", 0, inside)) + 1
            right = min((i for i in (quote.find(";", inside), quote.find(":", inside)) if i >= 0), default=len(quote))
            clause = quote[left : right + 1].strip()
            # The word that joins the item to the one before ("…; and (b) the testator signs …") and the item's
            # label are not its words: the quote starts at its words, and is cited to the item that holds them.
            clause = clause[(opening.end() if (opening := _JOINED_ITEM.match(clause)) else 0) :]
            found += quote.find(clause, left)
            quote = _clipped(clause)
        return quote, found
    return "", 0


def needed_referring(
    question: str,
    citations: Sequence[Citation],
    links: Links,
    chunks: Mapping[str, Chunk],
    documents: Mapping[str, Document | None],
    tenant: str,
    evidence: Sequence[str] = (),
    limit: int = 1,
) -> list[Referenced]:
    """Up to ``limit`` provisions that depend on a cited one: those whose own words make it the provision they are
    "subject to", "in terms of", "referred to in" (the dependency forms research follows), each with the sentence
    that makes the reference. "Section 22 is subject to section 25" is read with section 22 when an answer cites
    section 25: the cited words qualify a rule that section 22 states. Candidates are the sections of ``evidence``
    (the answer's evidence, by section id, best first) and of the cited provision's own document; one from the
    evidence comes first, then the most binding relation, then the one sharing most words with the question (at
    least one, and ``MIN_SHARED_OUTSIDE`` outside the evidence). Only from the public corpus or the caller's
    ``tenant``, only words found verbatim in the section and one of its chunks, and never a provision the answer
    already cites."""
    if limit <= 0:
        return []
    wanted = _stems(question)
    in_evidence = set(evidence)
    quoted = [c.provision_id or c.section_id for c in citations]
    ranked: list[tuple[tuple[int, ...], Referenced]] = []
    for order, citation in enumerate(c for c in citations if c.kind == "provision"):
        for reference in links.referred_by(citation.section_id):
            section_id = reference.source.split("(")[0]
            if reference.relation not in FOLLOWED or any(_overlap(reference.source, q) for q in quoted):
                continue
            if not _overlap(reference.target, citation.provision_id or citation.section_id):
                continue
            if _in_definition(reference, links):
                continue  # a definition made by the cited provision is read through the provisions using its term
            doc_key = section_id.split("#")[0]
            held = section_id in in_evidence
            if not held and doc_key != citation.doc_key:
                continue
            opening = chunks.get(f"{section_id}/c0")
            document = documents.get(doc_key)
            section = document.section(section_id) if document is not None else None
            if opening is None or opening.tenant not in ("", tenant) or section is None:
                continue
            quote, at = referring_quote(section.text, reference.at, _heading_end(section))
            if not quote or _normal(reference.words) not in _normal(quote):
                continue
            shared = len(_stems(f"{section.heading} {quote}") & wanted)
            if shared < (1 if held else MIN_SHARED_OUTSIDE):
                continue
            chunk = chunk_holding(quote, section_id, chunks)
            if chunk is None or chunk.tenant not in ("", tenant) or _already_quoted(quote, citations):
                continue
            provision_id = provision_at(provision_starts(section.text, section_id), at, section_id)
            key = (0 if held else 1, FOLLOWED.index(reference.relation), -shared, order)
            ranked.append((key, Referenced(reference, chunk, quote, provision_id, citation, refers=True)))
        ranked += _using_terms(citation, order, links, chunks, documents, tenant, wanted, in_evidence, quoted)
    # Within a tier and relation, a provision that the other candidates' quoted words are framed in terms of comes
    # first: it states the rule they build on, and they are read after it.
    basis = _framing(ranked, links, documents)
    ranked = [((*key[:2], -basis[item.chunk.section_id], *key[2:]), item) for key, item in ranked]
    found: list[Referenced] = []
    for _, item in sorted(ranked, key=lambda r: r[0]):
        if any(item.chunk.section_id == f.chunk.section_id for f in found):
            continue
        found.append(item)
        if len(found) == limit:
            break
    return found


def _framing(
    ranked: Sequence[tuple[tuple[int, ...], Referenced]], links: Links, documents: Mapping[str, Document | None]
) -> dict[str, int]:
    """For each candidate section of ``ranked``, how many other candidate sections make it, in their quoted words, a
    provision they depend on ("no amendment … before the will has been signed and witnessed in terms of section
    eight" frames the quote in terms of section eight): the provision the others are framed in terms of."""
    framed: dict[str, set[str]] = {item.chunk.section_id: set() for _, item in ranked}
    for _, item in ranked:
        section_id = item.chunk.section_id
        document = documents.get(item.chunk.doc_key)
        section = document.section(section_id) if document is not None else None
        start = section.text.find(item.quote) if section is not None else -1
        if start < 0:
            continue
        for reference in links.refers_to(section_id):
            target = reference.target.split("(")[0]
            if reference.relation in FOLLOWED and target != section_id and target in framed:
                if start <= reference.at < start + len(item.quote):
                    framed[target].add(section_id)
    return {section_id: len(sources) for section_id, sources in framed.items()}


def _in_definition(reference: Reference, links: Links) -> bool:
    """Whether ``reference`` is made inside a definition of its document ("'competent witness' means a person who in
    terms of section seven …")."""
    section = reference.source.split("(")[0]
    return any(
        d.provision_id.split("(")[0] == section and _normal(reference.words) in _normal(d.text)
        for d in links.definitions.get(section.split("#")[0], [])
    )


USES = "uses"
"""The relation of a provision that uses a term its document defines by reference to a cited provision."""


DEFINED_USE = "uses the term defined"
"""The relation of a provision that uses a term whose definition the cited words are."""
MIN_DEFINITION_QUOTE = 20
"""Cited words shorter than this are too few to say which definition they belong to."""


def _defined_by_quote(citation: Citation, links: Links) -> list[Definition]:
    """The definitions of the cited document whose words hold the cited quote (the answer quotes the definition
    itself): of the whole document, and of a term a provision can use that is not one of everyday drafting
    ("Minister", "person"), whose users are too many to say which one the definition is read for."""
    words = _normal(citation.quote).rstrip(" …;:,.")  # a definition's words end before the separator that follows
    if len(words) < MIN_DEFINITION_QUOTE:
        return []
    return [
        d
        for d in links.definitions.get(citation.doc_key, [])
        if d.provision_id.split("(")[0] == citation.section_id and not d.scope
        and len(d.term.split()) <= MAX_TERM_WORDS and d.term.casefold() not in everyday_terms()
        and words in _normal(d.text)
    ]  # fmt: skip


def _using_terms(
    citation: Citation,
    order: int,
    links: Links,
    chunks: Mapping[str, Chunk],
    documents: Mapping[str, Document | None],
    tenant: str,
    wanted: set[str],
    in_evidence: set[str],
    quoted: list[str],
) -> list[tuple[tuple[int, ...], Referenced]]:
    """Provisions that depend on the cited one through a term: its document defines the term by reference to it
    ("'competent witness' means a person who in terms of section seven is competent to witness …"), or the cited
    words are the term's definition itself, and they use the term ("… in the presence of two or more competent
    witnesses"), so the cited provision settles who or what they speak of. Ranked after the provisions that name it,
    by the same rules (from the evidence first, then the words shared with the question)."""
    document = documents.get(citation.doc_key)
    if document is None:
        return []
    terms = []
    for reference in links.referred_by(citation.section_id):
        if not _overlap(reference.target, citation.provision_id or citation.section_id):
            continue
        for definition in links.definitions.get(citation.doc_key, []):
            if definition.provision_id.split("(")[0] != reference.source.split("(")[0] or definition.scope:
                continue
            if _normal(reference.words) in _normal(definition.text) and len(definition.term.split()) <= MAX_TERM_WORDS:
                terms.append((definition, reference))
    # The cited words may be a definition's own (a quoted item of "'dependant' means— … (c) a minor child"): the
    # provisions using its term are what it is read for.
    cited = citation.provision_id or citation.section_id
    for definition in _defined_by_quote(citation, links):
        terms.append((definition, Reference(source=cited, target=cited, words=definition.term, relation=DEFINED_USE)))
    ranked: list[tuple[tuple[int, ...], Referenced]] = []
    for definition, reference in terms:
        pattern = re.compile(rf"\b{re.escape(definition.term)}(?:e?s)?\b", re.I)  # and its plural
        defining = definition.provision_id.split("(")[0]
        for section in document.sections:
            section_id = section.section_id
            if section_id in (defining, citation.section_id) or any(_overlap(section_id, q) for q in quoted):
                continue
            used = pattern.search(section.text, _heading_end(section))
            held = section_id in in_evidence
            opening = chunks.get(f"{section_id}/c0")
            if used is None or opening is None or opening.tenant not in ("", tenant):
                continue
            quote, at = referring_quote(section.text, used.start(), _heading_end(section))
            stems = _stems(f"{section.heading} {quote}")
            shared = len(stems & wanted)
            if not quote or shared < (1 if held else MIN_SHARED_OUTSIDE):
                continue
            # A cited definition's term is used all over its law, and its own words say nothing of which use was
            # asked about: the provision must share words with the question besides them, as one from outside does.
            if (
                reference.relation == DEFINED_USE
                and len((stems - _stems(definition.term)) & wanted) < MIN_SHARED_OUTSIDE
            ):
                continue
            chunk = chunk_holding(quote, section_id, chunks)
            if chunk is None or chunk.tenant not in ("", tenant):
                continue
            provision_id = provision_at(provision_starts(section.text, section_id), at, section_id)
            relation = DEFINED_USE if reference.relation == DEFINED_USE else USES
            link = Reference(source=provision_id, target=reference.target, words=definition.term, relation=relation,
                             at=used.start())  # fmt: skip
            key = (2 if held else 3, len(FOLLOWED), -shared, order)  # after every provision naming it
            ranked.append((key, Referenced(link, chunk, quote, provision_id, citation, refers=True)))
    return ranked


def references_text(
    needed: Sequence[Referenced], start: int, sections: Mapping[str, str] | None = None
) -> tuple[str, list[Citation]]:
    """A paragraph quoting each referenced provision (markers from ``start``) and its citation (``kind:
    "reference"``): "Section 12(1) of the Marriages Act, referred to above (subject to section 12): “…” [3]"; a
    provision that refers to a cited one (``Referenced.refers``) is introduced as such: "Section 22(1) of the Police
    Act refers to the provision cited above (subject to section twenty-five): “…” [4]". A quote of a list's item is
    shown after the list's opening where that states the case the item holds in (``list_case``, read in the
    section's whole text from ``sections`` when given)."""
    lines, citations = [], []
    for index, item in enumerate(needed, start=start):
        chunk = item.chunk
        case = list_case(item.quote, (sections or {}).get(chunk.section_id) or chunk.text)
        quoted = f"“{case}” … “{item.quote}”" if case else f"“{item.quote}”"
        citation = make_citation(index, chunk, item.quote, item.provision_id)
        citations.append(citation.model_copy(update={"kind": "reference"}))
        label = subsection_label(provision_label(chunk), chunk.section_id, item.provision_id)
        place = f"{label[0].upper()}{label[1:]} of the {chunk.title}"
        # The reference as the citing words make it, with the provision they name ("subject to section 9(5)"): not
        # their own spelling ("section nine"), which the checks would read as a number the quote must state.
        named = subsection_label(provision_label(chunk), chunk.section_id, item.reference.target)
        if item.refers and item.reference.relation == DEFINED_USE:
            lines.append(f"{place} uses “{item.reference.words}”, which the provision cited above defines: "
                         f"{quoted} [{index}]")  # fmt: skip
            continue
        if item.refers and item.reference.relation == USES:
            lines.append(f"{place} uses “{item.reference.words}”, which the same law defines by the provision cited "
                         f"above: {quoted} [{index}]")  # fmt: skip
            continue
        if item.refers:
            # The referring words as the quote itself writes them ("subject to section twenty-five"): the quote
            # bears out the relation the paragraph states.
            named = item.reference.words
            lines.append(f"{place} refers to the provision cited above ({item.reference.relation} {named}): "
                         f"{quoted} [{index}]")  # fmt: skip
            continue
        lines.append(f"{place}, referred to above ({item.reference.relation} {named}): {quoted} [{index}]")
    return "\n\n".join(lines), citations
