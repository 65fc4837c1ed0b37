"""Ingest a folder (or file) of sources: parse, chunk, embed, store; incremental and safe to kill.

``Ingestor.ingest`` runs the jobs below in order, each in its own module:

1. ``ingestion.discovery``: find the files, fingerprint them, settle those the manifest already holds unparsed
   (unchanged, moved, or the same bytes through a second path) and skip unsupported ones;
2. ``ingestion.parse_pool``: parse the rest in worker processes, a few files ahead, within ``ingestion.limits``;
3. ``ingestion.staging``: chunk, store, embed and commit each file's documents as its parse arrives, in file order;
   then remove the documents whose source file is gone from the folder;
4. ``ingestion.indexes``: reconcile after a killed run, rebuild the lexical index from the manifest's chunks;
5. ``ingestion.report``: the run's report, also saved as ``reports/ingest-*.json`` in the object store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from api.errors import BackendError
from api.settings import Settings
from api.tools.corpus import Manifest
from api.tools.embeddings import Embedder, build_embedder, model_label
from api.tools.object_store import ObjectStore, build_object_store, put_json
from api.tools.onnx_embedder import for_sentences
from api.tools.sentence_vectors import rebuild_sentence_vectors
from api.tools.shared_state import announce_corpus_version
from api.tools.vector_store import VectorStore, build_vector_store
from api.tuning import apply_tuning
from ingestion import indexes
from ingestion.discovery import discover, fetch_store_sources, scan, vanished
from ingestion.ocr import build_ocr
from ingestion.parse_pool import parse_in_order
from ingestion.parsers import ParseOptions
from ingestion.report import DocumentReport, IngestReport, ProgressHook, StageClock, no_progress
from ingestion.staging import DocumentWriter

__all__ = [
    "DocumentReport",
    "IngestReport",
    "IngestionTools",
    "Ingestor",
    "build_ingestion_tools",
    "discover",
    "fetch_store_sources",
]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class IngestionTools:
    store: ObjectStore
    embedder: Embedder
    vectors: VectorStore
    settings: Settings


class Ingestor:
    def __init__(self, tools: IngestionTools) -> None:
        self.tools = tools
        config = tools.settings.ingestion
        self.options = ParseOptions(
            ocr=build_ocr(config), max_file_bytes=config.max_file_mb * 2**20,
            max_unpacked_bytes=config.max_unpacked_mb * 2**20, max_compression_ratio=config.max_compression_ratio,
        )  # fmt: skip
        self.parse_workers = config.parse_workers or max(1, os.cpu_count() or 1)
        self.clock = StageClock()
        self.writer = DocumentWriter(
            tools.store, tools.embedder, tools.vectors, self.clock, config.max_chunk_tokens, config.tenant,
            config.max_chunks_per_document,
        )  # fmt: skip

    def _check_embedder(self, manifest: Manifest) -> None:
        """Record the embedder; a different one than the manifest's means every document is embedded again."""
        embedder = self.tools.embedder
        name = model_label(embedder.name, embedder.dimensions)
        if manifest.embedder and manifest.embedder != name:
            log.warning("embedder changed (%s -> %s): re-embedding everything", manifest.embedder, name)
            for entry in manifest.documents.values():
                entry.content_hash = entry.source_fingerprint = ""
        manifest.embedder, manifest.dimensions = name, embedder.dimensions

    async def ingest(self, root: Path, progress: ProgressHook | None = None) -> IngestReport:
        hook = progress or no_progress
        store, clock = self.tools.store, self.clock
        start = time.perf_counter()
        report = IngestReport()
        manifest = await Manifest.load(store)
        interrupted = await indexes.begin_run(store)
        self._check_embedder(manifest)

        root = await asyncio.to_thread(root.resolve)
        files = await asyncio.to_thread(discover, root)
        hook("files", 0, len(files))
        with clock.timed("fingerprint"):
            found = await scan(files, manifest, self.options, hook, self.tools.settings.ingestion.tenant)
        report.documents += found.reports
        seen = found.seen
        report.parsed_files = len(found.to_parse)
        report.parse_workers = min(self.parse_workers, len(found.to_parse))

        async for path, parsed in parse_in_order(list(found.to_parse), self.options, self.parse_workers):
            clock.add("parse", parsed.seconds)
            report.documents += await self.writer.write_file(path, found.to_parse[path], parsed, manifest, seen, hook)
            hook("files", 1, None)

        for doc_key in vanished(manifest, root, seen, report.failed_sources()):
            report.documents.append(await self.writer.remove(doc_key, manifest))
        await self.writer.save_manifest(manifest)

        if interrupted:
            with clock.timed("reconcile"):
                report.reconciled = await indexes.reconcile(store, self.tools.vectors, manifest)
        if any(d.status in ("ingested", "removed") for d in report.documents):
            with clock.timed("flush"):
                await self.tools.vectors.flush()
        # Before the lexical index: a serving replica reloads the corpus (and these) until that index is complete.
        with clock.timed("repeals_and_links"):
            report.repealed, report.definitions, report.references = await indexes.rebuild_document_indexes(
                store, manifest
            )
        chunks = await indexes.load_chunks(store, manifest)
        settings = self.tools.settings
        if settings.ingestion.sentence_vectors:
            with clock.timed("sentence_vectors"):
                try:
                    embedder = for_sentences(self.tools.embedder, settings.embeddings, settings.data_dir)
                    report.sentences, report.sentences_embedded = await rebuild_sentence_vectors(
                        store, chunks, embedder, hook
                    )
                except BackendError as exc:  # the answers embed their sentences themselves, as before
                    log.warning("the sentence vectors were not written: %s", exc.message)
        with clock.timed("lexical_index"):
            report.total_chunks = await indexes.rebuild_lexical_index(store, chunks)
        report.corpus_version = manifest.version
        report.seconds = round(time.perf_counter() - start, 3)
        report.stage_seconds = dict(clock.seconds)
        await put_json(store, f"reports/ingest-{datetime.now(UTC):%Y%m%dT%H%M%S%f}.json", asdict(report))
        await indexes.end_run(store)
        await announce_corpus_version(settings.state, manifest.version)
        return report


def build_ingestion_tools(settings: Settings, pool: ThreadPoolExecutor) -> IngestionTools:
    settings = apply_tuning(settings)  # documents added after `gweta tune` go into the tuned collection
    store = build_object_store(settings.object_store, settings.data_dir)
    embedder = build_embedder(settings.embeddings, pool)
    vectors = build_vector_store(settings, embedder.dimensions, model_label(embedder.name, embedder.dimensions))
    return IngestionTools(store=store, embedder=embedder, vectors=vectors, settings=settings)
