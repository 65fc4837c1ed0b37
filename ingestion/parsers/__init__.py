"""Parsers keyed by file type. Each turns one source file's bytes into the Documents it holds.

Most files hold one document; a JSONL corpus holds many. Add a format by decorating a function with
``@register(".ext", ..., version="fmt-1")``; bump the version when the parser's output changes, so sources it read
before are read again.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
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
    max_unpacked_bytes: int = 64 * 2**20  # an archive (DOCX) unpacking to more is refused before it is unpacked
    max_compression_ratio: float = 100.0  # …and one packed tighter than this, as a whole or in a large member


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


ARCHIVE_SUFFIXES = frozenset({".docx", ".docm", ".dotx", ".xlsx", ".pptx", ".odt", ".ods", ".epub", ".zip"})
"""Zip-based formats: each is checked against the archive limits before its parser unpacks it."""


def parse(path: Path, data: bytes, options: ParseOptions | None = None) -> list[Document]:
    options = options or ParseOptions()
    parser = parser_for(path)
    if path.suffix.lower() in ARCHIVE_SUFFIXES or data[:4] == b"PK\x03\x04":
        check_archive(path, data, options)
    return parser(path, data, options)


LARGE_MEMBER = 2**20
"""Members smaller than this are not held to the compression ratio (a small, repetitive XML part packs tightly)."""
MAX_MEMBERS = 10_000


def check_archive(path: Path, data: bytes, options: ParseOptions) -> None:
    """Refuse a zip whose members, as its directory declares them, unpack to more than ``max_unpacked_bytes`` or at
    a ratio over ``max_compression_ratio``: read from the directory alone, before anything is unpacked. Python's
    zipfile stops a member at its declared size (and fails its CRC check), so a member that lies unpacks no more."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        raise IngestionError(f"{path.name} is not a readable archive (its zip directory is damaged)") from None
    if len(members) > MAX_MEMBERS:
        raise IngestionError(f"{path.name} holds {len(members):,} files, over the {MAX_MEMBERS:,} an archive may")
    unpacked = sum(m.file_size for m in members)
    if unpacked > options.max_unpacked_bytes:
        raise IngestionError(
            f"{path.name} unpacks to {unpacked / 2**20:,.0f} MiB, over the {options.max_unpacked_bytes / 2**20:,.0f} "
            "MiB limit (ingestion.max_unpacked_mb)"
        )
    ratios = [(unpacked / max(1, len(data)), "as a whole")] + [
        (m.file_size / max(1, m.compress_size), m.filename[:80]) for m in members if m.file_size >= LARGE_MEMBER
    ]
    ratio, where = max(ratios)
    if ratio > options.max_compression_ratio:
        raise IngestionError(
            f"{path.name} is compressed {ratio:,.0f} to 1 ({where}), over the {options.max_compression_ratio:,.0f} "
            "to 1 limit (ingestion.max_compression_ratio): a zip bomb, or an archive made to look small"
        )


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
