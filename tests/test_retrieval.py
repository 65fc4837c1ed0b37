import asyncio
import gc
import shutil
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.errors import BackendError
from api.main import create_app
from api.services import Services, open_services
from api.settings import RetrievalSettings, Settings
from api.tools.retrieval import Expansions, HybridRetriever, reciprocal_rank_fusion
from api.tools.vector_store import Hit, MilvusVectorStore, SearchFilters
from tests.servers import LiveServer


@pytest.fixture
async def services(private_data_dir: Path) -> AsyncIterator[Services]:
    async with open_services(Settings(data_dir=private_data_dir)) as s:
        yield s


def test_rrf_rewards_agreement_and_counts_ranks_from_one() -> None:
    fused = reciprocal_rank_fusion(
        {"dense": [Hit("a", 0.9), Hit("b", 0.8)], "bm25": [Hit("b", 12.0), Hit("c", 3.0)]}, k=60
    )
    assert [cid for cid, _, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0][2] == {"dense": 2, "bm25": 1}


def test_rrf_weights_change_the_order() -> None:
    fused = reciprocal_rank_fusion({"dense": [Hit("a", 1)], "bm25": [Hit("b", 1)]}, weights={"bm25": 2.0})
    assert fused[0][0] == "b"


@pytest.mark.parametrize(
    ("question", "section_id"),
    [
        ("How much deposit can a landlord ask for?", "sample/act/2024/3#s3"),
        ("Can my landlord switch off the electricity to force me out?", "sample/act/2024/3#s6"),
        ("How many days of maternity leave do I get?", "sample/act/2023/7#s5"),
        ("How long do I have to cancel a contract from direct marketing?", "sample/act/2022/11#s4"),
        ("How quickly must a data breach be reported to the authority?", "sample/act/2021/5#s5"),
        ("section 4 rent increase notice", "sample/act/2024/3#s4"),
    ],
)
async def test_hybrid_retrieval_finds_the_expected_section(services: Services, question: str, section_id: str) -> None:
    result = await services.orchestrator.deps.retriever.retrieve(question)
    assert section_id in [h.chunk.section_id for h in result.hits[:3]]
    assert not result.warnings
    assert {"retrieve_dense", "retrieve_bm25", "fuse"} <= set(result.timings)


async def test_a_server_keeps_what_it_loaded_out_of_the_collectors_reach(services: Services, tmp_path: Path) -> None:
    """A full garbage collection walks every object it tracks while the event loop waits (0.4 s over the 385 Acts):
    a serving process freezes BM25's lists (chunk ids, vocabulary) once loaded, and hands them back when it stops;
    the CLI's services (opened many times in one process by the tests) are left to the collector. BM25's tokens are
    arrays and the chunks are read from their table as answers need them (``tests/test_chunk_table.py``): the
    collector walks neither."""

    def walked(loaded: Services) -> bool:
        tracked = {id(o) for o in gc.get_objects()}
        lexical = loaded.orchestrator.deps.retriever.lexical
        lists = [lexical.chunk_ids, lexical.tokens.vocabulary]
        assert all(lists) and not gc.is_tracked(lexical.tokens.ids)
        return any(id(t) in tracked for t in lists)

    assert walked(services)
    shutil.copytree(services.settings.data_dir, tmp_path / "served", ignore=shutil.ignore_patterns("LOCK"))
    app = create_app(Settings(data_dir=tmp_path / "served"))
    with LiveServer(app):
        served: Services = app.state.services
        assert not walked(served)
    assert walked(served)


async def test_a_server_lets_go_of_a_corpus_version_once_another_is_swapped_in(
    private_data_dir: Path, tmp_path: Path
) -> None:
    """A new corpus version (another process ingested) replaces the one loaded at start-up: nothing keeps the old
    corpus and its BM25 index alive beside it (they stayed, frozen, for the server's life: 250 MB a process over the
    385 Acts)."""
    shutil.copytree(private_data_dir, tmp_path / "served", ignore=shutil.ignore_patterns("LOCK"))
    async with open_services(Settings(data_dir=tmp_path / "served", corpus_poll_s=0), serving=True) as loaded:
        first, searched_with = weakref.ref(loaded.corpus), weakref.ref(loaded.orchestrator.deps.retriever)
        loaded.watcher.served = ""  # as if the stored version were new: it is read and swapped in again
        assert await loaded.watcher.check()
        assert loaded.corpus is not first()
        assert first() is None and searched_with() is None
        result = await loaded.orchestrator.deps.retriever.retrieve("How much deposit can a landlord ask for?")
        assert result.hits[0].chunk.section_id == "sample/act/2024/3#s3"


