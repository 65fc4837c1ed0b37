"""The ingested corpus as the query path sees it: the manifest, every chunk by id, and parent documents on demand.

Object store layout (shared with ``ingestion``)::

    docs/<slug>.json          a Document: the parsed source with its sections (the parents)
    chunks/<slug>.json        the Chunks cut from that document
    indexes/manifest.json     doc_key -> content hash, chunk ids; the corpus version
    indexes/bm25.npz          the lexical index artifact (token arrays: ``api.tools.token_arrays``)
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pydantic import BaseModel, Field

from api.schemas.documents import Chunk, Document, Judgment
from api.schemas.events import Citation
from api.text.citation_style import cite_as, jurisdiction_for
from api.tools.cache import TTLCache
from api.tools.chunk_table import ChunkTable, ChunkWriter
from api.tools.links import LINKS_READER, Links, load_links
from api.tools.object_store import ObjectStore, get_json, get_many_json
from api.tools.repeals import Repeal, load_repeals
from api.tools.vector_store import SearchFilters
from api.tools.versions import Version, Versions, load_versions

log = logging.getLogger(__name__)
MANIFEST_KEY = "indexes/manifest.json"
DOCUMENT_CACHE_S = 3600.0
DOCUMENT_CACHE_ENTRIES = 256
LOAD_BATCH = 256  # documents whose chunks are read and parsed at once when a corpus is loaded


def doc_slug(doc_key: str) -> str:
    """A file-safe, collision-resistant name for a doc_key."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", doc_key).strip("-")[:80]
    return f"{readable}-{hashlib.sha256(doc_key.encode()).hexdigest()[:8]}"


def doc_object_key(doc_key: str) -> str:
    return f"docs/{doc_slug(doc_key)}.json"


def chunks_object_key(doc_key: str) -> str:
    return f"chunks/{doc_slug(doc_key)}.json"


class ManifestEntry(BaseModel):
    content_hash: str
    source: str
    title: str
    chapter: str = Field("", description="The document's chapter number, as its citations give it.")
    chunk_ids: list[str]
    origin: str = Field("", description="The resolved path of the file it was ingested from.")
    source_fingerprint: str = Field("", description="The file's bytes, parser version and OCR engine, hashed.")
    judgment: Judgment | None = Field(
        None, description="A judgment's court, date, citation, parties and judges, as its heading gives them."
    )


class DocumentReads(NamedTuple):
    found: dict[str, Document | None]
    """Read in time (from the cache or the store); None: the document is not in the store."""
    late: list[str]
    """Not read in time, or the read failed."""
    fetched: int
    """How many of ``found`` this call read from the object store."""


class Manifest(BaseModel):
    embedder: str = ""
    dimensions: int = 0
    documents: dict[str, ManifestEntry] = Field(default_factory=dict)

    @property
    def version(self) -> str:
        """Changes whenever any document's content (or the embedder) changes."""
        h = hashlib.sha256(self.embedder.encode())
        for key in sorted(self.documents):
            h.update(f"{key}\0{self.documents[key].content_hash}\0".encode())
        return h.hexdigest()[:12] if self.documents else "empty"

    @classmethod
    async def load(cls, store: ObjectStore) -> Manifest:
        raw = await get_json(store, MANIFEST_KEY)
        return cls() if raw is None else cls.model_validate(raw)


TENANT_VIEWS = 1024
"""Tenants whose view of the corpus is kept (each is a few counts and its titles); the oldest goes first."""


@dataclass(frozen=True, slots=True)
class TenantView:
    """The corpus as a caller of one tenant may know it: its own documents and the public corpus's."""

    version: str
    """The version of what the caller may read: another tenant's ingest does not change it."""
    documents: int
    chunks: int
    titles: list[str]
    jurisdictions: frozenset[str]


