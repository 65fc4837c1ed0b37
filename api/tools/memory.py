"""QA memory: verified answers kept for a while and served again for a near-identical question.

A question matches an earlier one when their embeddings' cosine similarity reaches the threshold (0.92 by default)
and everything else that shapes an answer is equal: the corpus version, the filters and the caller's tenant. Only
verified, cited, non-abstaining answers are stored. The memory lives in the process (a multi-instance deployment
would put it beside the checkpoints).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from api.tools.cache import SemanticCache
from api.tools.embeddings import Vectors


@dataclass(frozen=True, slots=True)
class Remembered:
    question: str
    answer: str
    citations: list[dict[str, Any]]
    similarity: float


class QaMemory:
    """Verified answers by question, looked up by meaning through the same semantic cache retrieval uses."""

    def __init__(
        self,
        threshold: float = 0.92,
        ttl_s: float = 3600.0,
        max_entries: int = 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._answers: SemanticCache[Remembered] = SemanticCache(ttl_s, max_entries, threshold, clock)

    def recall(self, key: Hashable, vector: Vectors) -> Remembered | None:
        found = self._answers.get_similar(key, np.asarray(vector, dtype=np.float32).ravel())
        if found is None:
            return None
        remembered, similarity = found
        return Remembered(remembered.question, remembered.answer, remembered.citations, round(similarity, 4))

    def remember(
        self, key: Hashable, vector: Vectors, question: str, answer: str, citations: list[dict[str, Any]]
    ) -> None:
        stored = np.asarray(vector, dtype=np.float32).ravel()
        self._answers.put(key, question, stored, Remembered(question, answer, citations, 1.0))

    def __len__(self) -> int:
        return len(self._answers)
