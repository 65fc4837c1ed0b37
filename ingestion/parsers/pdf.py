"""PDF with a text layer, through pypdfium2 (chosen by measurement: benchmarks/results/pdf_parsers.md).

Cleaning before structure detection: running headers and footers (lines repeated at the top or bottom of many
pages), page numbers, tables of contents, soft hyphens and hyphenated line breaks are removed, and a Laws.Africa
cover page becomes metadata (FRBR id, expression date, title, Cap. number). Wrapped lines are joined into logical
lines, each remembering the page it starts on, so every provision keeps its page span.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion.parsers import ParseOptions, content_hash, register
from ingestion.parsers.docx import BODY_WORDS
from ingestion.parsers.judgment import is_dates_line, opens_body, read_judgment
from ingestion.parsers.structure import SECTION_LINE, Line, build_document, gazette_heading

PARSER_VERSION = "pdf-5"  # 5: schedule units (structure.with_schedule_units)
EDGE_LINES = 3  # lines at the top and bottom of a page where headers and footers live
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s+of\s+\d+)?$", re.I)
_TOC = re.compile(r"\.{4,}\s*\d+\s*$")
_FRBR = re.compile(r"FRBR URI:\s*/akn/([\w/.-]+?)/eng@(\d{4}-\d{2}-\d{2})")
_STARTS_UNIT = re.compile(r"^(?:\(\w{1,5}\)\s|\[|#|(?:PART|Part|CHAPTER|Chapter|SCHEDULE|Schedule)\b|“|\")")
# Shapes OCR produces and typesetting does not: "T,I}{.{BABWE", "PresirJerrt", "Ha.rnre".
_OCR_DEBRIS = re.compile(r"[a-z][A-Z]|[{}|\\^~<>]|[A-Za-z]\d[A-Za-z]|[,.;:][a-z]{2,}")
# Share of words (two letters or more) with debris shapes. Measured on the 10 shared PDFs: clean Laws.Africa and
# gazette text layers <= 0.0002, the two scans' text layers 0.018 and 0.021; tesseract's readings of the same
# scans 0.013 (a table-heavy schedule) and 0.0016.
OCR_DEBRIS_SHARE = 0.01
PARAGRAPH_END = 0.75  # a judgment's line shorter than this share of its page's measure ends a paragraph


def _pages(path: Path, data: bytes) -> list[str]:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise IngestionError(f"{path.name} is encrypted; give a decrypted copy") from None
        raise IngestionError(f"{path.name} is not a readable PDF ({exc})") from None
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def _is_toc(lines: list[str]) -> bool:
    entries = sum(bool(_TOC.search(line)) for line in lines)
    return entries >= 3 and entries >= 0.3 * len(lines)


def _shape(line: str) -> str:
    return re.sub(r"\d+", "#", line.strip().lower())


def page_text(extracted: str) -> str:
    """A page's text as provisions' offsets count it: pdfium's text with its line-break hyphen markers resolved."""
    # pdfium marks a hyphen it added at a line break as U+FFFE; the word is whole without it.
    # Before a capital it stood for a real hyphen (Registrar-General).
    text = re.sub(r"\ufffe\r?\n?(?=[A-Z])", "-", extracted)
    return re.sub(r"\ufffe\r?\n?", "", text).replace("\u00ad", "").replace("\r", "")


