"""Hybrid retrieval: dense (vector store) and lexical (BM25) searches run concurrently and are fused with RRF."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field

from api.errors import GwetaError
from api.schemas.documents import Chunk
from api.settings import RetrievalSettings
from api.tools.bm25 import LexicalIndex
from api.tools.corpus import Corpus
from api.tools.embeddings import Embedder
from api.tools.vector_store import Hit, VectorStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Retrieved:
    chunk: Chunk
    score: float
    ranks: Mapping[str, int]


@dataclass(slots=True)
class RetrievalResult:
    hits: list[Retrieved]
    warnings: list[tuple[str, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[Hit]], k: int = 60, weights: Mapping[str, float] | None = None
) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse ranked lists: score(d) = sum over lists of weight / (k + rank), ranks counted from 1.

    Only positions matter, so scores on different scales (cosine, BM25) combine without calibration.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for source, hits in rankings.items():
        weight = 1.0 if weights is None else weights.get(source, 1.0)
        for rank, hit in enumerate(hits, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (k + rank)
            ranks.setdefault(hit.chunk_id, {})[source] = rank
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(cid, score, ranks[cid]) for cid, score in ordered]


class HybridRetriever:
    def __init__(
        self,
        corpus: Corpus,
        embedder: Embedder,
        vectors: VectorStore,
        lexical: LexicalIndex,
        cfg: RetrievalSettings,
    ) -> None:
        self.corpus = corpus
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.cfg = cfg

    async def _dense(self, query: str) -> list[Hit]:
        vector = await self.embedder.embed_query(query)
        return await self.vectors.search(vector, self.cfg.candidates)

    async def _timed(self, name: str, work: Awaitable[list[Hit]], timings: dict[str, float]) -> list[Hit]:
        start = time.perf_counter()
        try:
            return await asyncio.wait_for(work, self.cfg.timeout_s)
        finally:
            timings[f"retrieve_{name}"] = round((time.perf_counter() - start) * 1000, 2)

    async def retrieve(self, query: str, top_k: int | None = None) -> RetrievalResult:
        result = RetrievalResult(hits=[])
        if not len(self.corpus):
            return result
        sources = {"dense": self._dense(query), "bm25": self.lexical.search(query, self.cfg.candidates)}
        outcomes = await asyncio.gather(
            *(self._timed(name, work, result.timings) for name, work in sources.items()), return_exceptions=True
        )
        rankings: dict[str, list[Hit]] = {}
        for name, outcome in zip(sources, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, GwetaError | TimeoutError):
                    raise outcome
                kind = "timed out" if isinstance(outcome, TimeoutError) else "failed"
                log.warning("%s retrieval %s: %r", name, kind, outcome)
                result.warnings.append((f"{name}_unavailable", f"{name} search {kind}; results come from the rest"))
            else:
                rankings[name] = outcome
        if not rankings:
            result.warnings.append(("retrieval_unavailable", "no search backend answered"))
            return result
        start = time.perf_counter()
        fused = reciprocal_rank_fusion(rankings, self.cfg.rrf_k)
        result.hits = [
            Retrieved(self.corpus.chunks[cid], score, ranks) for cid, score, ranks in fused if cid in self.corpus.chunks
        ][: top_k or self.cfg.top_k]
        result.timings["fuse"] = round((time.perf_counter() - start) * 1000, 2)
        return result
