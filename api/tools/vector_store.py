"""Dense vectors with their metadata: Milvus Lite in a local folder by default, Milvus/Zilliz by URI in production."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from api.errors import BackendError, BadRequestError, ConfigError, NotReadyError
from api.schemas.documents import Chunk
from api.settings import Settings
from api.tools.embeddings import Vectors
from api.tools.lite_lock import held_lite_store_message

log = logging.getLogger(__name__)
T = TypeVar("T")
MASKS_KEPT = 64
EXACT_FIELDS = ["id", "vector", "doc_key", "jurisdiction", "doc_type", "date", "tenant"]


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
    excluded: tuple[str, ...] | None = None
    """Documents left out (by doc key): e.g. those not in force on the day a question is asked about."""

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
        values = (self.jurisdiction, self.doc_type, self.doc_keys, self.date_from, self.date_to, self.tenants,
                  self.excluded)  # fmt: skip
        return any(v is not None for v in values)

    def admits(self, chunk: Chunk) -> bool:
        return self.admits_document(chunk.doc_key, chunk.jurisdiction, chunk.doc_type, chunk.date, chunk.tenant)

    def admits_document(self, doc_key: str, jurisdiction: str, doc_type: str, date: str, tenant: str) -> bool:
        """Whether the chunks of a document with these fields are admitted: every filter reads document fields."""
        day = date_number(date)
        return (
            (self.jurisdiction is None or jurisdiction == self.jurisdiction)
            and (self.doc_type is None or doc_type == self.doc_type)
            and (self.doc_keys is None or doc_key in self.doc_keys)
            and (self.date_from is None or day >= date_number(self.date_from))
            and (self.date_to is None or 0 < day <= date_number(self.date_to, end=True))
            and (self.tenants is None or tenant in self.tenants)
            and (self.excluded is None or doc_key not in self.excluded)
        )

    def mask(self, index: ExactIndex) -> npt.NDArray[np.bool_]:
        """The rows of ``index`` this admits, as a boolean array (the same rules as ``admits``)."""
        mask = np.ones(len(index), dtype=bool)
        if self.jurisdiction is not None:
            mask &= index.jurisdiction == self.jurisdiction
        if self.doc_type is not None:
            mask &= index.doc_type == self.doc_type
        if self.doc_keys is not None:
            mask &= np.isin(index.doc_key, list(self.doc_keys))
        if self.date_from is not None:
            mask &= index.date >= date_number(self.date_from)
        if self.date_to is not None:
            mask &= (index.date > 0) & (index.date <= date_number(self.date_to, end=True))
        if self.tenants is not None:
            mask &= np.isin(index.tenant, list(self.tenants))
        if self.excluded is not None:
            mask &= ~np.isin(index.doc_key, list(self.excluded))
        return mask

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
        if self.excluded is not None:
            clauses.append(f"doc_key not in [{', '.join(map(_quote, self.excluded))}]")
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


class ExactIndex:
    """Every vector of one collection, with the fields filters read, searched exactly by cosine similarity.

    Milvus Lite runs its search in this process, one call at a time (it is not safe under concurrent calls): over
    the 385 Zimbabwe Acts (34,819 vectors) a query costs about 22 ms there, and its background index is approximate
    (27-30 of the exact top 30). The same vectors as one normalised float32 matrix (1.5 KB a vector: 53 MB at 35k)
    answer a query exactly with one matrix-vector product in about 2.5 ms, on any thread (numpy releases the GIL).
    Milvus stays the store of record; this copy is rebuilt from it after every write
    (``benchmarks/results/exact_search.md``).
    """

    def __init__(self, rows: Sequence[Mapping[str, Any]], dimensions: int) -> None:
        self.ids = [str(r["id"]) for r in rows]
        matrix = np.asarray([r["vector"] for r in rows], dtype=np.float32).reshape(len(rows), dimensions)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix: npt.NDArray[np.float32] = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        self.doc_key = np.asarray([str(r["doc_key"]) for r in rows], dtype=object)
        self.jurisdiction = np.asarray([str(r["jurisdiction"]) for r in rows], dtype=object)
        self.doc_type = np.asarray([str(r["doc_type"]) for r in rows], dtype=object)
        self.date = np.asarray([int(r["date"]) for r in rows], dtype=np.int64)
        self.tenant = np.asarray([str(r["tenant"]) for r in rows], dtype=object)
        self._masks: OrderedDict[SearchFilters, npt.NDArray[np.bool_]] = OrderedDict()
        self._masks_lock = threading.Lock()

    @classmethod
    def joined(cls, parts: Sequence[ExactIndex], dimensions: int) -> ExactIndex:
        """One index of ``parts`` in order (built a page at a time, so a page's vectors are Python floats only while
        that page is converted: 12 KB a row as floats against 1.5 KB as float32)."""
        index = cls([], dimensions)
        if parts:
            index.ids = [i for part in parts for i in part.ids]
            index.matrix = np.concatenate([part.matrix for part in parts])
            for name in ("doc_key", "jurisdiction", "doc_type", "date", "tenant"):
                setattr(index, name, np.concatenate([getattr(part, name) for part in parts]))
        return index

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, vector: Vectors, limit: int, filters: SearchFilters = NO_FILTERS) -> list[Hit]:
        """The ``limit`` best rows by cosine similarity among those ``filters`` admits."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        # einsum, not BLAS: the product is memory-bound (2 ms for 35k x 384 either way), and BLAS's threads spin
        # between calls, which at one question a second doubled the server's CPU per answer (93 against 46 ms).
        scores = np.einsum("ij,j->i", self.matrix, query / norm if norm > 0 else query)
        if filters:
            mask = self._mask(filters)
            scores = np.where(mask, scores, -np.inf)
            limit = min(limit, int(mask.sum()))
        limit = min(limit, len(self.ids))
        if limit <= 0:
            return []
        top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(self.ids) else np.arange(len(self.ids))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(self.ids[i], float(scores[i])) for i in top]

    def _mask(self, filters: SearchFilters) -> npt.NDArray[np.bool_]:
        """Rows ``filters`` admits (the last few kept)."""
        with self._masks_lock:
            if (cached := self._masks.get(filters)) is not None:
                self._masks.move_to_end(filters)
                return cached
        mask = filters.mask(self)
        with self._masks_lock:
            self._masks[filters] = mask
            if len(self._masks) > MASKS_KEPT:
                self._masks.popitem(last=False)
        return mask


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
        exact_max_rows: int = 0,
        hosted_lite: bool = False,
    ) -> None:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        self.uri = uri
        self.collection = collection
        self.dimensions = dimensions
        self.embedder = embedder
        """Which model's vectors the collection holds (``name:dimensions``); checked when it exists already."""
        self.index_type, self.index_params = index_type, dict(index_params or {})
        self.search_params = {"params": dict(search_params)} if search_params else None
        self.is_lite = "://" not in uri
        # Milvus Lite is an in-process engine: one call at a time keeps it consistent under the thread pool.
        self._lock = threading.Lock() if self.is_lite else None
        self.exact_max_rows = exact_max_rows if self.is_lite or hosted_lite else 0
        """Milvus Lite only (here, or hosted by the serving process for its graph workers): search an in-memory
        ExactIndex of up to this many vectors instead (0: never)."""
        self.exact: ExactIndex | None = None
        self._exact_build: asyncio.Task[None] | None = None
        self._generation = 0
        """Bumped by every write: an ExactIndex read before a write is never served after it."""
        self._exact_refused = -1
        """The generation whose row count was over ``exact_max_rows``, or whose build failed: no index is built
        again until the next write."""
        self._closed = False
        try:
            self.client = MilvusClient(uri, token=token) if token else MilvusClient(uri)
        except MilvusException as exc:
            if self.is_lite:
                raise NotReadyError(held_lite_store_message(uri)) from exc
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
        import grpc  # type: ignore[import-untyped]
        from pymilvus.exceptions import MilvusException

        try:
            if self._lock is None:
                return fn(*args, **kwargs)
            with self._lock:
                return fn(*args, **kwargs)
        except MilvusException as exc:
            raise BackendError(f"vector store call failed: {exc.message}") from exc
        except grpc.RpcError as exc:  # codes pymilvus does not retry (a deadline, auth) come through as they are
            code, details = exc.code(), exc.details()
            raise BackendError(f"vector store call failed: {code.name}: {details}") from exc

    def warm(self) -> None:
        """Start building the ExactIndex in the background (Milvus Lite only); searches use Lite until it is ready."""
        idle = self._exact_build is None or self._exact_build.done()
        wanted = self.exact_max_rows and self.exact is None and not self._closed
        if wanted and idle and self._exact_refused != self._generation:
            self._exact_build = asyncio.get_running_loop().create_task(self._build_exact(self._generation))

    async def exact_ready(self) -> bool:
        """Wait for the ExactIndex being built (starting one if none is); True when searches are served by it."""
        self.warm()
        if self._exact_build is not None:
            await asyncio.shield(self._exact_build)
        return self.exact is not None

    async def _build_exact(self, generation: int) -> None:
        try:
            if (rows := await self.count()) > self.exact_max_rows:
                self._exact_refused = generation
                log.info("%d vectors, over exact_max_rows %d: searching Milvus Lite", rows, self.exact_max_rows)
                return
            parts = await asyncio.to_thread(self._scan, EXACT_FIELDS, lambda rows: ExactIndex(rows, self.dimensions))
            index = await asyncio.to_thread(ExactIndex.joined, parts, self.dimensions)
        except Exception as exc:  # noqa: BLE001 (Lite answers meanwhile; a failed build is logged, not raised)
            self._exact_refused = generation
            log.warning("exact index not built, searching Milvus Lite: %s", exc)
            return
        if generation == self._generation and not self._closed:
            self.exact = index
            log.info("exact index of %d vectors ready (%.0f MB)", len(index), index.matrix.nbytes / 1e6)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Around a write: the ExactIndex is dropped before it and again after it, so neither an index in use nor
        one built while the write ran is served once it is done."""
        self._generation += 1
        self.exact = None
        try:
            yield
        finally:
            self._generation += 1
            self.exact = None

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
            with self._writing():
                await asyncio.to_thread(self._run, self.client.upsert, self.collection, rows)

    async def delete_document(self, doc_key: str) -> None:
        with self._writing():
            expression = f"doc_key == {_quote(doc_key)}"
            await asyncio.to_thread(self._run, self.client.delete, self.collection, filter=expression)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        with self._writing():
            for start in range(0, len(ids), 1000):
                batch = list(ids[start : start + 1000])
                await asyncio.to_thread(self._run, self.client.delete, self.collection, ids=batch)

    async def search(self, vector: Vectors, limit: int, filters: SearchFilters = NO_FILTERS) -> list[Hit]:
        if self.exact_max_rows:
            if (exact := self.exact) is not None:
                return await asyncio.to_thread(exact.search, vector, limit, filters)
            self.warm()
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

    async def vectors(self) -> dict[str, Vectors]:
        """Every stored chunk's vector by id (read a page at a time; 1.5 KB a vector at 384 dimensions)."""

        def page(rows: list[dict[str, Any]]) -> dict[str, Vectors]:
            matrix = np.asarray([r["vector"] for r in rows], dtype=np.float32).reshape(len(rows), self.dimensions)
            return dict(zip((str(r["id"]) for r in rows), matrix, strict=True))

        pages = await asyncio.to_thread(self._scan, ["id", "vector"], page)
        return {i: vector for found in pages for i, vector in found.items()}

    async def ids(self) -> set[str]:
        """Every stored chunk id."""
        pages = await asyncio.to_thread(self._scan, ["id"], lambda rows: [str(r["id"]) for r in rows])
        return {i for page in pages for i in page}

    def _scan(self, fields: list[str], convert: Callable[[list[dict[str, Any]]], T]) -> list[T]:
        """Every row's ``fields``, a page at a time (a single query is capped at 16,384 rows), each page converted
        as it comes. Lite is held one page at a time, so searches go on between pages; a close stops the scan."""
        pages: list[T] = []
        iterator = self._run(
            self.client.query_iterator, self.collection, batch_size=4096, filter='id != ""', output_fields=fields
        )
        try:
            while not self._closed and (batch := self._run(iterator.next)):
                pages.append(convert(batch))
        finally:
            self._run(iterator.close)
        if self._closed:
            raise BackendError("the vector store was closed during a scan")
        return pages

    async def count(self) -> int:
        rows = await asyncio.to_thread(
            self._run, self.client.query, self.collection, filter="", output_fields=["count(*)"]
        )
        return int(rows[0]["count(*)"])

    async def flush(self) -> None:
        """Seal what was written into indexed segments. Milvus Lite otherwise searches fresh rows through an
        in-memory table it re-snapshots on every query, which is many times slower."""
        await asyncio.to_thread(self._run, self.client.flush, self.collection)

    def shared_uri(self) -> str:
        """The URI another process reaches this store by: for Milvus Lite, the loopback address of the engine this
        process hosts (pymilvus starts one per data directory and returns it again for the same path)."""
        if not self.is_lite:
            return self.uri
        from milvus_lite.server_manager import server_manager_instance

        uri: str | None = server_manager_instance.start_and_get_uri(self.uri)
        if uri is None:
            raise BackendError(f"Milvus Lite at {self.uri} could not be shared with the graph workers")
        return uri

    async def close(self) -> None:
        self._closed = True
        if self._exact_build is not None:
            await asyncio.wait([self._exact_build])  # a build stops at its next page
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
                cfg.exact_max_rows, cfg.hosted_lite,
            )  # fmt: skip
