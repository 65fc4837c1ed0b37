"""Build citations and stream answer text so each citation is sent when its marker first appears.

Answer text goes out coalesced: a ``token`` event carries what was written since the last one, up to a sentence's
end, a completed ``[n]`` marker (its citation follows at once), ``FLUSH_CHARS`` characters, or ``FLUSH_AFTER_S``
after the first unsent word, whichever comes first; the very first piece of an answer goes out at once. One event
per few words cost every stream an SSE write, a JSON encoding and a hop through the graph's stream writer each;
under 50 streams those, not answering, filled the event loop.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Protocol

from pydantic import BaseModel

from api.schemas.documents import Chunk
from api.schemas.events import Citation, CitationEvent, TokenEvent
from api.text.instruments import title_words
from api.text.schedules import SCHEDULE_NAME, pinpointed, same_schedule, split_label

from .judge.clauses import case_opening_at
from .judge.facts import numbers

Emit = Callable[[BaseModel], None]
MARKER = re.compile(r"\[(\d{1,3})\]")
MIN_QUOTE_WORDS = 8
"""A quoted span this long or longer is a quote of the law, to be found verbatim in a cited provision; shorter ones
are phrases an answer may put in quotation marks."""
_JOINER = "\n…\n"  # how the context bundler joins separate spans of one provision (api/tools/context.py)


class TextSink(Protocol):
    """Where a model's answer is written as it streams: the citations it was offered, and its text so far."""

    available: dict[int, Citation]
    text: str
    judging: bool
    """A check of what was written is under way (the stall watchdog counts it as progress)."""

    def feed(self, piece: str) -> None: ...

    async def settle(self) -> None:
        """Act on what the pieces fed so far completed (a gate judges its sentences); nothing to do for a sink that
        sends text as it comes."""
        ...


def provision_label(chunk: Chunk) -> str:
    """What the chunk's provision is called ("section 4", "paragraph 4 of Schedule 28"): ``Chunk.label``."""
    return chunk.label


def subsection_label(label: str, section_id: str, provision_id: str) -> str:
    """``label`` ("section 3", "paragraph 4 of Schedule 28") naming the subsection or paragraph ``provision_id``
    is ("section 3(2)(a)", "paragraph 4(2) of Schedule 28"); a judgment's paragraph is named whole."""
    finer = provision_id.removeprefix(section_id) if provision_id.startswith(section_id) else ""
    return pinpointed(label, finer) if finer else label


def make_citation(index: int, chunk: Chunk, quote: str, provision_id: str = "") -> Citation:
    """A citation of ``chunk``; given the ``provision_id`` the quote is in, its label names that subsection."""
    label = subsection_label(provision_label(chunk), chunk.section_id, provision_id)
    return Citation(
        index=index,
        doc_key=chunk.doc_key,
        title=chunk.title,
        section_id=chunk.section_id,
        provision_id=provision_id or chunk.provision_id or chunk.section_id,
        section=label,
        heading=chunk.section_heading,
        chunk_id=chunk.chunk_id,
        quote=quote,
    )


FLUSH_AFTER_S = 0.1
"""Longest a written word waits for more before it is sent (a model writing slowly still streams)."""
FLUSH_CHARS = 400
_SENTENCE_END = re.compile(r"(?:[.!?][\"'”’)\]]*\s|\n)\s*$")


