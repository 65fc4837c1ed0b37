"""Dense vectors with their metadata: Milvus Lite in a local folder by default, Milvus/Zilliz by URI in production."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from api.errors import BackendError, BadRequestError, ConfigError, NotReadyError
from api.schemas.documents import Chunk
from api.settings import Settings
from api.tools.embeddings import Vectors

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Hit:
    chunk_id: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Metadata every backend applies inside its search (not to its results): None means any."""

    jurisdiction: str | None = None
    doc_type: str | None = None
    doc_keys: tuple[str, ...] | None = None
    date_from: str | None = None
    """Inclusive ISO dates (YYYY, YYYY-MM or YYYY-MM-DD); a document with no known date is left out by either."""
    date_to: str | None = None
    tenants: tuple[str, ...] | None = None
    """Owners whose documents may be read ('' is the public corpus); None when the corpus has no private ones."""

    @classmethod
    def from_request(cls, filters: Mapping[str, str], tenants: tuple[str, ...] | None = None) -> SearchFilters:
        """From a request's filter names (jurisdiction, doc_type, law_id, date_from, date_to)."""
        law_id = filters.get("law_id")
        return cls(
            jurisdiction=filters.get("jurisdiction"), doc_type=filters.get("doc_type"),
            doc_keys=(law_id,) if law_id else None, date_from=filters.get("date_from"),
            date_to=filters.get("date_to"), tenants=tenants,
        )  # fmt: skip

    def __bool__(self) -> bool:
        values = (self.jurisdiction, self.doc_type, self.doc_keys, self.date_from, self.date_to, self.tenants)
        return any(v is not None for v in values)

    def admits(self, chunk: Chunk) -> bool:
        day = date_number(chunk.date)
        return (
            (self.jurisdiction is None or chunk.jurisdiction == self.jurisdiction)
            and (self.doc_type is None or chunk.doc_type == self.doc_type)
            and (self.doc_keys is None or chunk.doc_key in self.doc_keys)
            and (self.date_from is None or day >= date_number(self.date_from))
            and (self.date_to is None or 0 < day <= date_number(self.date_to, end=True))
            and (self.tenants is None or chunk.tenant in self.tenants)
        )

    def milvus_expression(self) -> str:
        clauses = []
        if self.jurisdiction is not None:
            clauses.append(f"jurisdiction == {_quote(self.jurisdiction)}")
        if self.doc_type is not None:
            clauses.append(f"doc_type == {_quote(self.doc_type)}")
        if self.doc_keys is not None:
            clauses.append(f"doc_key in [{', '.join(map(_quote, self.doc_keys))}]")
        if self.date_from is not None:
            clauses.append(f"date >= {date_number(self.date_from)}")
        if self.date_to is not None:
            clauses.append(f"date > 0 and date <= {date_number(self.date_to, end=True)}")
        if self.tenants is not None:
            clauses.append(f"tenant in [{', '.join(map(_quote, self.tenants))}]")
        return " and ".join(clauses)


NO_FILTERS = SearchFilters()
_DATE = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$")


def date_number(iso: str, end: bool = False) -> int:
    """An ISO date as YYYYMMDD (0 if empty); a bare year or month means its first day, or its last with ``end``."""
    match = _DATE.match(iso.strip()) if iso else None
    if not match:
        if iso:
            raise BadRequestError(f"{iso!r} is not a date; use YYYY, YYYY-MM or YYYY-MM-DD")
        return 0
    year, month, day = match.groups()
    return int(year) * 10000 + int(month or (12 if end else 1)) * 100 + int(day or (31 if end else 1))


class VectorStore(Protocol):
    async def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None: ...
    async def delete_document(self, doc_key: str) -> None: ...
    async def delete_ids(self, ids: Sequence[str]) -> None: ...
    async def ids(self) -> set[str]: ...
    async def search(self, vector: Vectors, limit: int, filters: SearchFilters = ...) -> list[Hit]: ...
    async def count(self) -> int: ...
    async def flush(self) -> None: ...
    async def close(self) -> None: ...


