"""The definitions an answer depends on, quoted verbatim and cited as their own citations (``kind: "definition"``).

A provision means what its document's interpretation section says its terms mean: "a marriage officer shall not
solemnise …" is read with "“marriage officer” means a person designated …". When an answer's cited words use a term
their document defines (or the question does, and the answer cites that document), the definition is added below the
answer as its own paragraph and citation: the defining provision's own words, quoted, which pass the same verbatim
check as every other quote. A definition is never attached to another sentence as its support; it supports only the
paragraph that quotes it.

Bounds: at most ``MAX_DEFINITIONS`` an answer; terms of everyday drafting ("person", "Minister", "prescribed") whose
definitions rarely change what a provision means are left out (``api/data/definitions.toml``); a definition comes only
from a document the caller may read (the cited document itself, or, for a question that asks what a term means, one
of the documents its evidence or wording names), and only where its scope (the document, a section or a part) covers
the cited words.

A question that asks what a term means ("what is a 'spouse' under the Marriage Act", "what does 'employee' mean",
"define lobola") is answered from the term's definition first when a readable document defines it (``asked_term``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from api.schemas.documents import Chunk, Document
from api.schemas.events import Citation
from api.text.units import HEADING
from api.tools.links import Definition, Links

from .citations import make_citation, provision_label, subsection_label

MAX_DEFINITIONS = 2
"""At most this many definitions are added to one answer."""
MAX_QUOTED_CHARS = 600
"""A longer definition is quoted up to the last item or clause boundary before this many characters."""
_DATA = Path(__file__).resolve().parents[1] / "data" / "definitions.toml"
_QUOTES = "\"“”‘’'"
_TERM = r"[\"“‘']?(?P<term>[^\"“”‘’'?.,;:]{2,60}?)[\"”’']?"
# "… under the Marriage Act": the law named after the term (a capital letter, whatever the pattern's case).
_LAW = (
    r"(?:\s+(?:under|in|for the purposes of|according to|as used in|in terms of|of)\s+"
    r"(?:the\s+|this\s+)?(?-i:[A-Z]).*)?"
)
# Another quoted term sharing a definition's meaning: ", “the court”", " or “the court”".
_ALIAS = rf"\s*,?\s*(?:(?:and|or)\s+)?[{_QUOTES}][^{_QUOTES}\n]{{1,80}}[{_QUOTES}]"
_ALIAS_RUN = re.compile(rf"^(?:{_ALIAS})+")
_DEFINES = re.compile(
    rf"\s*[{_QUOTES}][^{_QUOTES}]{{1,80}}[{_QUOTES}](?:{_ALIAS})*\s*,?\s*(?:means|includes|has the)\b"
)
_ASKS = [
    re.compile(rf"^\s*what\s+does\s+(?:the\s+(?:term|word|expression)\s+)?{_TERM}\s+mean{_LAW}\s*\??\s*$", re.I),
    re.compile(rf"^\s*(?:define|definition\s+of|meaning\s+of|what\s+is\s+the\s+(?:definition|meaning)\s+of)\s+"
               rf"(?:the\s+(?:term|word|expression)\s+)?(?:an?\s+|the\s+)?{_TERM}{_LAW}\s*\??\s*$", re.I),
    re.compile(rf"^\s*(?:what|who)\s+(?:is|are)\s+(?:meant\s+by\s+)?(?:an?\s+|the\s+)?{_TERM}{_LAW}\s*\??\s*$", re.I),
    re.compile(rf"^\s*how\s+(?:is|are|does)\s+(?:an?\s+|the\s+)?{_TERM}\s+(?:defined|define)\b.*$", re.I),
]  # fmt: skip


@cache
def everyday_terms() -> frozenset[str]:
    """Terms whose definitions are not added to an answer (``api/data/definitions.toml``), lower-cased."""
    with _DATA.open("rb") as f:
        return frozenset(t.casefold() for t in tomllib.load(f)["everyday"]["terms"])


def asked_term(question: str) -> str:
    """The term a question asks the meaning of ("what is a spouse under the Marriage Act" -> "spouse"); '' when it
    asks something else."""
    for pattern in _ASKS:
        if found := pattern.match(question.strip()):
            return " ".join(found.group("term").strip(_QUOTES + " ").split())
    return ""


@dataclass(frozen=True, slots=True)
class Needed:
    """A definition to add, and the chunk of the provision that defines it (what its citation points to)."""

    definition: Definition
    chunk: Chunk


def _worth_adding(definition: Definition) -> bool:
    term = definition.term.casefold()
    return sum(c.isalpha() for c in term) >= 3 and term not in everyday_terms()


def _uses(text: str, term: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text, re.I)]


def _used(definitions: Sequence[Definition], text: str) -> list[Definition]:
    """Of ``definitions`` (longest term first), those whose term ``text`` uses on its own: "officer" is not used by
    "marriage officer" when "marriage officer" is itself defined."""
    found = []
    for definition in definitions:
        spans = _uses(text, definition.term)
        if spans:
            found.append(definition)
            for start, end in spans:
                text = text[:start] + " " * (end - start) + text[end:]
    return found


def defining_chunk(definition: Definition, chunks: Mapping[str, Chunk], document: Document | None) -> Chunk | None:
    """The chunk the definition starts in, when its words are verbatim in its document's section (None otherwise:
    a definition whose words cannot be found is never quoted)."""
    section_id = definition.provision_id.split("(")[0]
    section = document.section(section_id) if document is not None else None
    if section is None or definition.text not in section.text:
        return None
    return chunk_holding(definition.text[:80], section_id, chunks)


def chunk_holding(words: str, section_id: str, chunks: Mapping[str, Chunk]) -> Chunk | None:
    """The first chunk of section ``section_id`` whose text holds ``words`` verbatim (None if none does): the chunk
    a quote of them is cited to."""
    ordinal = 0
    while (chunk := chunks.get(f"{section_id}/c{ordinal}")) is not None:
        if words in chunk.text:
            return chunk
        ordinal += 1
    return None


def needed_definitions(
    question: str,
    citations: Iterable[Citation],
    links: Links,
    chunks: Mapping[str, Chunk],
    documents: Mapping[str, Document | None],
    tenant: str,
    asked: Sequence[Definition] = (),
    limit: int = MAX_DEFINITIONS,
) -> list[Needed]:
    """The definitions an answer citing ``citations`` depends on, most needed first: ``asked`` (the definitions of
    the term the question asks about), then the terms both a cited quote and the question use, then those a cited
    quote uses, then those the question uses that a cited document defines. A definition the answer already quotes,
    one of an everyday term, or one from a document a caller of ``tenant`` may not read is left out."""
    # A quoted definition's own words ("… made on behalf of an intended spouse") are not what an answer depends on.
    cited = [c for c in citations if c.kind == "provision"]
    using = [c for c in cited if not _DEFINES.match(c.quote)]
    ranked: list[tuple[int, int, Definition]] = [(0, i, d) for i, d in enumerate(asked)]
    for order, citation in enumerate(using):
        document = documents.get(citation.doc_key)
        section = document.section(citation.section_id) if document is not None else None
        part = section.part if section is not None else ""
        definitions = links.defined_in(citation.quote, citation.doc_key, citation.section_id, part)
        in_question = {d.term.casefold() for d in _used(definitions, question)}
        # Each cited provision's longest term before any provision's second: one quote's many terms must not
        # crowd out the next quote's.
        for turn, definition in enumerate(_used(definitions, citation.quote)):
            ranked.append((1 if definition.term.casefold() in in_question else 2, turn * 100 + order, definition))
    for order, doc_key in enumerate(dict.fromkeys(c.doc_key for c in cited)):
        ranked += [(3, order, d) for d in _used(links.defined_in(question, doc_key), question)]
    found: list[Needed] = []
    seen: set[tuple[str, str]] = set()
    for rank, _, definition in sorted(ranked, key=lambda r: (r[0], r[1])):
        # Terms that share one definition ("“court” or “the court” means …") are quoted once.
        keys = {(definition.doc_key, definition.term.casefold()), (definition.doc_key, definition.text)}
        if keys & seen or (rank and not _worth_adding(definition)) or _quoted(definition, cited):
            continue
        seen |= keys
        chunk = defining_chunk(definition, chunks, documents.get(definition.doc_key))
        if chunk is None or chunk.tenant not in ("", tenant):
            continue
        found.append(Needed(definition, chunk))
        if len(found) == limit:
            break
    return found


def _quoted(definition: Definition, citations: Sequence[Citation]) -> bool:
    """Whether an answer citing ``citations`` already quotes the definition's words."""
    meaning = meaning_of(definition)
    return any(meaning in c.quote or (len(c.quote) > 40 and c.quote in definition.text) for c in citations)


