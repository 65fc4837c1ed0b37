"""Word documents through python-docx: statutes (numbered sections) or judgments (paragraphs).

A document whose paragraphs contain numbered section lines is read like any statute. Otherwise it is read as a
judgment: the heading block (parties, court, judge, dates) until the first long paragraph is the preamble, each
later paragraph is a numbered provision ``#p<N>``, and list items join the paragraph that introduces them.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion.parsers import ParseOptions, content_hash, register
from ingestion.parsers.structure import SECTION_LINE, Line, build_document

PARSER_VERSION = "docx-1"
BODY_WORDS = 25  # the first paragraph this long ends a judgment's heading block


def _paragraphs(path: Path, data: bytes) -> list[tuple[str, bool]]:
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise IngestionError(f"{path.name} is not a readable Word document ({type(exc).__name__})") from None
    out = []
    for para in document.paragraphs:
        text = " ".join(para.text.split())
        if text:
            ppr = para._p.pPr
            out.append((text, ppr is not None and ppr.numPr is not None))
    return out


@register(".docx", version=PARSER_VERSION)
def parse_docx(path: Path, data: bytes, options: ParseOptions) -> list[Document]:
    paragraphs = _paragraphs(path, data)
    if not paragraphs:
        raise IngestionError(f"{path.name} has no text")
    digest = content_hash(PARSER_VERSION, data)
    if sum(bool(SECTION_LINE.match(text)) for text, _ in paragraphs) >= 3:
        statute = [Line(text) for text, _ in paragraphs]
        return [build_document(statute, doc_key=path.stem, content_hash=digest, source=str(path), doc_type="act")]
    lines: list[Line] = []
    number = 0
    in_body = False
    for text, is_list_item in paragraphs:
        in_body = in_body or len(text.split()) >= BODY_WORDS
        if not in_body:
            lines.append(Line(text))
        elif is_list_item and number:
            lines.append(Line(text))  # a list item continues the paragraph that introduced it
        else:
            number += 1
            lines.append(Line(f"{number}. {text}"))
    title = " ".join(text for text, _ in paragraphs[:5] if len(text.split()) <= 8)
    document = build_document(
        lines, doc_key=path.stem, content_hash=digest, source=str(path), title=title, doc_type="judgment", unit="p"
    )
    return [document]
