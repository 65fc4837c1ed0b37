"""Cross-encoder reranking: a BGE reranker through FlagEmbedding from a local folder, or a pass-through.

Scores run in the shared model thread pool, batched, and are cached per (chunk id, query) for an hour, so a
repeated or rewritten-back question costs no inference.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Protocol

from api.errors import ConfigError
from api.schemas.documents import Chunk
from api.settings import RerankerSettings
from api.tools.cache import TTLCache


class Reranker(Protocol):
    name: str

    async def score(self, query: str, chunks: Sequence[Chunk]) -> tuple[list[float], int]:
        """Relevance of each chunk to the query (higher is better), and how many came from the cache."""
        ...


class BgeReranker:
    """FlagEmbedding's FlagReranker over a local model folder (BGE reranker weights, or any cross-encoder)."""

    def __init__(self, cfg: RerankerSettings, pool: Executor) -> None:
        path = Path(cfg.model_path)
        if not (path / "config.json").exists():
            raise ConfigError(f"reranker.model_path {path} is not a model folder (no config.json)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from FlagEmbedding import FlagReranker
        except ImportError as exc:
            raise ConfigError("the BGE reranker needs the 'ml' dependency group (docs/development.md)") from exc
        self.name = f"bge:{path.name}"
        self.cfg = cfg
        self.pool = pool
        self.model = FlagReranker(
            str(path), use_fp16=False, devices=["cpu"], batch_size=cfg.batch_size, max_length=cfg.max_length
        )
        self.cache: TTLCache[float] = TTLCache(cfg.cache_ttl_s, 50_000)

    def _compute(self, pairs: list[list[str]]) -> list[float]:
        scores = self.model.compute_score(pairs, batch_size=self.cfg.batch_size, max_length=self.cfg.max_length)
        return [float(s) for s in (scores if isinstance(scores, list) else [scores])]

    async def score(self, query: str, chunks: Sequence[Chunk]) -> tuple[list[float], int]:
        known: dict[str, float] = {}
        for chunk in chunks:
            if (value := self.cache.get((chunk.chunk_id, query))) is not None:
                known[chunk.chunk_id] = value
        missing = [c for c in chunks if c.chunk_id not in known]
        if missing:
            pairs = [[query, c.embed_text] for c in missing]
            fresh = await asyncio.get_running_loop().run_in_executor(self.pool, self._compute, pairs)
            for chunk, value in zip(missing, fresh, strict=True):
                self.cache.put((chunk.chunk_id, query), value)
                known[chunk.chunk_id] = value
        return [known[c.chunk_id] for c in chunks], len(chunks) - len(missing)


def build_reranker(cfg: RerankerSettings, pool: Executor) -> Reranker | None:
    match cfg.backend:
        case "none":
            return None
        case "bge":
            return BgeReranker(cfg, pool)
