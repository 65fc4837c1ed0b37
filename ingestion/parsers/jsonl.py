"""JSONL corpora: one JSON object per line, in either of two shapes.

- Section-structured laws (``acts.jsonl``): ``{"id", "title", "chapter", "kind", "jurisdiction", "url",
  "expression_date", "sections": [{"ref", "section", "heading", "part", "text"}]}``, and optionally
  ``commencement_date`` and ``enacted_date``. Each line is a document; each
  section keeps its ``ref`` so a gold reference ``law id + ref`` resolves to ``<id>#<ref>``.
- Flat passages (``{"id", "title", "text", ...}``, e.g. ObliQA): passages sharing a ``document_id`` form one
  document (titled by ``document_title``); each passage is a section that keeps its ``id`` as ``source_id``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from api.errors import IngestionError
from api.schemas.documents import Document, Section
from ingestion.parsers import ParseOptions, decode_text, register
from ingestion.parsers.structure import jurisdiction_of, numbering_gaps, with_schedule_units

PARSER_VERSION = "jsonl-3"  # 2: a schedule's provisions say what the schedule calls them; 3: next part's heading cut


def _hash(records: list[dict[str, Any]]) -> str:
    payload = json.dumps(records, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(PARSER_VERSION.encode() + b"\0" + payload).hexdigest()


def _unique(section_id: str, used: dict[str, int]) -> str:
    used[section_id] = used.get(section_id, 0) + 1
    return section_id if used[section_id] == 1 else f"{section_id}~{used[section_id]}"


_DATE_FIELDS = {"expression_date": "expression", "commencement_date": "commencement", "enacted_date": "enacted"}
"""A record's date fields and the names ``Document.dates`` keeps them by (``api.tools.versions`` reads them)."""


# The heading of the part that follows, run onto the end of the part's last section by the source ("… award costs
# to either party. Part VII – Execution of judgment"): a heading, not words of the provision, so neither search,
# quotes nor the claim judge may read it as the provision's.
_NEXT_HEADING = re.compile(
    r"\s+(?:PART|Part|CHAPTER|Chapter|SUB-?PART|Sub-?[Pp]art)\s+(?:[IVXLC]+|\d+|[A-Z])[A-Z]?\s*[–—-]\s*"
    r"[^.;:()\[\]]{1,160}$"
)


def without_next_heading(text: str) -> str:
    """``text`` without a following part's heading run onto its end (kept when nothing else would be left)."""
    cut = _NEXT_HEADING.sub("", text)
    return cut if cut.strip() else text


def _dates(record: dict[str, Any]) -> dict[str, str]:
    return {name: str(record[field]) for field, name in _DATE_FIELDS.items() if record.get(field)}


def _law(record: dict[str, Any], path: Path) -> Document:
    doc_key = str(record["id"])
    used: dict[str, int] = {}
    sections = []
    for raw in record["sections"]:
        ref = str(raw.get("ref") or f"s{raw.get('section', '')}")
        text = without_next_heading(str(raw.get("text") or "").strip())
        if not text:
            continue
        sections.append(
            Section(
                section_id=_unique(f"{doc_key}#{ref}", used),
                number=str(raw.get("section") or ref.lstrip("s")),
                heading=str(raw.get("heading") or ""),
                part=str(raw.get("part") or ""),
                text=text,
                ref=ref,
            )
        )
    if not sections:
        raise IngestionError(f"{path.name}: {doc_key} has no section text")
    return Document(
        doc_key=doc_key,
        title=str(record.get("title") or doc_key),
        chapter=str(record.get("chapter") or ""),
        jurisdiction=jurisdiction_of(doc_key, str(record.get("jurisdiction") or "")),
        source=str(record.get("url") or path),
        doc_type=str(record.get("kind") or "act"),
        dates=_dates(record),
        warnings=numbering_gaps(sections),
        content_hash=_hash([record]),
        sections=with_schedule_units(sections),
    )


def _passages(doc_key: str, records: list[dict[str, Any]], path: Path) -> Document:
    used: dict[str, int] = {}
    sections = [
        Section(
            section_id=_unique(f"{doc_key}#{r.get('passage_id') or r['id']}", used),
            number=str(r.get("passage_id") or ""),
            heading=str(r.get("title") or ""),
            text=str(r["text"]).strip(),
            ref=str(r.get("passage_id") or r["id"]),
            source_id=str(r["id"]),
        )
        for r in records
        if str(r.get("text") or "").strip()
    ]
    first = records[0]
    return Document(
        doc_key=doc_key,
        title=str(first.get("document_title") or first.get("title") or doc_key),
        jurisdiction=jurisdiction_of(doc_key, str(first.get("jurisdiction") or "")),
        source=str(path),
        doc_type=str(first.get("kind") or "passage"),
        content_hash=_hash(records),
        sections=sections,
    )


@register(".jsonl", ".ndjson", version=PARSER_VERSION)
def parse_jsonl(path: Path, data: bytes, options: ParseOptions) -> list[Document]:
    records: list[dict[str, Any]] = []
    for number, line in enumerate(decode_text(path, data).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestionError(f"{path.name} line {number} is not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or "id" not in record or not ("sections" in record or "text" in record):
            raise IngestionError(f"{path.name} line {number}: expected an object with 'id' and 'sections' or 'text'")
        records.append(record)
    documents = [_law(r, path) for r in records if "sections" in r]
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if "sections" not in r:
            key = f"{path.parent.name}/{path.stem}/{r['document_id']}" if "document_id" in r else str(r["id"])
            grouped[key].append(r)
    documents += [_passages(key, group, path) for key, group in grouped.items()]
    documents = [d for d in documents if d.sections]
    if not documents:
        raise IngestionError(f"{path.name} holds no passages with text")
    return documents
