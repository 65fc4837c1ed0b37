"""Turn cleaned lines of a statute, judgment or other numbered text into a Document with its sections.

Every text-like parser (Markdown, plain text, PDF, DOCX, HTML) ends here, so structure is detected one way:

    # Marriages Act, 2022                          title (else the first non-empty line)
    [Chapter 5:15]  or  Chapter 5:15               Cap. number
    ## Part II – General provisions                part heading (any level >= 2), also "PART II ..." lines
    3. Minimum age of marriage (1) No person ...   a section (or a judgment's numbered paragraph)
    [section 4 substituted by Act 3 of 2024]       an amendment note, kept as the provision's metadata

A section runs until the next section or heading line. Repeated numbers (schedules restart at 1) get a "~2" suffix
so provision ids stay unique and stable while the document does not change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from api.schemas.documents import Document, Section
from api.text.schedules import schedule_key, schedule_unit
from ingestion.limits import MAX_LINE_CHARS, cut_spans

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_PLAIN_PART = re.compile(
    r"^(PART|Part|CHAPTER|SCHEDULE|Schedule|First Schedule|Second Schedule)\s+[IVXLCDM\d]+[A-Z]?\b.{0,100}$"
)
_CHAPTER = re.compile(r"^\[?(Chapter\s+\d+:\d+)\s*\]?$")
SECTION_LINE = re.compile(r"^(\d{1,4}[A-Z]{0,3})\.\s+(\S.*)$")
# Government Gazette prints set a section's number and heading without a full stop on a line of their own
# ("3 Consolidated Revenue Fund charged"). Only used for text read by OCR, where no other numbering is trusted.
GAZETTE_HEADING = re.compile(r"^(\d{1,3}[A-Z]?)\s+([A-Z][a-z][\w ,'’()/$-]{1,90}[\w)])$")
GAZETTE_WORDS = 12


def gazette_heading(text: str) -> re.Match[str] | None:
    return GAZETTE_HEADING.match(text) if len(text.split()) <= GAZETTE_WORDS else None


_BODY_START = re.compile(r"\s(?:\(1\)|\(a\)|In this (?:Act|Part)\b|This Act\b|Subject to\b)")
_NOTE = re.compile(r"\[(?:[^\[\]]*\b(?:substituted|amended|inserted|repealed|added)\b[^\[\]]*)\]", re.I)


@dataclass(slots=True)
class Line:
    text: str
    page: int = 0  # 1-based source page; 0 when the source has no pages
    start: int = -1  # character offset where it starts in the source text (of its page, for paged sources)
    end: int = -1  # and where it ends (on end_page); -1 when the source has no character stream
    end_page: int = 0

    def as_(self, text: str) -> Line:
        """The same place in the source, with the text as cleaned."""
        return Line(text, self.page, self.start, self.end, self.end_page)


@dataclass(slots=True)
class _Open:
    number: str
    heading: str
    part: str
    lines: list[Line] = field(default_factory=list)


def bounded_lines(lines: list[Line]) -> list[Line]:
    """The lines, each over ``MAX_LINE_CHARS`` cut into several at spaces (a 50 MB one-line file is not one line)."""
    if all(len(line.text) <= MAX_LINE_CHARS for line in lines):
        return lines
    out = []
    for line in lines:
        if len(line.text) <= MAX_LINE_CHARS:
            out.append(line)
            continue
        spans = cut_spans(line.text, MAX_LINE_CHARS)
        for index, (a, b) in enumerate(spans):
            last = index == len(spans) - 1
            start = line.start + a if line.start >= 0 else -1
            end = line.end if last else (line.start + b if line.start >= 0 else -1)
            out.append(Line(line.text[a:b], line.page, start, end, line.end_page if last else line.page))
    return out


def heading_of(rest: str) -> str:
    """The heading of a section whose heading and body share a line."""
    match = _BODY_START.search(rest, 0, 160)
    if match:
        return rest[: match.start()].strip()
    return rest if len(rest) <= 120 else " ".join(rest.split()[:8]) + " …"


def jurisdiction_of(doc_key: str, given: str = "") -> str:
    if given:
        return given.upper()
    first = doc_key.split("/", 1)[0]
    return first.upper() if "/" in doc_key and len(first) <= 3 else ""


def numbering_gaps(sections: list[Section]) -> list[str]:
    """Warnings for jumps in plain section numbers (1, 2, 4: '2→4'), the usual sign of a parsing miss."""
    warnings, previous = [], 0
    for section in sections:
        if not section.number.isdigit() or "~" in section.section_id:
            continue
        current = int(section.number)
        if previous and current > previous + 1:
            warnings.append(f"section numbering gap {previous}→{current}")
        previous = current if current > previous else previous
    return warnings[:20]


def with_schedule_units(sections: list[Section]) -> list[Section]:
    """The sections, each provision of a schedule with what that schedule calls its units ("paragraph", or
    "section" in one drafted in sections), read from all of that schedule's provisions at once."""
    texts: dict[str, list[str]] = {}
    for section in sections:
        if key := schedule_key(section.part):
            texts.setdefault(key, []).append(section.text)
    units = {key: schedule_unit(found) for key, found in texts.items()}
    return [s.model_copy(update={"unit": units[k]}) if (k := schedule_key(s.part)) else s for s in sections]