class Corpus:
    """Read-only view of one corpus version, loaded once at start-up."""

    def __init__(
        self,
        manifest: Manifest,
        chunks: Iterable[Chunk] | ChunkTable,
        store: ObjectStore,
        repealed: dict[str, Repeal] | None = None,
        links: Links | None = None,
        versions: dict[str, Version] | None = None,
    ) -> None:
        self.manifest = manifest
        self.chunks = chunks if isinstance(chunks, ChunkTable) else ChunkTable.build(chunks)
        """Every chunk by id, read from disk as answers need them (``api.tools.chunk_table``)."""
        self.store = store
        self.repealed = repealed or {}
        """Documents (by doc key) that another document of the corpus says are repealed."""
        self.versions = Versions(versions or {}, self.repealed)
        """Each document's consolidation, commencement and repeal dates, and which documents are versions of one law
        (``api.tools.versions``)."""
        self.links = links or Links()
        """The terms the documents define and the references between provisions (``api.tools.links``)."""
        # Parent documents fetched for small-to-big expansion: kept an hour, the most recently used few hundred.
        self._docs: TTLCache[Document] = TTLCache(DOCUMENT_CACHE_S, DOCUMENT_CACHE_ENTRIES)
        self.fetches = 0
        self._views: dict[str, TenantView] = {}

    @functools.cached_property
    def version(self) -> str:
        """The manifest's version, hashed once: a corpus version is never changed, a new one is loaded."""
        return self.manifest.version

    @functools.cached_property
    def repealed_by(self) -> dict[str, str]:
        """The documents a later document of the corpus repeals: doc key -> the provision that repeals it, in words
        (read once per corpus version: the gate and the quote-only answer read it for every answer)."""
        return {key: f"{r.by_section} of the {r.by_title}" for key, r in self.repealed.items()}

    def search_filters(self, filters: Mapping[str, str], tenant: str) -> SearchFilters:
        """A request's filters (``QueryFilters.filters``) as every search made for a caller of ``tenant`` applies
        them: within the tenant's scope, less the documents not in force on the ``as_of`` day when it names one."""
        found = SearchFilters.from_request(filters, self.tenant_scope(tenant))
        if (as_of := filters.get("as_of")) and (gone := self.versions.not_in_force(as_of)):
            found = dataclasses.replace(found, excluded=gone)
        return found

    def repealed_on(self, as_of: str | None) -> dict[str, str]:
        """``repealed_by`` as of a day (ISO): less the repeals that had not taken effect then; all of them with no
        day (a question about the law today)."""
        return self.versions.repealed_on(as_of, self.repealed_by) if as_of else self.repealed_by

    def styled(self, citation: Citation) -> Citation:
        """``citation`` with ``cite_as`` (its provision as its document's jurisdiction cites it) and
        ``consolidated`` (the consolidation its text reflects, where known)."""
        entry = self.manifest.documents.get(citation.doc_key)
        facets = self.chunks.documents.get(citation.doc_key)
        jurisdiction = jurisdiction_for(citation.doc_key, facets.jurisdiction if facets else "")
        judgment = entry.judgment if entry else None
        styled = cite_as(citation.title, citation.section, citation.provision_id or citation.section_id,
                         entry.chapter if entry else "", jurisdiction,
                         citation=judgment.neutral_citation if judgment else "")  # fmt: skip
        return citation.model_copy(
            update={"cite_as": styled, "consolidated": self.versions.consolidated(citation.doc_key)}
        )

    def titles_for(self, tenant: str) -> list[str]:
        """Titles of the documents a caller of ``tenant`` may read: its own and the public corpus's."""
        return self.view_for(tenant).titles

    def jurisdictions_for(self, tenant: str) -> set[str]:
        """Jurisdictions of the documents a caller of ``tenant`` may read."""
        return set(self.view_for(tenant).jurisdictions)

    def view_for(self, tenant: str) -> TenantView:
        """What a caller of ``tenant`` may know of the corpus (its own documents and the public corpus's): worked
        out once per tenant and corpus version. Replies that describe the corpus read this, never the whole
        corpus, so nothing a caller sees depends on another tenant's documents."""
        if (view := self._views.get(tenant)) is None:
            readable = {"", tenant}
            facets = self.chunks.documents
            keys = [
                key for key, entry in self.manifest.documents.items()
                if entry.chunk_ids and (f := facets.get(key)) is not None and f.tenant in readable
            ]  # fmt: skip
            shown = Manifest(embedder=self.manifest.embedder, dimensions=self.manifest.dimensions,
                             documents={k: self.manifest.documents[k] for k in keys})  # fmt: skip
            mine = [f for f in facets.values() if f.tenant in readable]
            view = TenantView(
                version=shown.version, documents=len(keys), chunks=sum(f.chunks for f in mine),
                titles=sorted({self.manifest.documents[k].title for k in keys}),
                jurisdictions=frozenset(f.jurisdiction for f in mine if f.jurisdiction),
            )  # fmt: skip
            if len(self._views) >= TENANT_VIEWS:
                self._views.pop(next(iter(self._views)))
            self._views[tenant] = view
        return view

    def __len__(self) -> int:
        return len(self.chunks)

    @functools.cached_property
    def tenants(self) -> set[str]:
        return {f.tenant for f in self.chunks.documents.values()}

    def tenant_scope(self, tenant: str) -> tuple[str, ...] | None:
        """The owners a caller of ``tenant`` may read (its own and the public corpus), or None when that is
        everything the corpus holds, so no filter is needed."""
        allowed = {"", tenant}
        return None if self.tenants <= allowed else tuple(sorted(allowed))

    async def document(self, doc_key: str) -> Document | None:
        """The parent document, from the fetch cache or the object store."""
        return (await self.fetch_document(doc_key))[0]

    async def fetch_document(self, doc_key: str) -> tuple[Document | None, bool]:
        """The parent document, and whether this call read it from the object store (False: the fetch cache)."""
        document = self._docs.get(doc_key)
        if document is not None:
            return document, False
        raw = await get_json(self.store, doc_object_key(doc_key))
        if raw is None:
            return None, False
        self.fetches += 1
        document = Document.model_validate(raw)
        self._docs.put(doc_key, document)
        return document, True

    async def documents(self, doc_keys: Sequence[str], within_s: float) -> DocumentReads:
        """Parent documents, read at once, for an answer that cannot wait on a slow or failing object store: those
        in by ``within_s`` (None for a document that is gone), and the keys of those that were not, or whose read
        failed. A late read goes on in the background and fills the fetch cache for the next question."""
        found: dict[str, Document | None] = {}
        reads: dict[str, asyncio.Task[tuple[Document | None, bool]]] = {}
        for key in dict.fromkeys(doc_keys):
            cached = self._docs.get(key)
            if cached is not None:
                found[key] = cached
            else:
                reads[key] = asyncio.ensure_future(self.fetch_document(key))
        if reads:
            await asyncio.wait(reads.values(), timeout=within_s)
        late, fetched = [], 0
        for key, read in reads.items():
            if read.done() and read.exception() is None:
                found[key], from_store = read.result()
                fetched += from_store
            else:
                late.append(key)
                read.add_done_callback(_log_late_read)
        return DocumentReads(found, late, fetched)

    def section_text(self, section_id: str) -> str:
        """A section's indexed text, its chunks joined in order: what verification reads when the parent document
        cannot be (chunks are verbatim slices, so a quote spanning two of them may not be found: stricter, never
        laxer)."""
        texts, ordinal = [], 0
        while (chunk := self.chunks.get(f"{section_id}/c{ordinal}")) is not None:
            texts.append(chunk.text)
            ordinal += 1
        return "\n".join(texts)

    @classmethod
    async def load(cls, store: ObjectStore, batch: int = LOAD_BATCH) -> Corpus:
        """The stored corpus; its chunks are read ``batch`` documents at a time into their table."""
        manifest = await Manifest.load(store)
        chunks = await stored_chunks(store, list(manifest.documents), batch)
        repeals, links, versions = await load_repeals(store), await load_links(store), await load_versions(store)
        if links.stale and manifest.documents:
            # Answers still work on stale links, but may miss a definition or a referenced provision the current
            # reader finds: say so where an operator looks (the log, /readyz), never silently.
            log.warning(
                "the corpus's links (definitions and references) were found by an older reader (%d, now %d): "
                "run `gweta ingest` on this data dir to read them again",
                links.reader,
                LINKS_READER,
            )
        return cls(manifest, chunks, store, repeals, links, versions)