def _quote(value: str) -> str:
    """A string literal for a Milvus filter expression: backslashes, quotes and line breaks escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


class MilvusVectorStore:
    """One Milvus collection of chunk vectors; a local path opens Milvus Lite, a URL a Milvus server."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dimensions: int,
        token: str = "",
        index_type: str = "AUTOINDEX",
        index_params: dict[str, int] | None = None,
        search_params: dict[str, int] | None = None,
        embedder: str = "",
    ) -> None:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        self.collection = collection
        self.dimensions = dimensions
        self.embedder = embedder
        """Which model's vectors the collection holds (``name:dimensions``); checked when it exists already."""
        self.index_type, self.index_params = index_type, dict(index_params or {})
        self.search_params = {"params": dict(search_params)} if search_params else None
        self.is_lite = "://" not in uri
        # Milvus Lite is an in-process engine: one call at a time keeps it consistent under the thread pool.
        self._lock = threading.Lock() if self.is_lite else None
        try:
            self.client = MilvusClient(uri, token=token) if token else MilvusClient(uri)
        except MilvusException as exc:
            if self.is_lite:
                raise NotReadyError(
                    f"cannot open the vector store at {uri}: another gweta process (a running 'gweta serve'?) "
                    "is using this data directory; stop it or use another --data-dir"
                ) from exc
            raise BackendError(f"cannot reach Milvus at {uri}: {exc.message}") from exc
        self._ensure_collection()

    def _ensure_collection(self) -> None:
        from pymilvus import DataType

        if self.client.has_collection(self.collection):
            fields = {f["name"] for f in self.client.describe_collection(self.collection)["fields"]}
            if not {"id", "vector", "doc_key", "section_id", "jurisdiction", "doc_type", "date", "tenant"} <= fields:
                raise NotReadyError(
                    f"the vector collection {self.collection!r} was made by an older version of Gweta; delete it "
                    "(or the data directory's milvus.db) and run 'gweta ingest' again"
                )
            self._refuse_other_models()
            self.client.load_collection(self.collection)
            return
        schema = self.client.create_schema(auto_id=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=256)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dimensions)
        schema.add_field("doc_key", DataType.VARCHAR, max_length=256)
        schema.add_field("section_id", DataType.VARCHAR, max_length=512)
        schema.add_field("jurisdiction", DataType.VARCHAR, max_length=64)
        schema.add_field("doc_type", DataType.VARCHAR, max_length=64)
        schema.add_field("date", DataType.INT64)  # YYYYMMDD, 0 when unknown
        schema.add_field("tenant", DataType.VARCHAR, max_length=128)
        index = self.client.prepare_index_params()
        index_type = "AUTOINDEX" if self.is_lite else self.index_type  # Lite chooses its own (FLAT) index
        params = {} if self.is_lite else self.index_params
        index.add_index(field_name="vector", index_type=index_type, metric_type="COSINE", params=params)
        properties = {EMBEDDER_PROPERTY: self.embedder} if self.embedder else {}
        self.client.create_collection(self.collection, schema=schema, index_params=index, properties=properties)

    def _refuse_other_models(self) -> None:
        """One collection holds one model's vectors: opening it with another model is refused, never mixed."""
        info = self.client.describe_collection(self.collection)
        dims = next((int(f["params"]["dim"]) for f in info["fields"] if f["name"] == "vector"), 0)
        stored = str((info.get("properties") or {}).get(EMBEDDER_PROPERTY, ""))
        if dims != self.dimensions or (stored and self.embedder and stored != self.embedder):
            made_by = stored or f"a {dims}-dimension model"
            raise ConfigError(
                f"the vector collection {self.collection!r} holds vectors of {made_by}, but the configured embeddings "
                f"model is {self.embedder or f'{self.dimensions}-dimension'}: vectors of two models cannot be "
                "compared. Run 'gweta reembed' to fill this model's own collection, or set "
                "GWETA_VECTOR_STORE__COLLECTION to the collection it was made with"
            )

    def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        from pymilvus.exceptions import MilvusException

        try:
            if self._lock is None:
                return fn(*args, **kwargs)
            with self._lock:
                return fn(*args, **kwargs)
        except MilvusException as exc:
            raise BackendError(f"vector store call failed: {exc.message}") from exc

    async def upsert(self, chunks: Sequence[Chunk], vectors: Vectors) -> None:
        rows = [
            {
                "id": c.chunk_id,
                "vector": v.tolist(),
                "doc_key": c.doc_key,
                "section_id": c.section_id,
                "jurisdiction": c.jurisdiction,
                "doc_type": c.doc_type,
                "date": date_number(c.date),
                "tenant": c.tenant,
            }
            for c, v in zip(chunks, vectors, strict=True)
        ]
        if rows:
            await asyncio.to_thread(self._run, self.client.upsert, self.collection, rows)

    async def delete_document(self, doc_key: str) -> None:
        await asyncio.to_thread(self._run, self.client.delete, self.collection, filter=f"doc_key == {_quote(doc_key)}")

    async def delete_ids(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 1000):
            batch = list(ids[start : start + 1000])
            await asyncio.to_thread(self._run, self.client.delete, self.collection, ids=batch)

    async def search(self, vector: Vectors, limit: int, filters: SearchFilters = NO_FILTERS) -> list[Hit]:
        result = await asyncio.to_thread(
            self._run,
            self.client.search,
            self.collection,
            data=[vector.tolist()],
            limit=limit,
            filter=filters.milvus_expression(),
            search_params=self.search_params,
            output_fields=["id"],  # Milvus Lite otherwise projects every stored field of each hit: 2.7 -> 1.8 ms
        )
        return [Hit(str(h["id"]), float(h["distance"])) for h in result[0]]

    async def ids(self) -> set[str]:
        """Every stored chunk id (paged: a single query is capped at 16,384 rows)."""

        def scan() -> set[str]:
            found: set[str] = set()
            iterator = self.client.query_iterator(
                self.collection, batch_size=4096, filter='id != ""', output_fields=["id"]
            )
            try:
                while rows := iterator.next():
                    found.update(str(r["id"]) for r in rows)
            finally:
                iterator.close()
            return found

        return await asyncio.to_thread(self._run, scan)

    async def count(self) -> int:
        rows = await asyncio.to_thread(
            self._run, self.client.query, self.collection, filter="", output_fields=["count(*)"]
        )
        return int(rows[0]["count(*)"])

    async def flush(self) -> None:
        """Seal what was written into indexed segments. Milvus Lite otherwise searches fresh rows through an
        in-memory table it re-snapshots on every query, which is many times slower."""
        await asyncio.to_thread(self._run, self.client.flush, self.collection)

    async def close(self) -> None:
        await asyncio.to_thread(self._run, self.client.close)


EMBEDDER_PROPERTY = "gweta.embedder"


def collection_for(base: str, embedder: str) -> str:
    """The collection a model's vectors live in: the packaged model keeps ``base`` (existing data stays where it
    is); any other model gets its own, named after it and its dimensions, so switching models never mixes them."""
    if not embedder or embedder.startswith("minilm:"):
        return base
    slug = re.sub(r"[^A-Za-z0-9]+", "_", embedder).strip("_").lower()
    return f"{base}__{slug}"[:255]


def build_vector_store(settings: Settings, dimensions: int, embedder: str = "") -> MilvusVectorStore:
    """The configured store, on the collection of ``embedder`` (``name:dimensions``, as the manifest records it)."""
    cfg = settings.vector_store
    match cfg.backend:
        case "milvus":
            if not cfg.uri:
                settings.data_dir.mkdir(parents=True, exist_ok=True)
            return MilvusVectorStore(
                settings.milvus_uri, collection_for(cfg.collection, embedder), dimensions,
                cfg.token.get_secret_value(), cfg.index_type, cfg.index_params, cfg.search_params, embedder,
            )  # fmt: skip
