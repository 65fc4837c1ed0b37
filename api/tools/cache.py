"""A small in-process LRU map with expiry, shared by the caches on the query path (rerank scores, parent
documents, retrieval results)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

import numpy as np

V = TypeVar("V")


class TTLCache(Generic[V]):
    """An LRU map whose entries expire ``ttl_s`` seconds after they are written."""

    def __init__(self, ttl_s: float, max_entries: int) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        entry = self._data.get(key)
        if entry is None or entry[0] < time.monotonic():
            self._data.pop(key, None)
            return None
        self._data.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, value: V) -> None:
        self._data[key] = (time.monotonic() + self.ttl_s, value)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)

    def peek(self, key: Hashable) -> V | None:
        """The live value without refreshing its place in the LRU order."""
        entry = self._data.get(key)
        return None if entry is None or entry[0] < time.monotonic() else entry[1]

    def __len__(self) -> int:
        return len(self._data)


class SemanticCache(Generic[V]):
    """Values found by the exact text they were stored under, or by meaning: an entry of the same group whose
    vector's cosine to the query's reaches ``threshold``. LRU, and entries expire ``ttl_s`` after they are written.

    ``group`` carries everything besides the text that must match exactly (filters, options, corpus version).
    The vectors are kept per group, so a lookup is one matrix product over that group's entries.
    """

    def __init__(self, ttl_s: float, max_entries: int, threshold: float) -> None:
        self.threshold = threshold
        self.max_entries = max_entries
        self._values: TTLCache[V] = TTLCache(ttl_s, max_entries)
        self._vectors: dict[Hashable, dict[str, np.ndarray]] = {}

    def get(self, group: Hashable, text: str) -> V | None:
        return self._values.get((group, text))

    def get_similar(self, group: Hashable, vector: np.ndarray) -> tuple[V, float] | None:
        """The most similar live entry of ``group`` at or above the threshold, with its similarity."""
        vectors = self._vectors.get(group)
        if not vectors:
            return None
        texts = list(vectors)
        similarities = np.stack([vectors[t] for t in texts]) @ vector
        for i in np.argsort(-similarities):
            if similarities[i] < self.threshold:
                break
            value = self._values.get((group, texts[i]))
            if value is not None:
                return value, float(similarities[i])
            del vectors[texts[i]]  # expired or evicted
        return None

    def put(self, group: Hashable, text: str, vector: np.ndarray | None, value: V) -> None:
        self._values.put((group, text), value)
        if vector is None:
            return
        vectors = self._vectors.setdefault(group, {})
        vectors[text] = vector / (np.linalg.norm(vector) or 1.0)
        if len(vectors) > self.max_entries:  # drop what the LRU has already let go
            for stale in [t for t in vectors if self._values.peek((group, t)) is None]:
                del vectors[stale]

    def __len__(self) -> int:
        return len(self._values)