async def test_both_sources_contribute_to_the_fused_ranking(services: Services) -> None:
    result = await services.orchestrator.deps.retriever.retrieve("deposit interest-bearing account bank")
    assert any({"dense", "bm25"} <= set(h.ranks) for h in result.hits)


async def test_a_failing_dense_backend_leaves_bm25_results_with_a_warning(services: Services, tmp_path: Path) -> None:
    retriever = services.orchestrator.deps.retriever
    # A real Milvus Lite store whose collection is dropped from under it: every search fails inside Milvus.
    wrong = MilvusVectorStore(str(tmp_path / "other.db"), "gweta_chunks", 384)
    wrong.client.drop_collection("gweta_chunks")
    try:
        degraded = HybridRetriever(retriever.corpus, retriever.embedder, wrong, retriever.lexical, RetrievalSettings())
        result = await degraded.retrieve("deposit interest-bearing account")
    finally:
        await wrong.close()
    assert [code for code, _ in result.warnings] == ["dense_unavailable"]
    assert result.hits and all(set(h.ranks) == {"bm25"} for h in result.hits)
    assert result.hits[0].chunk.section_id == "sample/act/2024/3#s3"


async def test_when_every_backend_times_out_retrieval_says_so(services: Services) -> None:
    retriever = services.orchestrator.deps.retriever
    slow = HybridRetriever(
        retriever.corpus, retriever.embedder, retriever.vectors, retriever.lexical, RetrievalSettings(timeout_s=1e-9)
    )
    result = await slow.retrieve("deposit")
    codes = [code for code, _ in result.warnings]
    assert result.hits == [] and codes[-1] == "retrieval_unavailable" and "dense_unavailable" in codes


async def test_retrieve_many_fuses_expansions_with_the_question_counting_double(services: Services) -> None:
    retriever = services.orchestrator.deps.retriever
    question = "Can my landlord switch off the electricity to force me out?"
    phrasing = "cutting off water or power to evict a tenant"
    passage = "A landlord shall not interrupt the supply of electricity to the premises."
    alone = await retriever.retrieve_many(question)
    assert alone.expansions == 0 and alone.hits == (await retriever.retrieve(question)).hits

    async def expansions() -> Expansions:
        await asyncio.sleep(0.01)  # arrives while the question's own search runs, as a model's answer would
        return Expansions([phrasing], [passage])

    result = await retriever.retrieve_many(question, expansions())
    assert result.expansions == 2 and not result.warnings
    assert result.hits[0].chunk.section_id == "sample/act/2024/3#s6"
    searched = [await retriever.retrieve(question), await retriever.retrieve(phrasing),
                await retriever.retrieve(passage, mode="dense")]  # fmt: skip
    rankings = {f"q{i}": [Hit(h.chunk.chunk_id, h.score) for h in r.hits] for i, r in enumerate(searched)}
    expected = reciprocal_rank_fusion(rankings, retriever.cfg.rrf_k, {"q0": 2.0})
    assert [(h.chunk.chunk_id, h.score, dict(h.ranks)) for h in result.hits] == expected
    assert len(result.hits) > retriever.cfg.top_k  # every fused chunk: the caller drops what it has and cuts


async def test_retrieve_many_raises_when_no_backend_answers_and_cancels_the_expansions(services: Services) -> None:
    retriever = services.orchestrator.deps.retriever
    slow = HybridRetriever(
        retriever.corpus, retriever.embedder, retriever.vectors, retriever.lexical, RetrievalSettings(timeout_s=1e-9)
    )
    with pytest.raises(BackendError, match="unavailable"):
        await slow.retrieve_many("deposit")
    never: asyncio.Future[Expansions] = asyncio.get_running_loop().create_future()  # a model that never answers
    with pytest.raises(BackendError):
        await slow.retrieve_many("deposit", never)
    assert never.cancelled()


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
async def test_filters_are_applied_inside_each_backend(services: Services, mode: str) -> None:
    retriever = services.orchestrator.deps.retriever
    only_tenancy = SearchFilters(doc_keys=("sample/act/2024/3",))
    result = await retriever.retrieve("notice", top_k=20, mode=mode, filters=only_tenancy)  # type: ignore[arg-type]
    assert result.hits and all(h.chunk.doc_key == "sample/act/2024/3" for h in result.hits)
    for stage in ("dense", "bm25"):
        for chunk_id, _ in result.stages.get(stage, []):
            assert chunk_id.startswith("sample/act/2024/3#")  # filtered in the search, not after it
    elsewhere = await retriever.retrieve("notice", mode=mode, filters=SearchFilters(jurisdiction="ZW"))  # type: ignore[arg-type]
    assert elsewhere.hits == []
