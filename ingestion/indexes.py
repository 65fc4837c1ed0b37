"""After the documents: the lexical index rebuilt from the manifest's chunks, the laws the corpus repeals and how its
provisions link (definitions, references) read from its documents, and strays of a killed run removed.

A run leaves a marker object while it works; finding one at the start means the previous run was killed, and only
then can vectors or objects exist that no manifest entry owns, so only then is the (full-scan) reconcile paid for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from api.schemas.documents import Chunk, Document
from api.tools import corpus
from api.tools.bm25 import lexical_tokens, save_lexical_artifact
from api.tools.corpus import Manifest, chunks_object_key, doc_object_key
from api.tools.links import find_links, save_links
from api.tools.object_store import ObjectStore, get_many_json, put_json
from api.tools.repeals import find_repeals, save_repeals
from api.tools.vector_store import VectorStore
from api.tools.versions import find_versions, save_versions

RUN_MARKER = "indexes/ingest-running.json"


async def begin_run(store: ObjectStore) -> bool:
    """Leave the run marker; True when the previous run left its own (it was killed)."""
    interrupted = await store.get_bytes(RUN_MARKER) is not None
    await put_json(store, RUN_MARKER, {"started": datetime.now(UTC).isoformat()})
    return interrupted


async def end_run(store: ObjectStore) -> None:
    await store.delete(RUN_MARKER)


async def load_chunks(store: ObjectStore, manifest: Manifest) -> list[Chunk]:
    """Every chunk the manifest owns, its documents in key order."""
    return await corpus.load_chunks(store, sorted(manifest.documents))


async def rebuild_lexical_index(store: ObjectStore, chunks: Sequence[Chunk]) -> int:
    """Write the BM25 artifact for ``chunks`` (all the manifest owns); returns how many chunks are searchable."""
    await write_lexical_index(store, chunks)
    return len(chunks)


async def rebuild_document_indexes(store: ObjectStore, manifest: Manifest) -> tuple[int, int, int]:
    """Write which documents others repeal (``api.tools.repeals``, with the day each repeal took effect where the
    repealing document's commencement is known), each document's dates (``api.tools.versions``) and how provisions
    link (``api.tools.links``), read from every document the manifest owns; returns how many are repealed, the terms
    defined and the references resolved."""
    raws = await get_many_json(store, [doc_object_key(k) for k in sorted(manifest.documents)])
    documents = [Document.model_validate(raw) for raw in raws if raw]
    repeals = await asyncio.to_thread(find_repeals, documents)
    versions = await asyncio.to_thread(find_versions, documents)
    for repeal in repeals.values():
        if (by := versions.get(repeal.by_doc_key)) is not None:
            repeal.date = by.commenced
    await save_repeals(store, repeals)
    await save_versions(store, versions)
    links = await asyncio.to_thread(find_links, documents)
    await save_links(store, links)
    return len(repeals), sum(len(d) for d in links.definitions.values()), len(links.references)


async def write_lexical_index(store: ObjectStore, chunks: Sequence[Chunk]) -> None:
    """Write the BM25 artifact for ``chunks`` (their tokens and where each one's fields meet)."""
    tokens, fields = await asyncio.to_thread(lexical_tokens, chunks)
    await save_lexical_artifact(store, [c.chunk_id for c in chunks], tokens, fields)


async def reconcile(store: ObjectStore, vectors: VectorStore, manifest: Manifest) -> int:
    """Delete vectors and objects that no manifest entry owns (left by a run that was killed); returns how many."""
    owned = {cid for entry in manifest.documents.values() for cid in entry.chunk_ids}
    orphans = sorted(await vectors.ids() - owned)
    await vectors.delete_ids(orphans)
    keys = {doc_object_key(k) for k in manifest.documents} | {chunks_object_key(k) for k in manifest.documents}
    stray = [k for prefix in ("docs/", "chunks/") for k in await store.list_keys(prefix) if k not in keys]
    for key in stray:
        await store.delete(key)
    return len(orphans) + len(stray)
