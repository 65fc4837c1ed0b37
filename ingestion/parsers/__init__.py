"""Parsers keyed by file type. Each turns one source file's bytes into a ``Document`` with its sections.

Add a format by decorating a function with ``@register(".ext", ...)``; PDF, DOCX and JSONL slot in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from api.errors import IngestionError
from api.schemas.documents import Document

Parser = Callable[[Path, bytes], Document]
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


# Importing the modules registers their parsers.
from ingestion.parsers import text as _text  # noqa: E402,F401
