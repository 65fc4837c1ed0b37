"""QA memory: verified answers kept for a while and served again for a near-identical question.

A question matches an earlier one when their embeddings' cosine similarity reaches the threshold (0.92 by default)
and everything else that shapes an answer is equal: the corpus version, the filters and the caller's tenant. Only
verified, cited, non-abstaining answers are stored. The memory lives in the process (a multi-instance deployment
would put it beside the checkpoints).
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from api.tools.embeddings import Vectors


@dataclass(frozen=True, slots=True)
class Remembered:
    question: str
    answer: str
    citations: list[dict[str, Any]]
    similarity: float


class QaMemory:
    def __init__(self, threshold: float = 0.92, ttl_s: float = 3600.0, max_entries: int = 1000) -> None:
        self.threshold = threshold
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: list[tuple[Hashable, np.ndarray, float, Remembered]] = []

    def recall(self, key: Hashable, vector: Vectors) -> Remembered | None:
        now = time.monotonic()
        self._entries = [e for e in self._entries if e[2] > now]
        best: tuple[float, Remembered] | None = None
        query = np.asarray(vector, dtype=np.float32).ravel()
        for entry_key, stored, _, remembered in self._entries:
            if entry_key != key:
                continue
            similarity = float(stored @ query / (np.linalg.norm(stored) * np.linalg.norm(query) or 1.0))
            if similarity >= self.threshold and (best is None or similarity > best[0]):
                best = (similarity, remembered)
        if best is None:
            return None
        similarity, remembered = best
        return Remembered(remembered.question, remembered.answer, remembered.citations, round(similarity, 4))

    def remember(
        self, key: Hashable, vector: Vectors, question: str, answer: str, citations: list[dict[str, Any]]
    ) -> None:
        stored = np.asarray(vector, dtype=np.float32).ravel()
        self._entries.append((key, stored, time.monotonic() + self.ttl_s, Remembered(question, answer, citations, 1.0)))
        del self._entries[: max(0, len(self._entries) - self.max_entries)]

    def __len__(self) -> int:
        return len(self._entries)
