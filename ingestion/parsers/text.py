"""Markdown and plain-text statutes: a title, optional Cap. line, part headings and numbered sections.

Recognised lines::

    <!-- id: zw/act/2022/1; jurisdiction: ZW -->   metadata (first line only)
    # Marriages Act, 2022                          title (else the first non-empty line)
    [Chapter 5:15]                                 Cap. number
    ## Part II – General provisions                part heading (any level >= 2), also "PART II ..." lines
    3. Minimum age of marriage (1) No person ...   a section: its number, then heading and body

A section runs until the next section or heading line; its text is kept verbatim.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document, Section
from ingestion.parsers import register

PARSER_VERSION = "text-1"

_META = re.compile(r"^\s*<!--(.*?)-->\s*$")
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_PLAIN_PART = re.compile(r"^(PART|Part|CHAPTER|SCHEDULE|Schedule)\s+[IVXLCDM\d]+[A-Z]?\b.{0,100}$")
_CHAPTER = re.compile(r"^\[(Chapter\s+[^\]]+?)\s*\]$")
_SECTION = re.compile(r"^(\d{1,4}[A-Z]{0,3})\.\s+(\S.*)$")
# Where a heading written on the same line as its body ends.
_BODY_START = re.compile(r"\s(?:\(1\)|\(a\)|In this (?:Act|Part)\b|This Act\b|Subject to\b)")


def _metadata(first_line: str) -> dict[str, str]:
    match = _META.match(first_line)
    if not match:
        return {}
    pairs = (part.partition(":") for part in match.group(1).split(";"))
    return {k.strip().lower(): v.strip() for k, _, v in pairs if k.strip() and v.strip()}


def _heading_of(rest: str) -> str:
    match = _BODY_START.search(rest, 0, 160)
    if match:
        return rest[: match.start()].strip()
    return rest if len(rest) <= 120 else " ".join(rest.split()[:8]) + " …"


def _jurisdiction(doc_key: str, meta: dict[str, str]) -> str:
    if "jurisdiction" in meta:
        return meta["jurisdiction"].upper()
    first = doc_key.split("/", 1)[0]
    return first.upper() if "/" in doc_key and len(first) <= 3 else ""


def parse_structured_text(path: Path, data: bytes) -> Document:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestionError(f"{path.name} is not UTF-8 text (byte {exc.start})") from exc
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise IngestionError(f"{path.name} is empty")
    lines = text.split("\n")
    meta = _metadata(lines[0])
    doc_key = meta.get("id") or path.stem
    title = chapter = ""
    parts: list[tuple[int, str]] = []
    sections: list[Section] = []
    used_ids: dict[str, int] = {}
    preamble: list[str] = []
    current: tuple[str, str, str, list[str]] | None = None  # number, heading, part, lines

    def close() -> None:
        nonlocal current
        if current is None:
            return
        number, heading, part, body = current
        base = f"{doc_key}#s{number}"
        used_ids[base] = used_ids.get(base, 0) + 1
        section_id = base if used_ids[base] == 1 else f"{base}~{used_ids[base]}"
        sections.append(
            Section(section_id=section_id, number=number, heading=heading, part=part, text="\n".join(body).strip())
        )
        current = None

    for line in lines[1:] if meta else lines:
        stripped = line.strip()
        heading = _MD_HEADING.match(stripped)
        section = _SECTION.match(stripped)
        if heading and len(heading.group(1)) == 1 and not title:
            title = heading.group(2)
        elif heading or _PLAIN_PART.match(stripped):
            close()
            level = len(heading.group(1)) if heading else 2
            parts = [p for p in parts if p[0] < level] + [(level, heading.group(2) if heading else stripped)]
        elif not chapter and (cap := _CHAPTER.match(stripped)):
            chapter = cap.group(1)
        elif section:
            close()
            part = " > ".join(p[1] for p in parts)
            current = (section.group(1), _heading_of(section.group(2)), part, [stripped])
        elif current is not None:
            current[3].append(line.rstrip())
        elif stripped:
            if not title:
                title = stripped
            else:
                preamble.append(stripped)
    close()
    if preamble:
        sections.insert(0, Section(section_id=f"{doc_key}#preamble", number="", text="\n".join(preamble)))
    if not sections:
        raise IngestionError(f"{path.name} has no text to index")
    content_hash = hashlib.sha256(PARSER_VERSION.encode() + data).hexdigest()
    return Document(
        doc_key=doc_key,
        title=title or path.stem,
        chapter=chapter,
        jurisdiction=_jurisdiction(doc_key, meta),
        source=meta.get("source", str(path)),
        content_hash=content_hash,
        sections=sections,
    )


register(".md", ".markdown", ".txt", ".text")(parse_structured_text)
