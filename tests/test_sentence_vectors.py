"""Answers read the vectors of their quotable sentences that ingestion kept, and say what they said when they embedded
those sentences themselves."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import RetrievalSettings, Settings
from api.tools.object_store import LocalObjectStore, S3ObjectStore
from api.tools.sentence_vectors import (
    SentenceVectors,
    StoredSentences,
    artifact_key,
    load_sentence_vectors,
    save_sentence_vectors,
)
from tests.servers import moto_s3, s3_bucket

QUESTION = "How much deposit can a landlord ask for?"


async def answer(data_dir: Path) -> tuple[FinalEvent, int, int, bool]:
    """The final event, the sentences found in the artifact and those embedded, and whether a swap reads it again."""
    settings = Settings(data_dir=data_dir, corpus_poll_s=0, retrieval=RetrievalSettings(cache_ttl_s=0))
    async with open_services(settings) as services:
        events = [e async for e in services.orchestrator.stream(QueryRequest(q=QUESTION, session_id="sentences"))]
        embedder = services.orchestrator.deps.retriever.embedder
        assert isinstance(embedder, StoredSentences)
        services.watcher.served = ""  # as if another process had ingested: the version is read and swapped in
        assert await services.watcher.check()
        swapped = services.orchestrator.deps.retriever.embedder
        assert isinstance(swapped, StoredSentences)
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final, embedder.found, embedder.embedded, swapped.stored is not None


async def test_an_answer_reads_its_sentences_from_ingestion_and_says_the_same(
    private_data_dir: Path, tmp_path: Path
) -> None:
    kept, found, embedded, swapped = await answer(private_data_dir)
    assert not kept.abstained and kept.citations[0].section_id == "sample/act/2024/3#s3"
    assert found > 0 and embedded == 0 and swapped

    # The same data dir without the artifact (ingested before it existed, or with sentence_vectors off).
    bare = tmp_path / "bare"
    shutil.copytree(private_data_dir, bare, ignore=shutil.ignore_patterns("LOCK"))
    for artifact in (bare / "objects" / "indexes").glob("sentences-*.npz"):
        artifact.unlink()
    alone, found, embedded, swapped = await answer(bare)
    assert found == 0 and embedded > 0 and not swapped
    assert alone.answer == kept.answer
    assert [(c.section_id, c.quote) for c in alone.citations] == [(c.section_id, c.quote) for c in kept.citations]


async def test_the_vectors_are_read_in_place_from_a_folder_or_a_fetched_copy(tmp_path: Path) -> None:
    """A replica maps the artifact rather than copying it into its own memory (gigabytes at a million chunks): in
    place where the store is a folder here, else from a temporary file holding what it fetched."""
    texts = [f"Sentence number {n} of the provision." for n in range(300)]
    vectors = np.random.default_rng(3).standard_normal((len(texts), 16)).astype(np.float32)
    built = SentenceVectors.build("model:16", texts, vectors)
    local = LocalObjectStore(tmp_path)
    await save_sentence_vectors(local, built)
    with moto_s3() as endpoint:
        remote = S3ObjectStore(s3_bucket(endpoint, "gweta"))
        await save_sentence_vectors(remote, built)
        fetched = await load_sentence_vectors(remote, "model:16")
    here = await load_sentence_vectors(local, "model:16")
    for loaded in (here, fetched):
        assert loaded is not None and len(loaded) == len(texts)
        assert not loaded.vectors.flags.owndata and not loaded.vectors.flags.writeable  # a view of the mapping
        found = loaded.find([texts[7], "A sentence no document holds.", texts[299]])
        assert found[1] is None
        assert np.array_equal(found[0], vectors[7]) and np.array_equal(found[2], vectors[299])
    assert await load_sentence_vectors(local, "other:16") is None


async def test_a_damaged_artifact_is_left_unread_and_sentences_are_embedded_as_needed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = LocalObjectStore(tmp_path)
    built = SentenceVectors.build("model:4", ["One.", "Two."], np.eye(2, 4, dtype=np.float32))
    data = built.to_bytes()
    await store.put_bytes(artifact_key("model:4"), data[: len(data) // 2])  # cut short, as a failed copy would be
    assert await load_sentence_vectors(store, "model:4") is None
    assert "could not be read" in caplog.text
