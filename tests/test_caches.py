"""The caches on the request path: bounded in entries and age, and counted per request. Vectors come from the real
packaged embedding model; time from a clock the test moves, not from sleeping."""

from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from api.settings import EmbeddingSettings
from api.tools.cache import SemanticCache, TTLCache
from api.tools.embeddings import Embedder, build_embedder
from api.tools.memory import QaMemory


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as executor:
        yield executor


@pytest.fixture(scope="module")
async def embedder(pool: ThreadPoolExecutor) -> AsyncIterator[Embedder]:
    yield build_embedder(EmbeddingSettings(), pool)


async def vector(embedder: Embedder, text: str) -> np.ndarray:
    return np.asarray(await embedder.embed_query(text), dtype=np.float32).ravel()


CITATIONS: list[dict[str, Any]] = [{"index": 1, "chunk_id": "sample/act/2024/3#s3/c0"}]
DEPOSIT = "How much deposit can a landlord ask for?"
REWORDED = "How much of a deposit may a landlord ask for?"
UNRELATED = "How long is maternity leave?"


def test_ttl_cache_expires_and_evicts_the_least_recently_used() -> None:
    clock, evicted = Clock(), []
    cache: TTLCache[int] = TTLCache(10.0, 2, on_evict=evicted.append, clock=clock)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert (cache.get("b"), len(cache), evicted) == (None, 2, ["b"])
    clock.now += 10.5
    assert cache.get("a") is None and evicted == ["b", "a"]
    cache.put("d", 4)  # writing sweeps the expired entry at the cold end too
    assert len(cache) == 1 and evicted == ["b", "a", "c"]


async def test_semantic_cache_hits_by_text_and_by_meaning_and_misses_the_unrelated(embedder: Embedder) -> None:
    cache: SemanticCache[str] = SemanticCache(60.0, 10, threshold=0.9)
    cache.put("group", DEPOSIT, await vector(embedder, DEPOSIT), "deposit results")
    assert cache.get("group", DEPOSIT) == "deposit results"
    similar = cache.get_similar("group", await vector(embedder, REWORDED))
    assert similar is not None and similar[0] == "deposit results" and 0.9 <= similar[1] < 1.0
    assert cache.get_similar("group", await vector(embedder, UNRELATED)) is None
    assert cache.get_similar("other filters", await vector(embedder, DEPOSIT)) is None  # the group must match


async def test_semantic_cache_drops_vectors_and_groups_with_their_entries(embedder: Embedder) -> None:
    clock = Clock()
    cache: SemanticCache[int] = SemanticCache(30.0, 3, threshold=0.9, clock=clock)
    deposit = await vector(embedder, DEPOSIT)
    for n in range(50):  # fifty filter sets, as callers choose them: only the last three are kept
        cache.put(("filters", n), DEPOSIT, deposit, n)
    assert len(cache) == 3 and cache.groups == 3 and cache.vectors == 3
    assert cache.get_similar(("filters", 0), deposit) is None
    assert cache.get_similar(("filters", 49), deposit) == (49, pytest.approx(1.0, abs=1e-5))
    clock.now += 31
    assert cache.get_similar(("filters", 49), deposit) is None  # expired: gone, vector and group with it
    assert cache.groups == 2
    cache.put("fresh", UNRELATED, await vector(embedder, UNRELATED), 1)
    assert len(cache) == 1 and cache.groups == 1 and cache.vectors == 1


async def test_qa_memory_recalls_a_near_identical_question_until_its_ttl(embedder: Embedder) -> None:
    clock = Clock()
    memory = QaMemory(threshold=0.9, ttl_s=60.0, max_entries=10, clock=clock)
    key = ("corpus-v1", (), "")
    memory.remember(key, await embedder.embed_query(DEPOSIT), DEPOSIT, "Two months' rent [1].", CITATIONS)
    recalled = memory.recall(key, await embedder.embed_query(REWORDED))
    assert recalled is not None and recalled.answer == "Two months' rent [1]." and recalled.citations == CITATIONS
    assert recalled.question == DEPOSIT and 0.9 <= recalled.similarity < 1.0
    assert memory.recall(key, await embedder.embed_query(UNRELATED)) is None  # a miss
    clock.now += 61
    assert memory.recall(key, await embedder.embed_query(DEPOSIT)) is None and len(memory) == 0


async def test_qa_memory_never_serves_another_corpus_version_and_evicts_the_oldest(embedder: Embedder) -> None:
    memory = QaMemory(threshold=0.9, ttl_s=600.0, max_entries=2)
    deposit = await embedder.embed_query(DEPOSIT)
    memory.remember(("v1", (), ""), deposit, DEPOSIT, "old answer [1]", CITATIONS)
    assert memory.recall(("v2", (), ""), deposit) is None  # re-ingested corpus: a new version, nothing recalled
    assert memory.recall(("v1", (), "acme"), deposit) is None  # another tenant
    memory.remember(("v2", (), ""), deposit, DEPOSIT, "new answer [1]", CITATIONS)
    memory.remember(("v3", (), ""), deposit, DEPOSIT, "newer answer [1]", CITATIONS)
    assert len(memory) == 2 and memory.recall(("v1", (), ""), deposit) is None  # the oldest was evicted
    found = memory.recall(("v3", (), ""), deposit)
    assert found is not None and found.answer == "newer answer [1]"
