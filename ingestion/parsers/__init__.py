"""Parsers keyed by file type. Each turns one source file's bytes into the Documents it holds.

Most files hold one document; a JSONL corpus holds many. Add a format by decorating a function with
``@register(".ext", ...)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document

Parser = Callable[[Path, bytes], list[Document]]
PARSERS: dict[str, Parser] = {}


def register(*suffixes: str) -> Callable[[Parser], Parser]:
    def add(parser: Parser) -> Parser:
        for suffix in suffixes:
            PARSERS[suffix.lower()] = parser
        return parser

    return add


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
