"""Staging and commit: a parsed file's documents become objects, vectors and manifest entries, safe to kill.

Per document, in this order: the parsed document and its chunks go to the object store (staging), its new vectors
are upserted with the next embedding batch (chunk ids are deterministic, so unchanged chunks are overwritten in
place), vectors of chunks it no longer has are deleted, and only then is its manifest entry written (commit). A run
killed anywhere leaves a manifest that is still true for what it lists; the next run redoes the document it was in
the middle of, and the reconcile step (``ingestion.indexes``) removes what no manifest entry owns.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from api.errors import GwetaError, IngestionError
from api.schemas.documents import Chunk, Document
from api.tools.corpus import MANIFEST_KEY, Manifest, ManifestEntry, chunks_object_key, doc_object_key
from api.tools.embeddings import Embedder
from api.tools.object_store import ObjectStore, put_json
from api.tools.vector_store import VectorStore
from ingestion.chunking import chunk_document
from ingestion.parse_pool import Parsed
from ingestion.report import DocumentReport, ProgressHook, StageClock

log = logging.getLogger(__name__)

EMBED_BATCH = 512  # chunks embedded per call, across the documents of a file
MANIFEST_SAVE_S = 5.0  # within a many-document file, write the manifest at most this often


@dataclass(slots=True)
class Staged:
    """A document whose objects are stored and whose vectors wait for the next embedding batch."""

    document: Document
    chunks: list[Chunk]
    report: DocumentReport
    fingerprint: str


def owned_by(document: Document, tenant: str) -> Document:
    """The document as ``tenant``'s private copy: its content hash changes with the owner, so a change of owner
    is a change of content."""
    if not tenant:
        return document
    owned = hashlib.sha256(f"{document.content_hash}\0{tenant}".encode()).hexdigest()
    return document.model_copy(update={"tenant": tenant, "content_hash": owned})


Placement = Literal["here", "indexed_elsewhere", "kept_apart"]


def placement(document: Document, manifest: Manifest, seen: set[str], held_elsewhere: bool) -> Placement:
    """Where a parsed document goes; ``held_elsewhere``: another file that still exists holds its id.

    A document is its id and content, not its path. With the id of one another existing file (or an earlier file of
    this run) holds: the same content is that document, indexed once; other content is another version of it (a PDF
    and a JSONL corpus of one law, say), kept apart under its own key. Otherwise it is stored here: new, changed, or
    moved from a file that is gone.
    """
    if document.doc_key not in seen and not held_elsewhere:
        return "here"
    known = manifest.documents.get(document.doc_key)
    return "indexed_elsewhere" if known and known.content_hash == document.content_hash else "kept_apart"


def document_report(document: Document, source: str) -> DocumentReport:
    return DocumentReport(
        source=source, status="ingested", doc_key=document.doc_key, title=document.title, pages=document.pages,
        characters=sum(len(s.text) for s in document.sections), provisions=len(document.sections),
        warnings=list(document.warnings),
    )  # fmt: skip


class DocumentWriter:
    """Writes documents into the object store, the vector store and the manifest, in the order that keeps a
    killed run recoverable."""

    def __init__(
        self,
        store: ObjectStore,
        embedder: Embedder,
        vectors: VectorStore,
        clock: StageClock,
        max_chunk_tokens: int = 200,
        tenant: str = "",
        max_chunks: int = 20_000,
    ) -> None:
        self.store, self.embedder, self.vectors, self.clock = store, embedder, vectors, clock
        self.max_chunk_tokens = max_chunk_tokens
        self.max_chunks = max_chunks
        self.tenant = tenant
        self._manifest_saved = 0.0

    async def save_manifest(self, manifest: Manifest, force: bool = True) -> None:
        """Write the manifest; unforced writes are spaced out, so a 400-Act file is not a 400-fold rewrite.

        A write skipped here only leaves the manifest behind the stores, never ahead of them: a run killed before the
        next write redoes those documents, and the reconcile step drops what they left.
        """
        if force or time.monotonic() - self._manifest_saved >= MANIFEST_SAVE_S:
            await put_json(self.store, MANIFEST_KEY, manifest.model_dump())
            self._manifest_saved = time.monotonic()

    async def prepare(self, document: Document, progress: ProgressHook) -> list[Chunk]:
        """Chunk a document and store it and its chunks as objects; its vectors come with the next batch."""
        with self.clock.timed("chunk"):
            chunks = await asyncio.to_thread(
                chunk_document, document, self.embedder.count_tokens, self.max_chunk_tokens
            )
        if len(chunks) > self.max_chunks:  # refused before anything of it is stored or embedded
            raise IngestionError(
                f"{document.title or document.doc_key} makes {len(chunks):,} chunks, over the {self.max_chunks:,} "
                "one document may (ingestion.max_chunks_per_document)"
            )
        progress("chunks", 0, len(chunks))
        with self.clock.timed("store_objects"):
            await put_json(self.store, doc_object_key(document.doc_key), document.model_dump(mode="json"))
            await put_json(self.store, chunks_object_key(document.doc_key), [c.model_dump() for c in chunks])
        return chunks

    async def commit(self, batch: list[Staged], manifest: Manifest, progress: ProgressHook) -> None:
        """Embed and upsert the staged documents' chunks together, then record each document in the manifest.

        Embedding several small documents in one call lets the model sort their chunks by length, so less of each
        batch is padding (measured: 8% more chunks a second than one document at a time). A document enters the
        manifest only once all its vectors are stored, and its stale vectors are deleted only then.
        """
        chunks = [c for staged in batch for c in staged.chunks]
        for i in range(0, len(chunks), EMBED_BATCH):
            part = chunks[i : i + EMBED_BATCH]
            with self.clock.timed("embed"):
                embedded = await self.embedder.embed_documents([c.embed_text for c in part])
            with self.clock.timed("store_vectors"):
                await self.vectors.upsert(part, embedded)
            progress("chunks", len(part), None)
        for staged in batch:
            document, new_ids = staged.document, [c.chunk_id for c in staged.chunks]
            previous = manifest.documents.get(document.doc_key)
            if previous:
                await self.vectors.delete_ids(sorted(set(previous.chunk_ids) - set(new_ids)))
            manifest.documents[document.doc_key] = ManifestEntry(
                content_hash=document.content_hash, source=document.source, title=document.title,
                chapter=document.chapter,
                chunk_ids=new_ids, origin=staged.report.source, source_fingerprint=staged.fingerprint,
                judgment=document.judgment,
            )  # fmt: skip
            staged.report.chunks = len(new_ids)
        await self.save_manifest(manifest, force=False)

    async def remove(self, doc_key: str, manifest: Manifest) -> DocumentReport:
        """Drop a document from every index: vectors, then the manifest, then its objects."""
        entry = manifest.documents.pop(doc_key)
        await self.vectors.delete_ids(entry.chunk_ids)
        await self.vectors.delete_document(doc_key)
        await self.save_manifest(manifest)
        await self.store.delete(doc_object_key(doc_key))
        await self.store.delete(chunks_object_key(doc_key))
        return DocumentReport(entry.origin, "removed", doc_key=doc_key, title=entry.title)

    async def write_file(
        self, path: Path, fingerprint: str, parsed: Parsed, manifest: Manifest, seen: set[str], progress: ProgressHook
    ) -> list[DocumentReport]:
        """Store one parsed file's documents (unchanged ones only re-recorded), committing in embedding batches."""
        start = time.perf_counter()
        origin = str(path)
        if parsed.error:
            log.warning("cannot ingest %s: %s", path, parsed.error)
            return [DocumentReport(origin, "failed", message=parsed.error, seconds=round(parsed.seconds, 3))]
        reports = []
        batch: list[Staged] = []

        async def commit() -> None:
            try:
                await self.commit(batch, manifest, progress)
            except GwetaError as exc:
                for staged in batch:
                    staged.report.status, staged.report.message = "failed", exc.message
                log.warning("cannot store %d document(s) from %s: %s", len(batch), path, exc.message)
            batch.clear()

        for parsed_document in parsed.documents:
            doc_start = time.perf_counter()
            document = owned_by(parsed_document, self.tenant)
            report = document_report(document, origin)
            known = manifest.documents.get(document.doc_key)
            other = known.origin if known is not None and known.origin not in ("", origin) else ""
            other_exists = bool(other) and await asyncio.to_thread(Path(other).exists)
            match placement(document, manifest, seen, other_exists):
                case "indexed_elsewhere":
                    report.status, report.chunks = "skipped", len(known.chunk_ids) if known else 0
                    report.message = f"the same document as in {other}" if other_exists else "a second copy of it"
                    report.message += ", indexed once"
                    seen.add(document.doc_key)
                    report.seconds = round(time.perf_counter() - doc_start, 3)
                    reports.append(report)
                    continue
                case "kept_apart":
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
                    batch.append(Staged(document, await self.prepare(document, progress), report, fingerprint))
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
        await self.save_manifest(manifest)
        return reports
