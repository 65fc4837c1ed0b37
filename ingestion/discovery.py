"""Which files a run reads: discovery under a root, fingerprints, and what the manifest already holds.

A file's fingerprint names its bytes, its parser's version and the OCR engine; a file whose documents the manifest
already holds at that fingerprint is reported unchanged without being parsed. Documents that came from under the
root and were not seen this run have been removed at the source.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from api.errors import GwetaError, IngestionError
from api.tools.corpus import Manifest
from api.tools.object_store import ObjectStore
from ingestion.parsers import ParseOptions, source_fingerprint, supported
from ingestion.report import DocumentReport, ProgressHook, Status

SOURCES_PREFIX = "corpus/sources/"


def discover(root: Path) -> list[Path]:
    """Every file under ``root`` (or ``root`` itself), hidden files left out, in a stable order.

    Give it a resolved root: documents remember the absolute path of the file they came from.
    """
    if root.is_file():
        return [root]
    files = (p for p in root.rglob("*") if p.is_file())
    return sorted(p for p in files if not any(part.startswith(".") for part in p.relative_to(root).parts))


def check_size(path: Path, limit: int) -> None:
    size = path.stat().st_size
    if size > limit:
        raise IngestionError(
            f"{path.name} is {size // 2**20} MiB, over the {limit // 2**20} MiB limit "
            "(GWETA_INGESTION__MAX_FILE_MB); split it"
        )


def digest(path: Path, limit: int) -> str:
    """The SHA-256 of a file's bytes, read a block at a time (a file over the size limit is refused first)."""
    check_size(path, limit)
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def file_fingerprint(path: Path, options: ParseOptions, tenant: str = "") -> str:
    """What reading ``path`` for ``tenant`` would produce, named by a hash (see ``source_fingerprint``)."""
    fingerprint = source_fingerprint(path, digest(path, options.max_file_bytes), options)
    # A tenant's copy is other content than the public one: the same bytes for another owner must be read again.
    return hashlib.sha256(f"{fingerprint}\0{tenant}".encode()).hexdigest() if tenant else fingerprint


def unchanged_reports(origin: str, fingerprint: str, manifest: Manifest) -> list[DocumentReport] | None:
    """Reports for a file the manifest already holds at this fingerprint, or None if it must be parsed."""
    owned = {k: e for k, e in manifest.documents.items() if e.origin == origin}
    if not owned or any(e.source_fingerprint != fingerprint for e in owned.values()):
        return None
    return [
        DocumentReport(origin, "unchanged", doc_key=k, title=e.title, chunks=len(e.chunk_ids))
        for k, e in sorted(owned.items())
    ]


def same_bytes_elsewhere(origin: str, fingerprint: str, manifest: Manifest) -> tuple[str, list[str]] | None:
    """Another file whose documents the manifest holds, all at this fingerprint: (its path, their doc_keys).

    The same bytes through another path (a moved, copied or symlinked folder) hold the same documents: a document's
    identity is its id and content, not the path it was read from.
    """
    held = sorted(k for k, e in manifest.documents.items() if e.source_fingerprint == fingerprint)
    origins = {manifest.documents[k].origin for k in held}
    if len(origins) != 1 or origin in origins:
        return None
    (other,) = origins
    if any(e.source_fingerprint != fingerprint for e in manifest.documents.values() if e.origin == other):
        return None  # some of the other file's documents failed last time: read this one
    return other, held


def claim(origin: str, other: str, doc_keys: list[str], manifest: Manifest, moved: bool) -> list[DocumentReport]:
    """Settle a file whose bytes the manifest holds from ``other``: a move when ``other`` is gone (its documents
    now live at ``origin``), else a second path to documents indexed once (skipped)."""
    reports = []
    for doc_key in doc_keys:
        entry = manifest.documents[doc_key]
        if moved:
            entry.origin = origin
        status: Status = "unchanged" if moved else "skipped"
        message = f"moved from {other}" if moved else f"the same file as {other}, indexed once"
        reports.append(
            DocumentReport(origin, status, doc_key, entry.title, chunks=len(entry.chunk_ids), message=message)
        )
    return reports


@dataclass(slots=True)
class Scan:
    """The files of a run, sorted out before any parsing."""

    to_parse: dict[Path, str] = field(default_factory=dict)  # path -> fingerprint, in discovery order
    reports: list[DocumentReport] = field(default_factory=list)  # unchanged, moved, skipped and unreadable files

    @property
    def seen(self) -> set[str]:
        """The doc_keys the files settled without parsing hold."""
        return {d.doc_key for d in self.reports if d.doc_key}


async def scan(
    files: Iterable[Path], manifest: Manifest, options: ParseOptions, progress: ProgressHook, tenant: str = ""
) -> Scan:
    """Fingerprint ``files`` and sort them into those to parse and those settled without parsing.

    Unsupported files are skipped (a README or a manifest.json beside the documents is not a failure); files that
    cannot be read, or are over the size limit, fail.
    """
    result = Scan()
    for path in files:
        origin = str(path)
        if not supported(path):
            message = f"unsupported file type {path.suffix or '(none)'!r}"
            result.reports.append(DocumentReport(origin, "skipped", message=message))
            progress("files", 1, None)
            continue
        try:
            fingerprint = await asyncio.to_thread(file_fingerprint, path, options, tenant)
        except GwetaError as exc:
            result.reports.append(DocumentReport(origin, "failed", message=exc.message))
            progress("files", 1, None)
            continue
        except OSError as exc:
            result.reports.append(DocumentReport(origin, "failed", message=f"cannot read {path.name}: {exc.strerror}"))
            progress("files", 1, None)
            continue
        settled = unchanged_reports(origin, fingerprint, manifest)
        if settled is None and (elsewhere := same_bytes_elsewhere(origin, fingerprint, manifest)):
            other, doc_keys = elsewhere
            moved = not await asyncio.to_thread(Path(other).exists)
            settled = claim(origin, other, doc_keys, manifest, moved)
        if settled is None:
            result.to_parse[path] = fingerprint
        else:
            result.reports += settled
            progress("files", 1, None)
    return result


def vanished(manifest: Manifest, root: Path, seen: set[str], failed_sources: set[str]) -> list[str]:
    """The doc_keys whose file was under ``root`` but produced nothing this run: removed at the source.

    A document whose file failed this run is kept, so a file that cannot be read today loses nothing.
    """
    scope = str(root)
    inside = (scope, scope.rstrip("/") + "/")
    return [
        doc_key
        for doc_key, entry in sorted(manifest.documents.items())
        if (entry.origin == inside[0] or entry.origin.startswith(inside[1]))
        and doc_key not in seen
        and entry.origin not in failed_sources
    ]


async def fetch_store_sources(store: ObjectStore, target: Path, prefix: str = SOURCES_PREFIX) -> Path:
    """Mirror the object store's source files (``corpus/sources/...``) into ``target`` and return it.

    Files already there with the same bytes are left alone and files gone from the store are deleted, so ingesting
    ``target`` afterwards treats the store exactly like a local folder: changed, unchanged and removed alike.
    """
    keys = await store.list_keys(prefix)
    contents = {key[len(prefix) :]: await store.get_bytes(key) for key in keys}
    await asyncio.to_thread(_mirror, target, {k: v for k, v in contents.items() if v is not None})
    return target


def _mirror(target: Path, contents: dict[str, bytes]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for relative, data in contents.items():
        path = target / relative
        if not (path.exists() and path.read_bytes() == data):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    for path in discover(target):
        if path.relative_to(target).as_posix() not in contents:
            path.unlink()
