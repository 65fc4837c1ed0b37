"""Ingest a folder (or file) of sources: parse, chunk, embed, store; incremental and safe to kill.

Per document, in this order: the parsed document and its chunks go to the object store, its new vectors are
upserted (chunk ids are deterministic, so unchanged chunks are overwritten in place), vectors of chunks it no
longer has are deleted, and only then its manifest entry is written. A run killed anywhere leaves a manifest that
is still true for what it lists; the next run redoes the document it was in the middle of, and a final reconcile
step removes any vector or object that no manifest entry owns. Documents whose source file is gone from the folder
are removed from every index. The lexical index is rebuilt from the manifest's chunks at the end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
from ingestion.parsers import parser_for, supported

log = logging.getLogger(__name__)

# (stage, advance, total): stage is "files" or "chunks"; total is None when unchanged.
ProgressHook = Callable[[str, int, int | None], None]
MAX_FILE_BYTES = 128 * 1024 * 1024
RUN_MARKER = "indexes/ingest-running.json"
EMBED_BATCH = 128


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
class IngestReport:
    documents: list[DocumentReport] = field(default_factory=list)
    corpus_version: str = ""
    total_chunks: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    reconciled: int = 0

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


def _read_source(path: Path) -> bytes:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise GwetaError(f"{path.name} is {size // 2**20} MiB, over the {MAX_FILE_BYTES // 2**20} MiB limit; split it")
    return path.read_bytes()


class Ingestor:
    def __init__(self, tools: IngestionTools, max_chunk_tokens: int = 200) -> None:
        self.tools = tools
        self.max_chunk_tokens = max_chunk_tokens
        self.stage_seconds: dict[str, float] = {}

    def _timed(self, stage: str, start: float) -> None:
        self.stage_seconds[stage] = round(self.stage_seconds.get(stage, 0.0) + time.perf_counter() - start, 3)

    async def _parse(self, path: Path) -> list[Document]:
        start = time.perf_counter()
        try:
            data = await asyncio.to_thread(_read_source, path)
            return await asyncio.to_thread(parser_for(path), path, data)
        finally:
            self._timed("parse", start)

    async def _store_document(self, document: Document, origin: str, manifest: Manifest, progress: ProgressHook) -> int:
        start = time.perf_counter()
        chunks = await asyncio.to_thread(
            chunk_document, document, self.tools.embedder.count_tokens, self.max_chunk_tokens
        )
        self._timed("chunk", start)
        progress("chunks", 0, len(chunks))
        store, vectors = self.tools.store, self.tools.vectors
        start = time.perf_counter()
        await put_json(store, doc_object_key(document.doc_key), document.model_dump(mode="json"))
        await put_json(store, chunks_object_key(document.doc_key), [c.model_dump() for c in chunks])
        self._timed("store_objects", start)
        for i in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[i : i + EMBED_BATCH]
            start = time.perf_counter()
            embedded = await self.tools.embedder.embed_documents([c.embed_text for c in batch])
            self._timed("embed", start)
            start = time.perf_counter()
            await vectors.upsert(batch, embedded)
            self._timed("store_vectors", start)
            progress("chunks", len(batch), None)
        previous = manifest.documents.get(document.doc_key)
        new_ids = [c.chunk_id for c in chunks]
        if previous:
            stale = sorted(set(previous.chunk_ids) - set(new_ids))
            await vectors.delete_ids(stale)
        manifest.documents[document.doc_key] = ManifestEntry(
            content_hash=document.content_hash, source=document.source, title=document.title, chunk_ids=new_ids,
            origin=origin,
        )  # fmt: skip
        await put_json(store, MANIFEST_KEY, manifest.model_dump())
        return len(chunks)

    async def _remove(self, doc_key: str, manifest: Manifest) -> None:
        entry = manifest.documents.pop(doc_key)
        await self.tools.vectors.delete_ids(entry.chunk_ids)
        await self.tools.vectors.delete_document(doc_key)
        await put_json(self.tools.store, MANIFEST_KEY, manifest.model_dump())
        await self.tools.store.delete(doc_object_key(doc_key))
        await self.tools.store.delete(chunks_object_key(doc_key))

    async def _ingest_file(
        self, path: Path, manifest: Manifest, seen: set[str], progress: ProgressHook
    ) -> list[DocumentReport]:
        start = time.perf_counter()
        origin = str(path)
        try:
            documents = await self._parse(path)
        except GwetaError as exc:
            log.warning("cannot ingest %s: %s", path, exc.message)
            return [DocumentReport(str(path), "failed", origin, message=exc.message)]
        except OSError as exc:
            message = f"cannot read {path.name}: {exc.strerror}"
            return [DocumentReport(str(path), "failed", origin, message=message)]
        reports = []
        for document in documents:
            doc_start = time.perf_counter()
            report = DocumentReport(
                source=str(path), status="ingested", origin=origin, doc_key=document.doc_key, title=document.title,
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
                if known.origin != origin:
                    known.origin = origin
            else:
                try:
                    report.chunks = await self._store_document(document, origin, manifest, progress)
                except GwetaError as exc:
                    report.status, report.message = "failed", exc.message
                    log.warning("cannot store %s: %s", document.doc_key, exc.message)
            report.seconds = round(time.perf_counter() - doc_start, 3)
            reports.append(report)
        if len(reports) == 1:
            reports[0].seconds = round(time.perf_counter() - start, 3)
        return reports

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
                entry.content_hash = ""
        manifest.embedder, manifest.dimensions = embedder_name, self.tools.embedder.dimensions
        root = await asyncio.to_thread(root.resolve)
        files = await asyncio.to_thread(discover, root)
        hook("files", 0, len(files))
        seen: set[str] = set()
        for path in files:
            if supported(path):
                report.documents += await self._ingest_file(path, manifest, seen, hook)
            else:
                message = f"unsupported file type {path.suffix or '(none)'!r}"
                report.documents.append(DocumentReport(str(path), "failed", str(path), message=message))
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
        await put_json(self.tools.store, MANIFEST_KEY, manifest.model_dump())
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
    vectors = build_vector_store(settings, embedder.dimensions)
    return IngestionTools(store=store, embedder=embedder, vectors=vectors, settings=settings)