class CitationTracker:
    """Watches streamed text, sends it as coalesced token events, and emits each known citation once, right after
    the token event that completes its [n] marker. Call ``flush`` when the text is complete (``stream_words`` does)."""

    def __init__(self, available: Sequence[Citation], emit: Emit) -> None:
        self.judging = False  # text is sent as it is fed: nothing waits for a check
        self.available = {c.index: c for c in available}
        self.emit = emit
        self.text = ""
        self.used: list[Citation] = []
        self.pending = ""
        self.sent_any = False
        self._timer: asyncio.TimerHandle | None = None

    async def settle(self) -> None:
        return None  # text is sent as it is fed

    def feed(self, piece: str) -> None:
        scan_from = max(0, len(self.text) - 4)  # a marker may straddle two pieces
        self.text += piece
        self.pending += piece
        cited = []
        for match in MARKER.finditer(self.text, scan_from):
            index = int(match.group(1))
            citation = self.available.get(index)
            if citation is not None and all(c.index != index for c in self.used):
                citation = verbatim_citation(citation)
                self.used.append(citation)
                cited.append(citation)
        if cited or not self.sent_any or len(self.pending) >= FLUSH_CHARS or _SENTENCE_END.search(self.pending):
            self.flush()
        elif self._timer is None and self.pending:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no event loop to wake us: send at once
                self.flush()
            else:
                self._timer = loop.call_later(FLUSH_AFTER_S, self.flush)
        for citation in cited:
            self.emit(CitationEvent(citation=citation))

    def flush(self) -> None:
        """Send the text written since the last token event, if any."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.pending:
            self.emit(TokenEvent(text=self.pending))
            self.pending, self.sent_any = "", True


def verbatim_citation(citation: Citation) -> Citation:
    """The citation as an event may carry it: a context piece that joins separate spans of a provision with "…" is
    shown to the model whole, but a citation quotes one verbatim span (the first)."""
    if _JOINER not in citation.quote:
        return citation
    return citation.model_copy(update={"quote": first_span(citation.quote)})


def stream_words(text: str, tracker: CitationTracker, words_per_token: int = 3) -> None:
    """Feed prepared text to ``tracker`` a few words at a time, then flush it: the tracker coalesces the pieces into
    token events (a sentence each, the first piece alone), each citation right after its marker."""
    pieces = re.findall(r"\S+\s*", text)
    for i in range(0, len(pieces), words_per_token):
        tracker.feed("".join(pieces[i : i + words_per_token]))
    tracker.flush()


# --- Verbatim spans and natural citations (attribution that does not depend on the model's markers) ---

_ELISION = re.compile(r"\s*(?:…|\.\s?\.\s?\.|\[\s*(?:…|\.\.\.)\s*\])\s*")
_TIGHT = frozenset(".,;:!?)")
_FOLD_CHARS = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u2013": "-", "\u2011": "-", "\u00a0": " "})


@lru_cache(maxsize=2048)  # a provision is searched once for every quote and sentence of an answer that cites it
def _normalised(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` lower-cased with runs of whitespace as one space and curly quotes straightened, plus, for each
    character of the result, its offset in ``text`` (so a match maps back to a verbatim slice)."""
    out: list[str] = []
    offsets: list[int] = []
    folded = text.translate(_FOLD_CHARS)
    for i, char in enumerate(folded):
        if char.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                offsets.append(i)
            continue
        if char in _TIGHT and out and out[-1] == " ":
            out.pop()  # "partnership ." in a provision reads as "partnership." in a quote
            offsets.pop()
        out.append(char.lower())
        offsets.append(i)
    return "".join(out), tuple(offsets)


_SPAN_EDGES = " \"'“”‘’,;:."


def quote_spans(quote: str) -> list[str]:
    """The separate spans of a quote: an elision ("…", "...", "[…]") splits it in two."""
    return [s.strip(_SPAN_EDGES) for s in _ELISION.split(quote) if s.strip(_SPAN_EDGES)]


def list_case(quote: str, provision: str) -> str:
    """The opening of the list whose item ``quote`` (a verbatim quote of ``provision``) starts, where it states the
    case the item holds in (``case_opening_at``); "" otherwise."""
    found = locate_span(quote, provision)
    return case_opening_at(provision, found[0]) if found is not None else ""


def locate_span(span: str, text: str, start: int = 0) -> tuple[int, int] | None:
    """[start, end) of ``span`` in ``text`` (at or after ``start``), ignoring case, spacing and quote styles; None if
    the words do not occur there in that order, verbatim."""
    needle, _ = _normalised(span.strip())
    if not needle:
        return None
    hay, offsets = _normalised(text)
    from_at = next((k for k, off in enumerate(offsets) if off >= start), len(hay))
    at = hay.find(needle, from_at)
    if at < 0:
        return None
    return offsets[at], offsets[at + len(needle) - 1] + 1


# What an elision may not leave out: a negation, an exception or condition, a number. "A landlord shall … require a
# deposit that exceeds …" is every word of the provision but "not".
_MEANING_WORDS = re.compile(
    r"\b(?:not|no|never|nor|neither|none|cannot|unless|except|excepting|without|only|save|provided|subject\s+to|if|"
    r"where|until|before|after)\b|n't\b|\d",
    re.I,
)


def locate_quote(quote: str, text: str) -> list[tuple[int, int]] | None:
    """Each span of an (possibly elided) quote located in ``text``, in order; None if any span is not there, or if
    an elision leaves out words that change what the rest means (``_MEANING_WORDS``, or a number in words)."""
    found: list[tuple[int, int]] = []
    position = 0
    for span in quote_spans(quote):
        where = locate_span(span, text, position)
        if where is None:
            return None
        if found and _changes_meaning(text[position : where[0]]):
            return None
        found.append(where)
        position = where[1]
    return found or None


def _changes_meaning(left_out: str) -> bool:
    return bool(_MEANING_WORDS.search(left_out)) or bool(numbers(left_out))


def first_span(text: str) -> str:
    """The first verbatim span of a context piece (pieces join separate spans of a provision with "…")."""
    return next((s.strip() for s in text.split(_JOINER) if s.strip()), text.strip())


