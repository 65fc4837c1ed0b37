"""Ingest a folder (or file) of sources: parse, chunk, embed, store; unchanged documents are skipped.

Writes, per document and in this order: the parsed document and its chunks (object store), its vectors (old ones
deleted first), then its manifest entry. The lexical index is rebuilt from all stored chunks at the end, so running
the same folder twice leaves the same index.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from api.errors import GwetaError
from api.schemas.documents import Chunk
from api.settings import Settings
from api.tools.bm25 import RankBM25Index, tokenize
from api.tools.corpus import MANIFEST_KEY, Manifest, ManifestEntry, chunks_object_key, doc_object_key
from api.tools.embeddings import Embedder, build_embedder
from api.tools.object_store import ObjectStore, build_object_store, get_many_json, put_json
from api.tools.vector_store import VectorStore, build_vector_store
from ingestion.chunking import chunk_document
from ingestion.parsers import parser_for, supported

log = logging.getLogger(__name__)

# (stage, advance, total): stage is "documents" or "chunks"; total is None when unchanged.
ProgressHook = Callable[[str, int, int | None], None]
MAX_FILE_BYTES = 50 * 1024 * 1024


@dataclass(slots=True)
class DocumentReport:
    source: str
    status: str  # "ingested" | "unchanged" | "failed"
    doc_key: str = ""
    sections: int = 0
    chunks: int = 0
    seconds: float = 0.0
    message: str = ""


@dataclass(slots=True)
class IngestReport:
    documents: list[DocumentReport] = field(default_factory=list)
    corpus_version: str = ""
    total_chunks: int = 0
    seconds: float = 0.0

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


def _read_source(path: Path) -> bytes:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise GwetaError(f"{path.name} is larger than {MAX_FILE_BYTES // 2**20} MiB")
    return path.read_bytes()


def discover(root: Path) -> list[Path]:
    """Every file under ``root`` (or ``root`` itself), hidden files left out, in a stable order."""
    if root.is_file():
        return [root]
    files = (p for p in root.rglob("*") if p.is_file())
    return sorted(p for p in files if not any(part.startswith(".") for part in p.relative_to(root).parts))


class Ingestor:
    def __init__(self, tools: IngestionTools, max_chunk_tokens: int = 200) -> None:
        self.tools = tools
        self.max_chunk_tokens = max_chunk_tokens

    async def _ingest_file(self, path: Path, manifest: Manifest, progress: ProgressHook) -> DocumentReport:
        start = time.perf_counter()
        report = DocumentReport(source=str(path), status="failed")
        try:
            parse = parser_for(path)
            data = await asyncio.to_thread(_read_source, path)
            document = await asyncio.to_thread(parse, path, data)
            report.doc_key, report.sections = document.doc_key, len(document.sections)
            known = manifest.documents.get(document.doc_key)
            if known and known.content_hash == document.content_hash:
                report.status, report.chunks = "unchanged", len(known.chunk_ids)
                return report
            chunks = await asyncio.to_thread(
                chunk_document, document, self.tools.embedder.count_tokens, self.max_chunk_tokens
            )
            progress("chunks", 0, len(chunks))
            vectors = []
            step = self.tools.settings.embeddings.batch_size * 4
            for i in range(0, len(chunks), step):
                batch = chunks[i : i + step]
                vectors.append(await self.tools.embedder.embed_documents([c.embed_text for c in batch]))
                progress("chunks", len(batch), None)
            store = self.tools.store
            await put_json(store, doc_object_key(document.doc_key), document.model_dump())
            await put_json(store, chunks_object_key(document.doc_key), [c.model_dump() for c in chunks])
            await self.tools.vectors.delete_document(document.doc_key)
            for batch_chunks, batch_vectors in zip(
                (chunks[i : i + step] for i in range(0, len(chunks), step)), vectors, strict=True
            ):
                await self.tools.vectors.upsert(batch_chunks, batch_vectors)
            manifest.documents[document.doc_key] = ManifestEntry(
                content_hash=document.content_hash,
                source=document.source,
                title=document.title,
                chunk_ids=[c.chunk_id for c in chunks],
            )
            await put_json(store, MANIFEST_KEY, manifest.model_dump())
            report.status, report.chunks = "ingested", len(chunks)
        except GwetaError as exc:
            report.message = exc.message
            log.warning("ingestion of %s failed: %s", path, exc.message)
        except OSError as exc:
            report.message = f"cannot read {path.name}: {exc.strerror}"
            log.warning("ingestion of %s failed: %s", path, exc)
        finally:
            report.seconds = round(time.perf_counter() - start, 3)
        return report

    async def rebuild_lexical_index(self, manifest: Manifest) -> int:
        raws = await get_many_json(self.tools.store, [chunks_object_key(k) for k in sorted(manifest.documents)])
        chunks = [Chunk.model_validate(c) for raw in raws if raw for c in raw]
        index = await asyncio.to_thread(
            RankBM25Index,
            [c.chunk_id for c in chunks],
            [tokenize(f"{c.title} {c.section_number} {c.section_heading} {c.text}") for c in chunks],
            self.tools.settings.bm25,
        )
        await index.save(self.tools.store)
        return len(chunks)

    async def ingest(self, root: Path, progress: ProgressHook | None = None) -> IngestReport:
        hook: ProgressHook = progress or (lambda stage, advance, total: None)
        start = time.perf_counter()
        report = IngestReport()
        manifest = await Manifest.load(self.tools.store)
        embedder_name = f"{self.tools.embedder.name}:{self.tools.embedder.dimensions}"
        if manifest.embedder and manifest.embedder != embedder_name:
            log.warning("embedder changed (%s -> %s): re-embedding everything", manifest.embedder, embedder_name)
            for entry in manifest.documents.values():
                entry.content_hash = ""
        manifest.embedder, manifest.dimensions = embedder_name, self.tools.embedder.dimensions
        files = discover(root)
        hook("documents", 0, len(files))
        for path in files:
            if supported(path):
                report.documents.append(await self._ingest_file(path, manifest, hook))
            else:
                report.documents.append(
                    DocumentReport(str(path), "failed", message=f"unsupported file type {path.suffix or '(none)'!r}")
                )
            hook("documents", 1, None)
        await put_json(self.tools.store, MANIFEST_KEY, manifest.model_dump())
        report.total_chunks = await self.rebuild_lexical_index(manifest)
        report.corpus_version = manifest.version
        report.seconds = round(time.perf_counter() - start, 3)
        return report


def build_ingestion_tools(settings: Settings, pool: ThreadPoolExecutor) -> IngestionTools:
    store = build_object_store(settings.object_store, settings.data_dir)
    embedder = build_embedder(settings.embeddings, pool)
    vectors = build_vector_store(settings, embedder.dimensions)
    return IngestionTools(store=store, embedder=embedder, vectors=vectors, settings=settings)