async def load_chunks(store: ObjectStore, doc_keys: Iterable[str]) -> list[Chunk]:
    """The stored chunks of the documents ``doc_keys``, in that order (a document with none stored gives none)."""
    raws = await get_many_json(store, [chunks_object_key(k) for k in doc_keys])
    return [Chunk.model_validate(c) for raw in raws if raw for c in raw]


async def stored_chunks(store: ObjectStore, doc_keys: Sequence[str], batch: int = LOAD_BATCH) -> ChunkTable:
    """The stored chunks of the documents ``doc_keys`` written to a chunk table, read a batch of documents at a time
    so that no more than a batch's chunks are ever in memory at once."""
    writer = await asyncio.to_thread(ChunkWriter)
    try:
        for start in range(0, len(doc_keys), batch):
            await asyncio.to_thread(writer.add, await load_chunks(store, doc_keys[start : start + batch]))
    except BaseException:
        writer.abort()
        raise
    return await asyncio.to_thread(writer.finish)


def _log_late_read(read: asyncio.Task[tuple[Document | None, bool]]) -> None:
    """A parent document read that an answer stopped waiting for: its failure (if any) is logged, not lost."""
    if not read.cancelled() and read.exception() is not None:
        log.warning("reading a parent document failed: %s", read.exception())