_SECTION_NO = re.compile(r"(\d+[A-Za-z]?)")
# "section 3(1) of the Marriages Act [Chapter 5:11]", "s 3(1)", "s. 3", "sec 12A", "paragraph 12", "regulation 4"
# A title's words are read whole (a capitalised word is never split into a shorter one and "on", "of" …), so a long
# run of capitalised words costs one pass, not one per way of splitting it.
_REFERENCE = re.compile(
    r"\b(?P<unit>sections?|secs?\.?|ss?\.|s(?=\s*\d)|paragraphs?|paras?\.?|regulations?|regs?\.?|rules?|articles?)"
    r"\s*(?P<number>\d+[A-Za-z]?)(?P<subs>(?:\s*\(\w{1,4}\))*)"
    r"(?P<more>(?:\s*(?:,\s*(?:and|or)?|and|or)\s*\d+[A-Za-z]?\b(?!\s*(?:days?|weeks?|months?|years?|hours?|per|%))"
    r"(?:\s*\(\w{1,4}\))*)*)"
    rf"(?:\s+(?:of|in|to)\s+(?:the\s+)?(?P<schedule>{SCHEDULE_NAME}))?"
    r"(?:\s*,?\s*(?:of|in|under|to)\s+(?:the\s+)?(?P<title>(?:(?-i:[A-Z][\w'-]*+)|\b(?:of|and|the|on|for)\b|\(|\)|,|\s)+?"
    r"(?-i:Act|Code|Ordinance|Regulations|Rules|Constitution)(?:,?\s*\d{4})?))?",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Reference:
    """A natural citation found in answer text."""

    start: int
    end: int
    unit: str
    number: str
    subsections: tuple[str, ...]
    title: str
    schedule: str = ""
    """The schedule it names ("paragraph 4 of the Second Schedule"); '' when it names none."""
    also: tuple[str, ...] = ()
    """Further numbers it names with the first ("sections 25 and 53"): the reference names each of them."""


def find_references(text: str) -> list[Reference]:
    """Natural citations in ``text``: "section 3 of the Marriages Act", "s 3(1)", "section 3(1)", "paragraph 12"."""
    found = []
    for match in _REFERENCE.finditer(text):
        unit = match.group("unit").lower().rstrip(".")
        unit = "paragraph" if unit.startswith("para") else "section"
        subs = tuple(re.findall(r"\((\w{1,4})\)", match.group("subs") or ""))
        title = (match.group("title") or "").strip(" ,")
        schedule = match.group("schedule") or ""
        also = tuple(re.findall(r"(?<![\w(])\d+[A-Za-z]?", re.sub(r"\(\w{1,4}\)", " ", match.group("more") or "")))
        found.append(Reference(match.start(), match.end(), unit, match.group("number"), subs, title, schedule, also))
    return found


def _same_schedule(reference: Reference, label: str) -> bool:
    scheduled = split_label(label)
    if not reference.schedule:
        return scheduled is None or scheduled[0] == "section"
    return scheduled is not None and same_schedule(reference.schedule, scheduled[2])


def resolve_reference(reference: Reference, offered: Sequence[Citation], context_titles: str = "") -> list[int]:
    """The offered citations a natural citation names: the section number must match, and the schedule it names
    (a schedule's provision is never named by its number alone, unless the schedule is drafted in sections); a named
    instrument must match the citation's title; with no name, ``context_titles`` (the rest of the answer) breaks a
    tie. A reference to several numbers ("sections 25 and 53") names the citations of each."""
    if reference.also:
        each = [replace(reference, number=n, subsections=(), also=()) for n in reference.also]
        named = {i for r in (replace(reference, also=()), *each) for i in resolve_reference(r, offered, context_titles)}
        return sorted(named)
    by_number = [
        c for c in offered if _SECTION_NO.search(c.section) and _SECTION_NO.findall(c.section)[0].lower() ==
        reference.number.lower() and (reference.unit == "paragraph") == c.section.startswith("paragraph")
        and _same_schedule(reference, c.section)
    ]  # fmt: skip
    if reference.title:
        wanted = title_words(reference.title)
        by_number = [c for c in by_number if wanted and wanted <= title_words(c.title)]
    elif len({c.doc_key for c in by_number}) > 1:
        context = title_words(context_titles)
        by_number = [c for c in by_number if title_words(c.title) and title_words(c.title) <= context]
        if len({c.doc_key for c in by_number}) > 1:
            return []  # ambiguous: "section 3" of two different Acts, neither named
    if reference.subsections and by_number:
        # Prefer the citation for that subsection when the bundle offered one; any piece of the section otherwise.
        wanted_id = "".join(f"({s})" for s in reference.subsections)
        exact = [c for c in by_number if c.provision_id.endswith(wanted_id)]
        by_number = exact or by_number
    return sorted({c.index for c in by_number})
