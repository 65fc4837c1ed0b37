"""Lexical (BM25) search over chunk texts, persisted to the object store as one JSON artifact."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from api.settings import BM25Settings
from api.tools.object_store import ObjectStore, get_json, put_json
from api.tools.vector_store import Hit

BM25_KEY = "indexes/bm25.json"
ARTIFACT_VERSION = 1

# Function words only: legal words such as "shall", "may", "not", "any" carry meaning and stay.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or so that the their then there these "
    "this those to was what when where which who whom why with do does did can my me we you your".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word and number tokens, without function words; "12A" stays one token ("12a")."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class LexicalIndex(Protocol):
    async def search(self, query: str, limit: int) -> list[Hit]: ...
    def __len__(self) -> int: ...


class RankBM25Index:
    """BM25Okapi from rank-bm25 over pre-tokenized chunks."""

    def __init__(self, chunk_ids: Sequence[str], tokens: Sequence[list[str]], cfg: BM25Settings) -> None:
        from rank_bm25 import BM25Okapi

        self.chunk_ids = list(chunk_ids)
        self.tokens = [list(t) for t in tokens]
        self.cfg = cfg
        # rank-bm25 divides by zero on an empty corpus.
        self._bm25 = BM25Okapi(self.tokens, k1=cfg.k1, b=cfg.b) if self.tokens else None

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def _search(self, query: str, limit: int) -> list[Hit]:
        terms = tokenize(query)
        if self._bm25 is None or not terms:
            return []
        scores = np.asarray(self._bm25.get_scores(terms))
        top = np.argsort(-scores, kind="stable")[:limit]
        return [Hit(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]

    async def search(self, query: str, limit: int) -> list[Hit]:
        return await asyncio.to_thread(self._search, query, limit)

    async def save(self, store: ObjectStore) -> None:
        artifact = {
            "version": ARTIFACT_VERSION,
            "backend": "rank_bm25",
            "chunk_ids": self.chunk_ids,
            "tokens": self.tokens,
        }
        await put_json(store, BM25_KEY, artifact)

    @classmethod
    async def load(cls, store: ObjectStore, cfg: BM25Settings) -> RankBM25Index:
        artifact = await get_json(store, BM25_KEY)
        if artifact is None or artifact.get("version") != ARTIFACT_VERSION:
            return cls([], [], cfg)
        return await asyncio.to_thread(cls, artifact["chunk_ids"], artifact["tokens"], cfg)
