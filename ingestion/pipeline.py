"""Ingest a folder (or file) of sources: parse, chunk, embed, store; incremental and safe to kill.

Files are fingerprinted first (their bytes, parser version and OCR engine): a file whose fingerprint the manifest
already holds is not parsed at all. The others are parsed in worker processes, a few files ahead of the main
process, which chunks, embeds and stores each file's documents in file order as its parse arrives.

Per document, in this order: the parsed document and its chunks go to the object store, its new vectors are
upserted (chunk ids are deterministic, so unchanged chunks are overwritten in place), vectors of chunks it no
longer has are deleted, and only then its manifest entry is written. A run killed anywhere leaves a manifest that
is still true for what it lists; the next run redoes the document it was in the middle of, and a final reconcile
step removes any vector or object that no manifest entry owns. Documents whose source file is gone from the folder
are removed from every index. The lexical index is rebuilt from the manifest's chunks at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from api.errors import GwetaError
from api.schemas.documents import Chunk, Document
from api.settings import Settings
from api.tools.bm25 import lexical_text, save_lexical_artifact, tokenize
from api.tools.corpus import MANIFEST_KEY, Manifest, ManifestEntry, chunks_object_key, doc_object_key
from api.tools.embeddings import Embedder, build_embedder
from api.tools.object_store import ObjectStore, build_object_store, get_many_json, put_json
from api.tools.vector_store import VectorStore, build_vector_store
from ingestion.chunking import chunk_document
from ingestion.ocr import build_ocr
from ingestion.parsers import ParseOptions, parse, source_fingerprint, supported

log = logging.getLogger(__name__)

# (stage, advance, total): stage is "files" or "chunks"; total is None when unchanged.
ProgressHook = Callable[[str, int, int | None], None]
MAX_FILE_BYTES = 128 * 1024 * 1024
RUN_MARKER = "indexes/ingest-running.json"
EMBED_BATCH = 512  # chunks embedded per call, across the documents of a file
MANIFEST_SAVE_S = 5.0  # within a many-document file, write the manifest at most this often


@dataclass(slots=True)
class DocumentReport:
    source: str
    status: str  # "ingested" | "unchanged" | "removed" | "failed"
    origin: str = ""
    doc_key: str = ""
    title: str = ""
    pages: int = 0
    characters: int = 0
    provisions: int = 0
    chunks: int = 0
    seconds: float = 0.0
    message: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Staged:
    """A document whose objects are stored and whose vectors wait for the next embedding batch."""

    document: Document
    chunks: list[Chunk]
    report: DocumentReport
    origin: str
    fingerprint: str


@dataclass(slots=True)
class IngestReport:
    documents: list[DocumentReport] = field(default_factory=list)
    corpus_version: str = ""
    total_chunks: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    reconciled: int = 0
    parsed_files: int = 0  # files read and parsed this run; the others' fingerprints were already in the manifest
    parse_workers: int = 0

    def count(self, status: str) -> int:
        return sum(1 for d in self.documents if d.status == status)

    @property
    def failures(self) -> int:
        return self.count("failed")


@dataclass(slots=True)
class IngestionTools:
    store: ObjectStore
    embedder: Embedder
    vectors: VectorStore
    settings: Settings


def discover(root: Path) -> list[Path]:
    """Every file under ``root`` (or ``root`` itself), hidden files left out, in a stable order.

    Give it a resolved root: documents remember the absolute path of the file they came from.
    """
    if root.is_file():
        return [root]
    files = (p for p in root.rglob("*") if p.is_file())
    return sorted(p for p in files if not any(part.startswith(".") for part in p.relative_to(root).parts))


def _check_size(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise GwetaError(f"{path.name} is {size // 2**20} MiB, over the {MAX_FILE_BYTES // 2**20} MiB limit; split it")


def _digest(path: Path) -> str:
    _check_size(path)
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@dataclass(slots=True)
class Parsed:
    """One file's parse, as a worker process hands it back (an error travels as its message)."""

    documents: list[Document] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: a parser process ends when the ingesting process does, even if that one was killed."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def parse_file(path: Path, options: ParseOptions) -> Parsed:
    start = time.perf_counter()
    try:
        _check_size(path)
        documents = parse(path, path.read_bytes(), options)
    except GwetaError as exc:
        return Parsed(error=exc.message, seconds=time.perf_counter() - start)
    except OSError as exc:
        return Parsed(error=f"cannot read {path.name}: {exc.strerror}", seconds=time.perf_counter() - start)
    return Parsed(documents, seconds=time.perf_counter() - start)


