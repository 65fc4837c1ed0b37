"""HTML pages through lxml: the visible text of block elements, headings kept as Markdown headings, then read
like any statute (see ``ingestion.parsers.structure``)."""

from __future__ import annotations

from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion.parsers import ParseOptions, content_hash, decode_text, register
from ingestion.parsers.structure import Line, build_document

PARSER_VERSION = "html-2"  # 2: schedule units (structure.with_schedule_units)
_BLOCKS = {"p", "div", "li", "td", "th", "section", "article", "blockquote", "pre", "dd", "dt", "br"}
_DROP = {"script", "style", "nav", "header", "footer", "noscript", "template"}


@register(".html", ".htm", version=PARSER_VERSION)
def parse_html(path: Path, data: bytes, options: ParseOptions) -> list[Document]:
    from lxml import etree, html

    try:
        root = html.document_fromstring(decode_text(path, data))
    except (etree.ParserError, ValueError) as exc:
        raise IngestionError(f"{path.name} is not readable HTML ({exc})") from None
    for element in root.iter(*_DROP):
        element.drop_tree()
    title = " ".join((root.findtext(".//title") or "").split())
    lines: list[Line] = []
    for element in root.iter("h1", "h2", "h3", "h4", "h5", "h6", *_BLOCKS):
        if any(child.tag in _BLOCKS or str(child.tag).startswith("h") for child in element.iterdescendants()):
            continue  # only innermost blocks, so no text is read twice
        text = " ".join(element.text_content().split())
        if not text:
            continue
        tag = str(element.tag)
        level = int(tag[1]) if tag[0] == "h" and tag[1:].isdigit() else 0
        lines.append(Line(f"{'#' * level} {text}" if level else text))
    if not lines:
        raise IngestionError(f"{path.name} has no text")
    document = build_document(
        lines, doc_key=path.stem, content_hash=content_hash(PARSER_VERSION, data), source=str(path), title=title
    )
    return [document]