def _section(section_id: str, raw: _Open, lines: list[Line], ref: str) -> Section:
    text = "\n".join(line.text for line in lines).strip()
    pages = [p for line in lines for p in (line.page, line.end_page) if p]
    located = [line for line in lines if line.start >= 0 and line.text.strip()]
    return Section(
        offsets=(located[0].start, located[-1].end) if located else None,
        section_id=section_id,
        number=raw.number,
        heading=raw.heading,
        part=raw.part,
        text=text,
        ref=ref,
        pages=(min(pages), max(pages)) if pages else None,
        notes=_NOTE.findall(text),
    )


def _drop_contents_entries(raw: list[_Open]) -> list[_Open]:
    """Drop heading-only entries (a contents list without page numbers) whose number comes again with a body."""
    last: dict[str, int] = {item.number: index for index, item in enumerate(raw)}
    return [
        item
        for index, item in enumerate(raw)
        if not (
            item.number
            and len(item.lines) == 1
            and len(item.lines[0].text.split()) <= 16
            and last[item.number] > index
            and len(raw[last[item.number]].lines) > 1
        )
    ]


def _sections(doc_key: str, raw: list[_Open], unit: str) -> list[Section]:
    used: dict[str, int] = {}
    sections = []
    notes = 0
    for item in raw:
        if not item.number:
            notes += 1
            sections.append(_section(f"{doc_key}#n{notes}", item, item.lines, ""))
            continue
        base = f"{doc_key}#{unit}{item.number}"
        used[base] = used.get(base, 0) + 1
        section_id = base if used[base] == 1 else f"{base}~{used[base]}"
        sections.append(_section(section_id, item, item.lines, f"{unit}{item.number}"))
    return sections


def build_document(
    lines: list[Line],
    *,
    doc_key: str,
    content_hash: str,
    source: str,
    title: str = "",
    chapter: str = "",
    jurisdiction: str = "",
    doc_type: str = "",
    dates: dict[str, str] | None = None,
    pages: int = 0,
    warnings: list[str] | None = None,
    unit: str = "s",
    gazette: bool = False,
) -> Document:
    """Build the document; ``unit`` prefixes numbered provisions' ids: "s" (sections) or "p" (paragraphs);
    ``gazette`` also takes undotted gazette-style section headings ("1 Short title")."""
    parts: list[tuple[int, str]] = []
    raw: list[_Open] = []
    preamble: list[Line] = []
    current: _Open | None = None
    for line in bounded_lines(lines):
        stripped = line.text.strip()
        heading = _MD_HEADING.match(stripped)
        section = SECTION_LINE.match(stripped) or (gazette_heading(stripped) if gazette else None)
        if heading and len(heading.group(1)) == 1 and (not title or heading.group(2) == title):
            title = heading.group(2)
        elif heading or _PLAIN_PART.match(stripped):
            current = None
            level = len(heading.group(1)) if heading else 2
            parts = [p for p in parts if p[0] < level] + [(level, heading.group(2) if heading else stripped)]
        elif not chapter and (cap := _CHAPTER.match(stripped)):
            chapter = cap.group(1)
        elif section:
            current = _Open(section.group(1), heading_of(section.group(2)), " > ".join(p[1] for p in parts))
            current.lines.append(line.as_(stripped))
            raw.append(current)
        elif current is not None:
            current.lines.append(line.as_(line.text.rstrip()))
        elif stripped and not title:
            title = stripped
        elif stripped and parts and raw and len(stripped.split()) <= 12:
            parts[-1] = (parts[-1][0], f"{parts[-1][1]} {stripped}")  # a heading wrapped onto the next line
        elif stripped and raw:
            # Text under a heading before its first section: an unnumbered provision of its own.
            current = _Open("", parts[-1][1] if parts else "", " > ".join(p[1] for p in parts))
            current.lines.append(line.as_(stripped))
            raw.append(current)
        elif stripped:
            preamble.append(line.as_(stripped))
    sections = with_schedule_units(_sections(doc_key, _drop_contents_entries(raw), unit))
    if preamble:
        sections.insert(0, _section(f"{doc_key}#preamble", _Open("", "", ""), preamble, ""))
    return Document(
        doc_key=doc_key,
        title=title or doc_key,
        chapter=chapter,
        jurisdiction=jurisdiction_of(doc_key, jurisdiction),
        source=source,
        doc_type=doc_type,
        dates=dates or {},
        pages=pages,
        # Paragraph numbers of judgments are ours, so only section numbering can show a parsing miss.
        warnings=[*(warnings or []), *(numbering_gaps(sections) if unit == "s" else [])],
        content_hash=content_hash,
        sections=sections,
    )
