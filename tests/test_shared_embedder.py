"""The query path's shared embedder: vectors cached across requests, concurrent texts embedded in one batch."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from api.tools.embeddings import SentenceTransformerEmbedder, SharedEmbedder, load_sentence_transformer, per_request

TEXTS = [
    "A landlord shall not require a deposit that exceeds the rent payable for two months.",
    "An employee is entitled to annual leave on full pay.",
    "Personal information may not be processed without consent.",
    "How much deposit can a landlord ask for?",
]


@pytest.fixture(scope="module")
def minilm() -> Iterator[SentenceTransformerEmbedder]:
    with ThreadPoolExecutor(2) as pool:
        yield SentenceTransformerEmbedder(load_sentence_transformer(), pool)


async def test_vectors_match_the_model_and_repeat_texts_are_not_embedded_again(
    minilm: SentenceTransformerEmbedder,
) -> None:
    shared = SharedEmbedder(minilm, max_entries=100, max_wait_s=0.001)
    direct = await minilm.embed_documents(TEXTS)
    first = await shared.embed_documents([*TEXTS, TEXTS[0]])
    assert first.shape == (5, minilm.dimensions)
    np.testing.assert_allclose(first[:4], direct, atol=1e-5)
    np.testing.assert_array_equal(first[4], first[0])
    assert (shared.batches, shared.misses) == (1, 4)
    again = await shared.embed_documents(TEXTS[1:3])
    np.testing.assert_array_equal(again, first[1:3])
    assert shared.batches == 1 and shared.hits == 2
    np.testing.assert_array_equal(await shared.embed_query(TEXTS[3]), first[3])


async def test_concurrent_callers_share_one_model_call(minilm: SentenceTransformerEmbedder) -> None:
    shared = SharedEmbedder(minilm, max_entries=100, max_wait_s=0.05)
    vectors = await asyncio.gather(*(shared.embed_query(t) for t in [*TEXTS, *TEXTS]))
    assert shared.batches == 1 and shared.misses == 8  # 8 asks, 4 distinct texts, one batch
    direct = await minilm.embed_documents(TEXTS)
    np.testing.assert_allclose(np.stack(vectors[:4]), direct, atol=1e-5)


async def test_a_full_batch_goes_without_waiting_and_the_cache_stays_bounded(
    minilm: SentenceTransformerEmbedder,
) -> None:
    shared = SharedEmbedder(minilm, max_entries=3, max_wait_s=30.0, max_batch=2)
    # With a 30 s wait, only a full batch (2 texts) can be sent: the call returns quickly or not at all.
    await asyncio.wait_for(shared.embed_documents(TEXTS), 20)
    assert shared.batches == 2
    assert len(shared._vectors) == 3  # the least recently used went
    await shared.embed_documents(TEXTS[3:])
    assert len(shared._vectors) == 3 and TEXTS[3] in shared._vectors


async def test_a_caller_that_goes_away_does_not_cancel_the_others(minilm: SentenceTransformerEmbedder) -> None:
    shared = SharedEmbedder(minilm, max_entries=100, max_wait_s=0.05)
    leaving = asyncio.create_task(shared.embed_query(TEXTS[0]))
    staying = asyncio.create_task(shared.embed_query(TEXTS[0]))
    await asyncio.sleep(0.01)
    leaving.cancel()
    vector = await staying
    assert vector.shape == (minilm.dimensions,) and leaving.cancelled()


async def test_questions_are_embedded_once_per_request_and_kept_across_requests_only_when_asked(
    minilm: SentenceTransformerEmbedder,
) -> None:
    question, sentences = TEXTS[3], TEXTS[:3]

    async def one_request(shared: SharedEmbedder) -> None:
        # As the steps of one answer do: the search, the answerer and the checks each ask for the question.
        per_request()
        vectors = await asyncio.gather(*(shared.embed_query(question) for _ in range(3)))
        await asyncio.gather(shared.embed_query(question), shared.embed_documents(sentences))
        np.testing.assert_array_equal(vectors[0], vectors[2])

    not_kept = SharedEmbedder(minilm, max_entries=100, max_wait_s=0.001, query_entries=0)
    for _ in range(3):
        await asyncio.create_task(one_request(not_kept))  # a task per request, as the service runs them
    # Each request embedded its question once (a batch each); the provisions' sentences only the first time.
    assert not_kept.batches == 3 + 1 and question not in not_kept._vectors and not not_kept._queries
    assert set(not_kept._vectors) == set(sentences)

    kept = SharedEmbedder(minilm, max_entries=100, max_wait_s=0.001, query_entries=1)
    for _ in range(3):
        await asyncio.create_task(one_request(kept))
    assert kept.batches == 1 + 1 and list(kept._queries) == [question]
    await kept.embed_query(TEXTS[0] + " Again.")
    assert list(kept._queries) == [TEXTS[0] + " Again."]  # bounded: the older question went


async def test_texts_that_arrive_while_the_model_is_busy_go_together(minilm: SentenceTransformerEmbedder) -> None:
    shared = SharedEmbedder(minilm, max_entries=1000, max_wait_s=0.001, max_batch=256, max_in_flight=1)
    long_texts = [f"{TEXTS[0]} {TEXTS[1]} {TEXTS[2]} (paragraph {i})" for i in range(200)]
    busy = asyncio.create_task(shared.embed_documents(long_texts))  # a batch that keeps the model busy a while
    await asyncio.sleep(0.02)
    assert shared.batches == 1 and not busy.done()
    later = []
    for i in range(5):  # one at a time, each long after the 1 ms wait: without the bound, five batches of one
        later.append(asyncio.create_task(shared.embed_query(f"{TEXTS[3]} ({i})")))
        await asyncio.sleep(0.01)
    assert not busy.done(), "the first batch ended too soon for this test to say anything"
    vectors = await asyncio.gather(*later)
    await busy
    assert shared.batches == 2
    direct = await minilm.embed_documents([f"{TEXTS[3]} ({i})" for i in range(5)])
    np.testing.assert_allclose(np.stack(vectors), direct, atol=1e-5)


async def test_a_question_goes_before_provision_sentences_already_waiting(minilm: SentenceTransformerEmbedder) -> None:
    shared = SharedEmbedder(minilm, max_entries=1000, max_wait_s=0.001, max_batch=8, max_in_flight=1)
    sentences = [f"{TEXTS[0]} {TEXTS[1]} {TEXTS[2]} (paragraph {i})" for i in range(48)]  # six batches
    provisions = asyncio.create_task(shared.embed_documents(sentences))
    await asyncio.sleep(0.01)
    assert shared.batches == 1
    await shared.embed_query(TEXTS[3])  # in the second batch, not the seventh
    assert not provisions.done() and shared.batches == 2
    await provisions
    assert shared.batches == 7
