"""Parsers keyed by file type. Each turns one source file's bytes into the Documents it holds.

Most files hold one document; a JSONL corpus holds many. Add a format by decorating a function with
``@register(".ext", ..., version="fmt-1")``; bump the version when the parser's output changes, so sources it read
before are read again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion.ocr import OcrEngine


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """What a parser may need beyond the bytes; picklable, so parsing can run in worker processes."""

    ocr: OcrEngine | None = None
    max_file_bytes: int = 128 * 2**20  # a larger file is refused before it is read


Parser = Callable[[Path, bytes, ParseOptions], list[Document]]
PARSERS: dict[str, Parser] = {}
VERSIONS: dict[str, str] = {}


def register(*suffixes: str, version: str) -> Callable[[Parser], Parser]:
    def add(parser: Parser) -> Parser:
        for suffix in suffixes:
            PARSERS[suffix.lower()] = parser
            VERSIONS[suffix.lower()] = version
        return parser

    return add


def parse(path: Path, data: bytes, options: ParseOptions | None = None) -> list[Document]:
    return parser_for(path)(path, data, options or ParseOptions())


def source_fingerprint(path: Path, data_digest: str, options: ParseOptions) -> str:
    """Names what reading this file would produce: its bytes, its parser's version, and the OCR engine for PDFs.

    Equal fingerprints mean a re-parse would give the same documents, so ingestion can skip the parse itself.
    """
    suffix = path.suffix.lower()
    engine = options.ocr.name if options.ocr is not None and suffix == ".pdf" else ""
    return hashlib.sha256(f"{VERSIONS.get(suffix, '')}\0{engine}\0{data_digest}".encode()).hexdigest()


def parser_for(path: Path) -> Parser:
    try:
        return PARSERS[path.suffix.lower()]
    except KeyError:
        known = ", ".join(sorted(PARSERS))
        raise IngestionError(f"unsupported file type {path.suffix or '(none)'!r}; supported: {known}") from None


def supported(path: Path) -> bool:
    return path.suffix.lower() in PARSERS


def content_hash(parser_version: str, data: bytes) -> str:
    """Changes when the bytes or the parser's output format change, so either triggers a re-ingest."""
    return hashlib.sha256(parser_version.encode() + b"\0" + data).hexdigest()


def decode_text(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestionError(f"{path.name} is not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():
        raise IngestionError(f"{path.name} is empty")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Importing the modules registers their parsers.
from ingestion.parsers import docx as _docx  # noqa: E402,F401
from ingestion.parsers import html as _html  # noqa: E402,F401
from ingestion.parsers import jsonl as _jsonl  # noqa: E402,F401
from ingestion.parsers import pdf as _pdf  # noqa: E402,F401
from ingestion.parsers import text as _text  # noqa: E402,F401
