"""Word documents through python-docx: statutes (numbered sections) or judgments (paragraphs).

A document whose paragraphs contain numbered section lines is read like any statute. Otherwise it is read as a
judgment: the heading block (parties, court, judge, dates) until the first long paragraph, or the first that opens
with the judge's name ("MUCHAWA J: …"), is the preamble (a long line of hearing dates stays in it), each later
paragraph is a numbered provision ``#p<N>``, and list items join the paragraph that introduces them. The heading
and the page headers ("HH 48-25", "HC 3863/14") are read into the document's ``judgment`` metadata
(``ingestion.parsers.judgment``), whose case name becomes its title.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
import zlib
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion.parsers import ParseOptions, content_hash, register
from ingestion.parsers.judgment import is_dates_line, opens_body, read_judgment
from ingestion.parsers.structure import SECTION_LINE, Line, build_document

PARSER_VERSION = "docx-3"  # 3: schedule units (structure.with_schedule_units)
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


def _page_headers(data: bytes) -> list[str]:
    """The paragraphs of the document's page headers and footers, where a judgment's number and case number are
    often set: read from their parts' XML text runs (field codes, such as the page number's, are not text runs)."""
    out = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = [archive.read(name).decode("utf-8", "replace") for name in archive.namelist()
                     if re.fullmatch(r"word/(?:header|footer)\d*\.xml", name)]  # fmt: skip
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error):
        return []  # a damaged header part loses the running header, not the document
    for xml in parts:
        for paragraph in re.findall(r"<w:p[ >].*?</w:p>", xml, flags=re.S):
            runs = re.findall(r"<w:t(?:\s[^>]*)?>([^<]*)</w:t>|<w:tab/>", paragraph)
            text = " ".join(html.unescape("".join(r if r else " " for r in runs)).split())
            if text:
                out.append(text)
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
    heading: list[str] = []
    for text, is_list_item in paragraphs:
        in_body = in_body or (len(text.split()) >= BODY_WORDS and not is_dates_line(text)) or opens_body(text)
        if not in_body:
            heading.append(text)
            lines.append(Line(text))
        elif is_list_item and number:
            lines.append(Line(text))  # a list item continues the paragraph that introduced it
        else:
            number += 1
            lines.append(Line(f"{number}. {text}"))
    judgment, jurisdiction = read_judgment(heading, _page_headers(data), path.name)
    title = judgment.case_name or " ".join(text for text, _ in paragraphs[:5] if len(text.split()) <= 8)
    document = build_document(
        lines, doc_key=path.stem, content_hash=digest, source=str(path), title=title, doc_type="judgment", unit="p",
        jurisdiction=jurisdiction, dates={"decided": judgment.decided} if judgment.decided else {},
    )  # fmt: skip
    return [document.model_copy(update={"judgment": judgment})]