def definitions_of(term: str, links: Links, doc_keys: Sequence[str]) -> list[Definition]:
    """The definitions of ``term`` (as asked, or its singular) in the documents ``doc_keys``, in that order, each
    document's whole-document definition before one limited to a section or part."""
    wanted = {term.casefold(), re.sub(r"e?s$", "", term.casefold()), re.sub(r"s$", "", term.casefold())}
    found = []
    for doc_key in doc_keys:
        matching = [d for d in links.definitions.get(doc_key, []) if d.term.casefold() in wanted]
        found += sorted(matching, key=lambda d: bool(d.scope))[:1]
    return found


_NEXT_HEADING = re.compile(rf"(?<=[.;:])\s+{HEADING}|\s(?:PART|Part|CHAPTER|Chapter)\s+[IVXLC\d]+[A-Z]?\s*[–—-]\s")
# An editor's note ("[definition amended by …]"), not a bracket that is the definition's own ("[Chapter 9:07]").
_NOTES_AT_END = re.compile(
    r"(?:\s*\[[^\[\]]*\b(?:amended|inserted|substituted|repealed|added|deleted|renumbered)\b[^\[\]]*\])+\s*$", re.I
)


def meaning_of(definition: Definition) -> str:
    """The definition's words after its quoted term ("means a party to a marriage …"), cut at an item or clause
    boundary when long: a verbatim slice of the defining provision."""
    text = definition.text
    closing = next((i for i, ch in enumerate(text[1:], 1) if ch in _QUOTES), 0)
    # The other terms that share the meaning ("“court” or “the court”, … means") name it; they are not its words.
    meaning = _ALIAS_RUN.sub("", text[closing + 1 :]).lstrip(" ,")
    # The last definition of a section runs on to the end of its text: the heading of the Part that follows and an
    # editor's note ("[definition amended by …]") are not its words.
    heading = _NEXT_HEADING.search(meaning)
    meaning = _NOTES_AT_END.sub("", meaning[: heading.start()] if heading else meaning)
    if len(meaning) > MAX_QUOTED_CHARS:
        cut = max(meaning.rfind(";", 0, MAX_QUOTED_CHARS), meaning.rfind(":", 0, MAX_QUOTED_CHARS))
        meaning = meaning[: cut + 1] if cut > 40 else meaning[:MAX_QUOTED_CHARS].rsplit(" ", 1)[0]
    return meaning.rstrip()


def definitions_text(needed: Sequence[Needed], start: int) -> tuple[str, list[Citation]]:
    """A paragraph quoting each definition (markers from ``start``) and its citation (``kind: "definition"``)."""
    lines, citations = [], []
    for index, item in enumerate(needed, start=start):
        definition, chunk = item.definition, item.chunk
        meaning = meaning_of(definition)
        quote = definition.text[: definition.text.index(meaning) + len(meaning)]
        citation = make_citation(index, chunk, quote, definition.provision_id)
        citations.append(citation.model_copy(update={"kind": "definition"}))
        label = subsection_label(provision_label(chunk), chunk.section_id, definition.provision_id)
        place = f"{label[0].upper()}{label[1:]} of the {chunk.title}"
        lines.append(f"{place} defines “{definition.term}”: “{meaning}” [{index}]")
    return "\n\n".join(lines), citations
