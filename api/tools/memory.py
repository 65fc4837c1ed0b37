"""QA memory: verified answers kept for a while and served again for a near-identical question.

A question matches an earlier one when their embeddings' cosine similarity reaches the threshold (0.92 by default)
and everything else that shapes an answer is equal: the corpus version, the filters and the caller's tenant. Only
verified, cited, non-abstaining answers are stored.

``AnswerMemory`` is the protocol the query graph uses (``arecall``/``aremember``). ``QaMemory`` keeps answers in this
process (the embedded default; its synchronous ``recall``/``remember`` stay for callers that have no event loop);
``FirestoreQaMemory`` (``api.tools.firestore_memory``) keeps them in Firestore so every replica serves them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from api.errors import ConfigError
from api.tools.cache import SemanticCache
from api.tools.embeddings import Vectors

if TYPE_CHECKING:
    from google.cloud.firestore import AsyncClient

    from api.settings import Settings


@dataclass(frozen=True, slots=True)
class Remembered:
    question: str
    answer: str
    citations: list[dict[str, Any]]
    similarity: float


class AnswerMemory(Protocol):
    """Verified answers by question: ``key`` must match exactly, the question's vector by meaning."""

    async def arecall(self, key: Hashable, vector: Vectors) -> Remembered | None: ...

    async def aremember(
        self, key: Hashable, vector: Vectors, question: str, answer: str, citations: list[dict[str, Any]]
    ) -> None: ...


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

    async def arecall(self, key: Hashable, vector: Vectors) -> Remembered | None:
        return self.recall(key, vector)

    async def aremember(
        self, key: Hashable, vector: Vectors, question: str, answer: str, citations: list[dict[str, Any]]
    ) -> None:
        self.remember(key, vector, question, answer, citations)

    def __len__(self) -> int:
        return len(self._answers)


def build_memory(settings: Settings, firestore: AsyncClient | None = None) -> AnswerMemory:
    """The configured QA memory: this process's, or Firestore's (shared by every replica)."""
    threshold, ttl_s = settings.llm.memory_similarity, settings.llm.memory_ttl_s
    match settings.memory.backend:
        case "process":
            return QaMemory(threshold, ttl_s, settings.memory.max_entries)
        case "firestore":
            from api.tools.firestore_memory import FirestoreQaMemory

            if firestore is None:
                raise ConfigError("memory.backend=firestore needs the service's Firestore client")
            cfg = settings.firestore_settings
            return FirestoreQaMemory(
                firestore, threshold, ttl_s, cfg.collection_prefix, settings.memory.scan_limit, cfg.timeout_s
            )
