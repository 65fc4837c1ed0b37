"""A small in-process LRU map with expiry, shared by the caches on the query path (rerank scores, parent
documents, retrieval results)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

import numpy as np

V = TypeVar("V")


class TTLCache(Generic[V]):
    """An LRU map whose entries expire ``ttl_s`` seconds after they are written: at most ``max_entries`` are held.

    ``on_evict`` is told the key of every entry that leaves other than by ``put`` over it (LRU overflow, expiry), so
    an index kept beside the cache (the semantic cache's vectors) can let go of it too. ``clock`` is for tests.
    """

    def __init__(
        self,
        ttl_s: float,
        max_entries: int,
        on_evict: Callable[[Hashable], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.on_evict = on_evict
        self.clock = clock
        self._data: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def _drop(self, key: Hashable) -> None:
        if self._data.pop(key, None) is not None and self.on_evict is not None:
            self.on_evict(key)

    def get(self, key: Hashable) -> V | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        if entry[0] < self.clock():
            self._drop(key)
            return None
        self._data.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, value: V) -> None:
        now = self.clock()
        self._data[key] = (now + self.ttl_s, value)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._drop(next(iter(self._data)))
        # Expired entries at the cold end go now rather than when the LRU reaches them.
        while self._data and (oldest := next(iter(self._data))) != key and self._data[oldest][0] < now:
            self._drop(oldest)

    def peek(self, key: Hashable) -> V | None:
        """The live value without refreshing its place in the LRU order."""
        entry = self._data.get(key)
        return None if entry is None or entry[0] < self.clock() else entry[1]

    def __len__(self) -> int:
        return len(self._data)


class SemanticCache(Generic[V]):
    """Values found by the exact text they were stored under, or by meaning: an entry of the same group whose
    vector's cosine to the query's reaches ``threshold``. LRU over all groups together, at most ``max_entries``,
    and entries expire ``ttl_s`` after they are written.

    ``group`` carries everything besides the text that must match exactly (filters, options, corpus version).
    The vectors are kept per group, so a lookup is one matrix product over that group's entries; a vector leaves
    with its entry, and a group with its last vector, so neither outlives the bound.
    """

    def __init__(
        self, ttl_s: float, max_entries: int, threshold: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold = threshold
        self.max_entries = max_entries
        self._values: TTLCache[V] = TTLCache(ttl_s, max_entries, on_evict=self._forget, clock=clock)
        self._vectors: dict[Hashable, dict[str, np.ndarray]] = {}

    def _forget(self, key: Hashable) -> None:
        group, text = cast(tuple[Hashable, str], key)
        vectors = self._vectors.get(group)
        if vectors is not None:
            vectors.pop(text, None)
            if not vectors:
                del self._vectors[group]

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
            value = self._values.get((group, texts[i]))  # an expired entry is dropped here, its vector with it
            if value is not None:
                return value, float(similarities[i])
        return None

    def put(self, group: Hashable, text: str, vector: np.ndarray | None, value: V) -> None:
        self._forget((group, text))
        self._values.put((group, text), value)
        if vector is not None and self._values.peek((group, text)) is not None:
            self._vectors.setdefault(group, {})[text] = vector / (np.linalg.norm(vector) or 1.0)

    @property
    def groups(self) -> int:
        """Groups that hold at least one vector."""
        return len(self._vectors)

    @property
    def vectors(self) -> int:
        return sum(len(v) for v in self._vectors.values())

    def __len__(self) -> int:
        return len(self._values)