def clean_pages(
    pages: list[str], gazette: bool = False, paragraphs: bool = False
) -> tuple[list[Line], dict[str, str], list[str]]:
    """Return logical lines with page numbers, cover metadata, and warnings; with ``gazette``, an undotted
    section heading ("1 Short title") stays a line of its own, as its body starts the next; with ``paragraphs``
    (a judgment, whose paragraphs are not numbered), a line that stops well short of the page's measure ends its
    paragraph when the next begins as a sentence does, as justified text ends a paragraph."""
    meta: dict[str, str] = {}
    pages = [page_text(p) for p in pages]
    # Each non-blank line, stripped, with where it sits in its page's text: the map back to the source.
    page_lines: list[list[str]] = []
    page_spans: list[list[tuple[int, int]]] = []
    for page in pages:
        texts, spans = [], []
        for match in re.finditer(r"[^\n]+", page):
            raw = match.group()
            if stripped := raw.strip():
                start = match.start() + len(raw) - len(raw.lstrip())
                texts.append(stripped)
                spans.append((start, start + len(stripped)))
        page_lines.append(texts)
        page_spans.append(spans)
    if page_lines and (frbr := _FRBR.search("\n".join(page_lines[0]))):
        meta["id"], meta["expression"] = frbr.group(1), frbr.group(2)
        cover = page_lines[0]
        if len(cover) > 1:
            meta["title"] = cover[1]
        for ln in cover[:4]:
            if re.fullmatch(r"Chapter \d+:\d+", ln):
                meta["chapter"] = ln
        page_lines[0], page_spans[0] = [], []
    # Table-of-contents pages go whole: their wrapped entries would otherwise look like section lines.
    tocs = [_is_toc(lines) for lines in page_lines]
    page_lines = [[] if toc else lines for toc, lines in zip(tocs, page_lines, strict=True)]
    page_spans = [[] if toc else spans for toc, spans in zip(tocs, page_spans, strict=True)]
    edge_shapes: Counter[str] = Counter()
    for lines in page_lines:
        edge_shapes.update({_shape(ln) for ln in lines[:EDGE_LINES] + lines[-EDGE_LINES:]})
    threshold = max(3, len(pages) * 0.3)
    boilerplate = {shape for shape, n in edge_shapes.items() if n >= threshold}
    logical: list[Line] = []
    after_heading = False
    short = False  # the last line kept stopped short of the measure
    for number, lines in enumerate(page_lines, start=1):
        lengths = sorted(len(line) for line in lines)
        measure = lengths[(3 * len(lengths)) // 4] if lengths else 0
        for index, line in enumerate(lines):
            at_edge = index < EDGE_LINES or index >= len(lines) - EDGE_LINES
            if at_edge and (_shape(line) in boilerplate or _PAGE_NUMBER.match(line)):
                continue
            if _TOC.search(line) or line == "Contents":
                continue
            previous = logical[-1].text if logical else ""
            start, end = page_spans[number - 1][index]
            heading = gazette and gazette_heading(line) is not None
            ended = paragraphs and short and bool(re.match(r"[A-Z0-9(\[“\"‘']", line))
            short = len(line) < PARAGRAPH_END * measure
            # A judgment's paragraph ends only where its last line does ("[Chapter 25:18]." may open a line).
            unit = not paragraphs and bool(SECTION_LINE.match(line) or _STARTS_UNIT.match(line))
            if not previous or after_heading or heading or ended or unit:
                logical.append(Line(line, number, start, end, number))
                after_heading = heading
                continue
            if re.search(r"[a-z]-$", previous) and line[:1].islower():
                logical[-1].text = previous[:-1] + line  # a word hyphenated across the line break
            else:
                logical[-1].text = f"{previous} {line}"
            logical[-1].end, logical[-1].end_page = end, number
    warnings = []
    if debris_share(logical) > OCR_DEBRIS_SHARE:
        warnings.append("text layer looks like noisy OCR; quotes from it may be garbled")
    return logical, meta, warnings


def judgment_paragraphs(lines: list[Line]) -> list[Line]:
    """A judgment's paragraphs as numbered provisions: the heading block (until the judge's first words, "PATEL JA:
    This is …", or the first long paragraph that is not a line of dates) stays as it is, each later paragraph is
    numbered in order. A judgment that numbers most of its paragraphs itself ("1. …", "[1] …") keeps its numbers."""
    start = next((i for i, line in enumerate(lines) if opens_body(line.text) or (
        len(line.text.split()) >= BODY_WORDS and not is_dates_line(line.text))), len(lines))  # fmt: skip
    body = lines[start:]
    own = [re.match(r"\[?(\d{1,4})[.\]]\s", line.text) for line in body]
    if body and sum(bool(m) for m in own) >= 0.6 * len(body):
        return [*lines[:start], *(line.as_(re.sub(r"^\[(\d{1,4})\]\s", r"\1. ", line.text)) for line in body)]
    return [*lines[:start], *(line.as_(f"{n}. {line.text}") for n, line in enumerate(body, 1))]


def debris_share(lines: list[Line]) -> float:
    words = [w for w in " ".join(line.text for line in lines).split() if len(re.findall(r"[A-Za-z]", w)) >= 2]
    return sum(bool(_OCR_DEBRIS.search(w)) for w in words) / len(words) if words else 0.0


@register(".pdf", version=PARSER_VERSION)
def parse_pdf(path: Path, data: bytes, options: ParseOptions) -> list[Document]:
    pages = _pages(path, data)
    no_text = sum(len(p.strip()) for p in pages) < 20 * max(1, len(pages))
    lines, meta, warnings = clean_pages(pages)
    garbled = debris_share(lines) > OCR_DEBRIS_SHARE
    read_by_ocr = False
    if (no_text or garbled) and options.ocr is not None:
        ocr_pages = options.ocr.read_pages(path, data)
        ocr_lines, ocr_meta, ocr_warnings = clean_pages(ocr_pages, gazette=True)
        # Keep the OCR reading unless it is worse than the text layer it replaces.
        read_by_ocr = no_text or debris_share(ocr_lines) < debris_share(lines)
        if read_by_ocr:
            why = "no text layer" if no_text else "the text layer was garbled OCR"
            pages, lines, meta = ocr_pages, ocr_lines, ocr_meta
            warnings = [f"{why}: OCR used ({options.ocr.name})", *ocr_warnings]
    elif no_text:
        raise IngestionError(
            f"{path.name} has no text layer (a scan?) and OCR is off; install tesseract-ocr or set GWETA_INGESTION__OCR"
        )
    judgment = bool(re.search(r"_v_|\bv\b", path.stem)) or "JUDGMENT" in "\n".join(pages[:2]).upper()
    if judgment and not read_by_ocr:
        lines = judgment_paragraphs(clean_pages(pages, paragraphs=True)[0])
    # A judgment's heading is read from its first page's lines as printed, before they are joined into paragraphs.
    case, jurisdiction = read_judgment(page_text(pages[0]).splitlines(), (), path.name) if judgment else (None, "")
    dates = {"expression": meta["expression"]} if "expression" in meta else {}
    if case is not None and case.decided:
        dates["decided"] = case.decided
    document = build_document(
        lines,
        doc_key=meta.get("id") or path.stem,
        content_hash=content_hash(PARSER_VERSION + (options.ocr.name if options.ocr else ""), data),
        source=str(path),
        title=(case.case_name if case else "") or meta.get("title", ""),
        chapter=meta.get("chapter", ""),
        jurisdiction=jurisdiction,
        doc_type="judgment" if judgment else "act",
        dates=dates,
        pages=len(pages),
        warnings=warnings,
        unit="p" if judgment else "s",
        gazette=read_by_ocr,
    )
    return [document.model_copy(update={"judgment": case})]
