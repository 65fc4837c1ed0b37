"""Markdown and plain text: structure as ``ingestion.parsers.structure`` describes, metadata from a first-line
HTML comment such as ``<!-- id: zw/act/2022/1; jurisdiction: ZW; source: https://... -->``; its ``expression``,
``commencement`` and ``enacted`` (ISO dates) become the document's dates (an ``@YYYY-MM-DD`` in the source URL is the
expression date too)."""

from __future__ import annotations

import re
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion.parsers import ParseOptions, content_hash, decode_text, register
from ingestion.parsers.structure import Line, build_document

PARSER_VERSION = "text-4"  # 4: schedule units (structure.with_schedule_units)
_META = re.compile(r"^\s*<!--(.*?)-->\s*$")
_URL_DATE = re.compile(r"@(\d{4}-\d{2}-\d{2})")


def comment_metadata(first_line: str) -> dict[str, str]:
    match = _META.match(first_line)
    if not match:
        return {}
    pairs = (part.partition(":") for part in match.group(1).split(";"))
    return {k.strip().lower(): v.strip() for k, _, v in pairs if k.strip() and v.strip()}


def parse_text_lines(path: Path, text: str, version: str, data: bytes, doc_type: str = "") -> Document:
    lines = text.split("\n")
    meta = comment_metadata(lines[0])
    located, offset = [], 0
    for line in lines:
        indent = len(line) - len(line.lstrip())
        located.append(Line(line, start=offset + indent, end=offset + len(line.rstrip())))
        offset += len(line) + 1
    body = located[1:] if meta else located
    source = meta.get("source", str(path))
    dates = {"expression": m.group(1)} if (m := _URL_DATE.search(source)) else {}
    dates |= {name: meta[name] for name in ("expression", "commencement", "enacted") if meta.get(name)}
    document = build_document(
        body,
        doc_key=meta.get("id") or path.stem,
        content_hash=content_hash(version, data),
        source=source,
        jurisdiction=meta.get("jurisdiction", ""),
        doc_type=meta.get("type", doc_type or "act"),
        dates=dates,
    )
    if not document.sections:
        raise IngestionError(f"{path.name} has no text to index")
    return document


@register(".md", ".markdown", ".txt", ".text", version=PARSER_VERSION)
def parse_text(path: Path, data: bytes, options: ParseOptions) -> list[Document]:
    return [parse_text_lines(path, decode_text(path, data), PARSER_VERSION, data)]
