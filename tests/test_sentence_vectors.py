"""Answers read the vectors of their quotable sentences that ingestion kept, and say what they said when they embedded
those sentences themselves."""

from __future__ import annotations

import shutil
from pathlib import Path

from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import RetrievalSettings, Settings
from api.tools.sentence_vectors import StoredSentences

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
