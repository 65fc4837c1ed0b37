"""``gweta reembed``: move the stored corpus to the configured embeddings model without parsing anything again.

Every chunk the manifest lists is embedded with the configured model into that model's own collection (see
``collection_for``), in batches; then the manifest records the new model, which changes the corpus version, so
every replica reloads and drops what it cached under the old one. The old model's collection is left as it was
(delete it once nothing serves from it), so a running service keeps answering until the manifest moves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import httpx

from api.settings import Settings
from api.tools.corpus import MANIFEST_KEY, Corpus
from api.tools.embeddings import build_embedder, model_label
from api.tools.object_store import build_object_store, put_json
from api.tools.onnx_embedder import for_sentences
from api.tools.sentence_vectors import rebuild_sentence_vectors
from api.tools.vector_store import build_vector_store

log = logging.getLogger(__name__)

BATCH = 256


@dataclass(frozen=True, slots=True)
class ReembedReport:
    previous: str
    embedder: str
    collection: str
    chunks: int
    seconds: float
    corpus_version: str


async def reembed(
    settings: Settings, pool: Executor, progress: Callable[[int, int], None] | None = None
) -> ReembedReport:
    """Embed every stored chunk with the configured model into its collection, then record it in the manifest."""
    start = time.perf_counter()
    store = build_object_store(settings.object_store, settings.data_dir)
    corpus = await Corpus.load(store)
    http = httpx.AsyncClient(timeout=httpx.Timeout(settings.llm.timeout_s, connect=5.0))
    embedder = build_embedder(settings.embeddings, pool, http)
    label = model_label(embedder.name, embedder.dimensions)
    vectors = build_vector_store(settings, embedder.dimensions, label)
    chunks = sorted(corpus.chunks.values(), key=lambda c: c.chunk_id)
    try:
        for at in range(0, len(chunks), BATCH):
            batch = chunks[at : at + BATCH]
            await vectors.upsert(batch, await embedder.embed_documents([c.embed_text for c in batch]))
            if progress:
                progress(min(at + BATCH, len(chunks)), len(chunks))
        stale = await vectors.ids() - set(corpus.chunks)
        if stale:
            await vectors.delete_ids(sorted(stale))
        await vectors.flush()
        collection = vectors.collection
        if settings.ingestion.sentence_vectors:  # the new model's, before the manifest moves to it
            runtime = for_sentences(embedder, settings.embeddings, settings.data_dir)
            await rebuild_sentence_vectors(store, chunks, runtime)
    finally:
        await vectors.close()
        await http.aclose()
    manifest = corpus.manifest
    previous = manifest.embedder
    manifest.embedder, manifest.dimensions = label, embedder.dimensions
    await put_json(store, MANIFEST_KEY, manifest.model_dump())
    log.info("re-embedded %d chunks with %s into %s (was %s)", len(chunks), label, collection, previous or "-")
    return ReembedReport(previous, label, collection, len(chunks), round(time.perf_counter() - start, 2),
                         manifest.version)  # fmt: skip
