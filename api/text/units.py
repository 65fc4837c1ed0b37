"""The sentences of a provision an answer may quote: a chunk's text split where sentences and numbered items end,
without the section's own number and heading, each at most ``MAX_QUOTE_WORDS`` words (cut at a clause's end).

Shared by the quote-only composer and the sentence vectors ingestion keeps, so both see the same sentences.
"""

from __future__ import annotations

import re

from api.schemas.documents import Chunk

MAX_QUOTE_WORDS = 70
MIN_UNIT_WORDS = 5
# Sentences end at a line break, or after . ; : before what looks like the next sentence or provision. An editor's
# note in square brackets after a sentence ("… seventy years. [subsection (3b) inserted by …] (4) …") ends it too,
# and is itself no sentence of the provision.
_UNIT = re.compile(r"\n+|(?<=[.;:])\s+(?:\[[^\[\]\n]{1,300}\](?:\s+|$))?(?=[(\"“A-Z]|$)")
_NOTE = re.compile(r"\[[^\[\]]*\]")
# The heading of a Part, Chapter or lettered sub-part run onto a section's end ("Part V – Advisory councils …",
# "B – Theft, stock theft …").
HEADING = r"(?:(?:PART|Part|CHAPTER|Chapter)\s+[IVXLC\d]+[A-Z]?|[A-Z])\s*[–—]\s*[A-Z]"
_HEADING = re.compile(HEADING)
# A piece too short to stand alone that opens what follows ("(4) A supplier must—"): a list's lead-in, not an item.
_LEAD_IN_END = re.compile(r"(?:[:—–]|\s-)\s*$")
_LEADING_MARKER = re.compile(r"^(?:\(\w{1,4}\)\s+)+")
_CLAUSE_END = re.compile(r"[,;]\s")


def heading_text(chunk: Chunk) -> str:
    """What a provision's heading says it is about, as the search's heading ranking embeds it: its law's title and
    its own heading ("Labour Act — Unfair dismissal"); empty for a provision without a heading. Its vector is kept
    with the sentences' (``api.tools.sentence_vectors``), so a search never embeds a heading ingestion saw."""
    return provision_heading(chunk.title, chunk.section_heading)


def provision_heading(title: str, heading: str) -> str:
    """``heading_text`` from a law's title and a provision's heading, as a chunk holds them."""
    return f"{title} — {heading}" if heading.strip() else ""


def quotable_units(chunk: Chunk) -> list[str]:
    """The sentences of ``chunk`` an answer may quote (their vectors are kept: ``api.tools.sentence_vectors``)."""
    units: list[str] = []
    joinable = False  # the last unit kept ends on the line the next piece starts on
    before = ""  # the whitespace between the last piece and this one, as the text has it
    for raw, separator in _pieces(chunk.text):
        unit = raw.strip()
        # Drop the "3. Heading" that opens a section so the quote starts at the provision's words.
        prefix = f"{chunk.section_number}. "
        if chunk.section_number and unit.startswith(prefix):
            unit = unit[len(prefix) :]
        if chunk.section_heading and unit.startswith(chunk.section_heading):
            unit = unit[len(chunk.section_heading) :].lstrip()
        bare = _LEADING_MARKER.sub("", unit).strip()
        if _NOTE.fullmatch(bare) or _HEADING.match(bare):
            joinable = False  # an editor's note, or the heading of the Part that follows: no words of the provision's
        elif len(bare.split()) >= MIN_UNIT_WORDS:
            units.append(bare)
            joinable = _joins(separator)
        elif joinable and bare != unit and not _LEAD_IN_END.search(bare):
            # A numbered item too short to stand alone ("(ii) a judgment debt;") is quoted with the sentence before
            # it, which carries the list's lead-in: dropped, the item a question asks about could never be quoted.
            units[-1] = f"{units[-1]}{before}{unit}"  # the text's own spacing: the quote stays verbatim
            joinable = _joins(separator)
        else:
            joinable = False
        before = separator
    return [_shorten(unit) for unit in units]


def _joins(separator: str) -> bool:
    """Whether the piece after ``separator`` may be quoted with the one before: on the same line, no note between."""
    return "\n" not in separator and "[" not in separator


def _pieces(text: str) -> list[tuple[str, str]]:
    """``text`` split where ``_UNIT`` says a sentence ends: each piece with the separator that follows it."""
    pieces, start = [], 0
    for match in _UNIT.finditer(text):
        pieces.append((text[start : match.start()], match.group(0)))
        start = match.end()
    pieces.append((text[start:], ""))
    return pieces


def _shorten(unit: str) -> str:
    words = unit.split()
    if len(words) <= MAX_QUOTE_WORDS:
        return unit
    cut = len(" ".join(words[:MAX_QUOTE_WORDS]))
    clause = [m.start() for m in _CLAUSE_END.finditer(unit, 0, cut)]
    return unit[: clause[-1] if clause and clause[-1] > cut // 2 else cut].rstrip(" ,;")