class Ingestor:
    def __init__(self, tools: IngestionTools) -> None:
        self.tools = tools
        config = tools.settings.ingestion
        self.max_chunk_tokens = config.max_chunk_tokens
        self.options = ParseOptions(ocr=build_ocr(config))
        self.parse_workers = config.parse_workers or max(1, os.cpu_count() or 1)
        self.stage_seconds: dict[str, float] = {}
        self._manifest_saved = 0.0

    def _timed(self, stage: str, start: float) -> None:
        self.stage_seconds[stage] = round(self.stage_seconds.get(stage, 0.0) + time.perf_counter() - start, 3)

    async def _save_manifest(self, manifest: Manifest, force: bool = True) -> None:
        """Write the manifest; unforced writes are spaced out, so a 400-Act file is not a 400-fold rewrite.

        A write skipped here only leaves the manifest behind the stores, never ahead of them: a run killed before the
        next write redoes those documents, and the reconcile step drops what they left.
        """
        if force or time.monotonic() - self._manifest_saved >= MANIFEST_SAVE_S:
            await put_json(self.tools.store, MANIFEST_KEY, manifest.model_dump())
            self._manifest_saved = time.monotonic()

    @staticmethod
    def _pool(workers: int) -> ProcessPoolExecutor:
        # spawn, not fork: the parent holds model threads and open stores that a forked child must not inherit.
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(workers, context, initializer=_exit_with_parent, initargs=(os.getpid(),))

    async def _parsed(self, paths: list[Path]) -> AsyncIterator[tuple[Path, Parsed]]:
        """Parse ``paths`` in worker processes, a window of files ahead, yielding in the order given."""
        workers = min(self.parse_workers, len(paths))
        if workers <= 1:
            for path in paths:
                yield path, await asyncio.to_thread(parse_file, path, self.options)
            return
        loop = asyncio.get_running_loop()
        pool = self._pool(workers)
        pending: deque[tuple[Path, asyncio.Future[Parsed]]] = deque()
        queue = deque(paths)
        try:
            while True:
                while queue and len(pending) < 2 * workers:
                    path = queue.popleft()
                    pending.append((path, loop.run_in_executor(pool, parse_file, path, self.options)))
                if not pending:
                    return
                path, future = pending.popleft()
                try:
                    parsed = await future
                except BrokenProcessPool:
                    parsed = Parsed(error=f"the parser process died reading {path.name} (out of memory?)")
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = self._pool(workers)
                    retry = [p for p, _ in pending]
                    pending.clear()
                    pending.extend((p, loop.run_in_executor(pool, parse_file, p, self.options)) for p in retry)
                yield path, parsed
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    async def _prepare(self, document: Document, progress: ProgressHook) -> list[Chunk]:
        """Chunk a document and store it and its chunks as objects; its vectors come with the next batch."""
        start = time.perf_counter()
        chunks = await asyncio.to_thread(
            chunk_document, document, self.tools.embedder.count_tokens, self.max_chunk_tokens
        )
        self._timed("chunk", start)
        progress("chunks", 0, len(chunks))
        start = time.perf_counter()
        await put_json(self.tools.store, doc_object_key(document.doc_key), document.model_dump(mode="json"))
        await put_json(self.tools.store, chunks_object_key(document.doc_key), [c.model_dump() for c in chunks])
        self._timed("store_objects", start)
        return chunks

    async def _commit(self, batch: list[Staged], manifest: Manifest, progress: ProgressHook) -> None:
        """Embed and upsert the staged documents' chunks together, then record each document in the manifest.

        Embedding several small documents in one call lets the model sort their chunks by length, so less of each
        batch is padding (measured: 8% more chunks a second than one document at a time). A document enters the
        manifest only once all its vectors are stored, and its stale vectors are deleted only then.
        """
        chunks = [c for staged in batch for c in staged.chunks]
        for i in range(0, len(chunks), EMBED_BATCH):
            part = chunks[i : i + EMBED_BATCH]
            start = time.perf_counter()
            embedded = await self.tools.embedder.embed_documents([c.embed_text for c in part])
            self._timed("embed", start)
            start = time.perf_counter()
            await self.tools.vectors.upsert(part, embedded)
            self._timed("store_vectors", start)
            progress("chunks", len(part), None)
        for staged in batch:
            document, new_ids = staged.document, [c.chunk_id for c in staged.chunks]
            previous = manifest.documents.get(document.doc_key)
            if previous:
                await self.tools.vectors.delete_ids(sorted(set(previous.chunk_ids) - set(new_ids)))
            manifest.documents[document.doc_key] = ManifestEntry(
                content_hash=document.content_hash, source=document.source, title=document.title,
                chunk_ids=new_ids, origin=staged.origin, source_fingerprint=staged.fingerprint,
            )  # fmt: skip
            staged.report.chunks = len(new_ids)
        await self._save_manifest(manifest, force=False)

    async def _remove(self, doc_key: str, manifest: Manifest) -> None:
        entry = manifest.documents.pop(doc_key)
        await self.tools.vectors.delete_ids(entry.chunk_ids)
        await self.tools.vectors.delete_document(doc_key)
        await self._save_manifest(manifest)
        await self.tools.store.delete(doc_object_key(doc_key))
        await self.tools.store.delete(chunks_object_key(doc_key))

    async def _ingest_parsed(
        self, path: Path, fingerprint: str, parsed: Parsed, manifest: Manifest, seen: set[str], progress: ProgressHook
    ) -> list[DocumentReport]:
        start = time.perf_counter()
        origin = str(path)
        if parsed.error:
            log.warning("cannot ingest %s: %s", path, parsed.error)
            return [DocumentReport(origin, "failed", origin, message=parsed.error, seconds=round(parsed.seconds, 3))]
        reports = []
        tenant = self.tools.settings.ingestion.tenant
        batch: list[Staged] = []

        async def commit() -> None:
            try:
                await self._commit(batch, manifest, progress)
            except GwetaError as exc:
                for staged in batch:
                    staged.report.status, staged.report.message = "failed", exc.message
                log.warning("cannot store %d document(s) from %s: %s", len(batch), path, exc.message)
            batch.clear()

        for document in parsed.documents:
            doc_start = time.perf_counter()
            if tenant:
                owned = hashlib.sha256(f"{document.content_hash}\0{tenant}".encode()).hexdigest()
                document = document.model_copy(update={"tenant": tenant, "content_hash": owned})
            report = DocumentReport(
                source=origin, status="ingested", origin=origin, doc_key=document.doc_key, title=document.title,
                pages=document.pages, characters=sum(len(s.text) for s in document.sections),
                provisions=len(document.sections), warnings=list(document.warnings),
            )  # fmt: skip
            known = manifest.documents.get(document.doc_key)
            held_elsewhere = bool(known and known.origin not in ("", origin)) and await asyncio.to_thread(
                Path(known.origin if known else "").exists
            )
            if document.doc_key in seen or held_elsewhere:
                # The same law from two sources (a PDF and a JSONL corpus, say): keep both, apart.
                document = document.rekeyed(f"{document.doc_key}@{path.stem}")
                report.doc_key = document.doc_key
                report.warnings.append(f"another source already holds this document; stored as {document.doc_key}")
                known = manifest.documents.get(document.doc_key)
            seen.add(document.doc_key)
            if known and known.content_hash == document.content_hash:
                report.status, report.chunks = "unchanged", len(known.chunk_ids)
                known.origin, known.source_fingerprint = origin, fingerprint
            else:
                try:
                    batch.append(Staged(document, await self._prepare(document, progress), report, origin, fingerprint))
                except GwetaError as exc:
                    report.status, report.message = "failed", exc.message
                    log.warning("cannot store %s: %s", document.doc_key, exc.message)
                if sum(len(s.chunks) for s in batch) >= EMBED_BATCH:
                    await commit()
            report.seconds = round(time.perf_counter() - doc_start, 3)
            reports.append(report)
        if batch:
            await commit()
        if len(reports) == 1:
            reports[0].seconds = round(time.perf_counter() - start + parsed.seconds, 3)
        if any(r.status == "failed" for r in reports):
            # Read the file again next time, for the documents that did not make it.
            for entry in manifest.documents.values():
                if entry.origin == origin:
                    entry.source_fingerprint = ""
        await self._save_manifest(manifest)
        return reports

    def _unchanged(self, path: Path, fingerprint: str, manifest: Manifest) -> list[DocumentReport] | None:
        """Reports for a file the manifest already holds at this fingerprint, or None if it must be parsed."""
        origin = str(path)
        owned = {k: e for k, e in manifest.documents.items() if e.origin == origin}
        if not owned or any(e.source_fingerprint != fingerprint for e in owned.values()):
            return None
        return [
            DocumentReport(origin, "unchanged", origin, doc_key=k, title=e.title, chunks=len(e.chunk_ids))
            for k, e in sorted(owned.items())
        ]

    async def rebuild_lexical_index(self, manifest: Manifest) -> int:
        start = time.perf_counter()
        raws = await get_many_json(self.tools.store, [chunks_object_key(k) for k in sorted(manifest.documents)])
        chunks = [Chunk.model_validate(c) for raw in raws if raw for c in raw]
        tokens = await asyncio.to_thread(lambda: [tokenize(lexical_text(c)) for c in chunks])
        await save_lexical_artifact(self.tools.store, [c.chunk_id for c in chunks], tokens)
        self._timed("lexical_index", start)
        return len(chunks)

    async def reconcile(self, manifest: Manifest) -> int:
        """Delete vectors and objects that no manifest entry owns (left by a run that was killed)."""
        start = time.perf_counter()
        owned = {cid for entry in manifest.documents.values() for cid in entry.chunk_ids}
        orphans = sorted(await self.tools.vectors.ids() - owned)
        await self.tools.vectors.delete_ids(orphans)
        keys = {doc_object_key(k) for k in manifest.documents} | {chunks_object_key(k) for k in manifest.documents}
        stray = [
            k for prefix in ("docs/", "chunks/") for k in await self.tools.store.list_keys(prefix) if k not in keys
        ]
        for key in stray:
            await self.tools.store.delete(key)
        self._timed("reconcile", start)
        return len(orphans) + len(stray)

    async def ingest(self, root: Path, progress: ProgressHook | None = None) -> IngestReport:
        hook: ProgressHook = progress or (lambda stage, advance, total: None)
        start = time.perf_counter()
        report = IngestReport()
        manifest = await Manifest.load(self.tools.store)
        # A marker left behind means the last run was killed: only then can there be strays to reconcile, so an
        # unchanged re-run does not pay for a scan of every vector id.
        interrupted = await self.tools.store.get_bytes(RUN_MARKER) is not None
        await put_json(self.tools.store, RUN_MARKER, {"started": datetime.now(UTC).isoformat()})
        embedder_name = f"{self.tools.embedder.name}:{self.tools.embedder.dimensions}"
        if manifest.embedder and manifest.embedder != embedder_name:
            log.warning("embedder changed (%s -> %s): re-embedding everything", manifest.embedder, embedder_name)
            for entry in manifest.documents.values():
                entry.content_hash = entry.source_fingerprint = ""
        manifest.embedder, manifest.dimensions = embedder_name, self.tools.embedder.dimensions
        root = await asyncio.to_thread(root.resolve)
        files = await asyncio.to_thread(discover, root)
        hook("files", 0, len(files))
        seen: set[str] = set()
        start_scan = time.perf_counter()
        to_parse: dict[Path, str] = {}
        for path in files:
            origin = str(path)
            if not supported(path):
                message = f"unsupported file type {path.suffix or '(none)'!r}"
                report.documents.append(DocumentReport(origin, "failed", origin, message=message))
                hook("files", 1, None)
                continue
            try:
                fingerprint = source_fingerprint(path, await asyncio.to_thread(_digest, path), self.options)
            except GwetaError as exc:
                report.documents.append(DocumentReport(origin, "failed", origin, message=exc.message))
                hook("files", 1, None)
                continue
            except OSError as exc:
                message = f"cannot read {path.name}: {exc.strerror}"
                report.documents.append(DocumentReport(origin, "failed", origin, message=message))
                hook("files", 1, None)
                continue
            unchanged = self._unchanged(path, fingerprint, manifest)
            if unchanged is None:
                to_parse[path] = fingerprint
            else:
                report.documents += unchanged
                seen.update(d.doc_key for d in unchanged)
                hook("files", 1, None)
        self._timed("fingerprint", start_scan)
        report.parsed_files = len(to_parse)
        report.parse_workers = min(self.parse_workers, len(to_parse))
        async for path, parsed in self._parsed(list(to_parse)):
            self.stage_seconds["parse"] = round(self.stage_seconds.get("parse", 0.0) + parsed.seconds, 3)
            report.documents += await self._ingest_parsed(path, to_parse[path], parsed, manifest, seen, hook)
            hook("files", 1, None)
        # A document whose file was under this root but produced nothing this time has been removed at the source.
        scope = str(root)
        for doc_key, entry in sorted(manifest.documents.items()):
            inside = entry.origin == scope or entry.origin.startswith(scope.rstrip("/") + "/")
            failed_origin = any(d.status == "failed" and d.origin == entry.origin for d in report.documents)
            if inside and doc_key not in seen and not failed_origin:
                await self._remove(doc_key, manifest)
                removed = DocumentReport(entry.origin, "removed", entry.origin, doc_key=doc_key, title=entry.title)
                report.documents.append(removed)
        await self._save_manifest(manifest)
        if interrupted:
            report.reconciled = await self.reconcile(manifest)
        if any(d.status in ("ingested", "removed") for d in report.documents):
            start_flush = time.perf_counter()
            await self.tools.vectors.flush()
            self._timed("flush", start_flush)
        report.total_chunks = await self.rebuild_lexical_index(manifest)
        report.corpus_version = manifest.version
        report.seconds = round(time.perf_counter() - start, 3)
        report.stage_seconds = dict(self.stage_seconds)
        await put_json(self.tools.store, f"reports/ingest-{datetime.now(UTC):%Y%m%dT%H%M%S%f}.json", asdict(report))
        await self.tools.store.delete(RUN_MARKER)
        return report


SOURCES_PREFIX = "corpus/sources/"


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


def build_ingestion_tools(settings: Settings, pool: ThreadPoolExecutor) -> IngestionTools:
    store = build_object_store(settings.object_store, settings.data_dir)
    embedder = build_embedder(settings.embeddings, pool)
    vectors = build_vector_store(settings, embedder.dimensions, f"{embedder.name}:{embedder.dimensions}")
    return IngestionTools(store=store, embedder=embedder, vectors=vectors, settings=settings)
