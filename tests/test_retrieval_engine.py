"""The retrieval engine beyond search: date and tenant filters inside both backends, the result cache, and the
small-to-big context bundle."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.services import Services, open_services
from api.settings import IngestionSettings, RetrievalSettings, Settings
from api.tools.context import ContextBundler, merge_spans
from api.tools.retrieval import HybridRetriever
from api.tools.vector_store import SearchFilters, date_number
from tests.conftest import SAMPLE_CORPUS, ingest_into

PRIVATE_ACT = """<!-- id: acme/policy/2025/1; jurisdiction: SAMPLE -->
# Acme Staff Deposit Policy, 2025

1. Staff housing deposit
Acme Ltd pays the housing deposit of any employee who relocates, up to one month of rent, from the relocation fund.
"""


@pytest.fixture
async def services(private_data_dir: Path) -> AsyncIterator[Services]:
    async with open_services(Settings(data_dir=private_data_dir)) as s:
        yield s


def test_dates_compare_as_days_and_bare_years_cover_the_year() -> None:
    assert date_number("2022-05-27") == 20220527
    assert date_number("2022") == 20220101 and date_number("2022", end=True) == 20221231
    assert date_number("2022-02", end=True) == 20220231 > date_number("2022-02-28")
    assert date_number("") == 0


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
async def test_date_range_is_applied_inside_each_backend(services: Services, mode: str) -> None:
    retriever = services.orchestrator.deps.retriever
    older = SearchFilters(date_to="2022")
    # Words every Act has, so each backend has candidates on both sides of the date line.
    result = await retriever.retrieve("within how many days after notice", top_k=20, mode=mode, filters=older)  # type: ignore[arg-type]
    dated_2022_or_before = {"sample/act/2022/11", "sample/act/2021/5", "sample/act/2022/9"}
    assert result.hits and {h.chunk.doc_key for h in result.hits} <= dated_2022_or_before
    for stage in ("dense", "bm25"):
        for chunk_id, _ in result.stages.get(stage, []):
            assert chunk_id.startswith(("sample/act/2022/11#", "sample/act/2021/5#", "sample/act/2022/9#"))
    newer = await retriever.retrieve("days notice", top_k=20, mode=mode, filters=SearchFilters(date_from="2024-01"))  # type: ignore[arg-type]
    assert newer.hits and {h.chunk.doc_key for h in newer.hits} == {"sample/act/2024/3"}


async def test_tenant_documents_are_seen_only_by_their_tenant(tmp_path: Path) -> None:
    private = tmp_path / "acme"
    private.mkdir()
    (private / "staff-deposit-policy.md").write_text(PRIVATE_ACT)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, SAMPLE_CORPUS)
    owned = settings.model_copy(update={"ingestion": IngestionSettings(tenant="acme")})
    report = await ingest_into(owned, private)
    assert report.count("ingested") == 1
    question = "Who pays the housing deposit when an employee relocates?"
    async with open_services(settings) as services:
        corpus, retriever = services.corpus, services.orchestrator.deps.retriever
        assert corpus.tenants == {"", "acme"}
        for tenant, sees_private in (("", False), ("other", False), ("acme", True)):
            scope = SearchFilters.from_request({}, corpus.tenant_scope(tenant))
            for mode in ("hybrid", "dense", "bm25"):
                result = await retriever.retrieve(question, top_k=20, mode=mode, filters=scope)  # type: ignore[arg-type]
                seen = {cid for stage in result.stages.values() for cid, _ in stage}
                assert any(cid.startswith("acme/policy/2025/1#") for cid in seen) is sees_private, (tenant, mode)


async def test_a_repeated_query_is_served_from_the_cache(services: Services) -> None:
    retriever = services.orchestrator.deps.retriever
    first = await retriever.retrieve("How much deposit can a landlord ask for?")
    again = await retriever.retrieve("  how much deposit can a LANDLORD ask for ")
    assert first.cache_hits["retrieval"] == 0 and again.cache_hits["retrieval"] == 1
    assert set(again.timings) == {"cache"} and again.cache_similarity == 1.0
    assert [h.chunk.chunk_id for h in again.hits] == [h.chunk.chunk_id for h in first.hits]
    # Semantic: a rewording whose embedding is this close (cosine 0.99 with MiniLM) reuses the results...
    reworded = await retriever.retrieve("How much of a deposit can the landlord ask for?")
    assert reworded.cache_hits["retrieval"] == 1 and 0.95 <= reworded.cache_similarity < 1.0
    assert [h.chunk.chunk_id for h in reworded.hits] == [h.chunk.chunk_id for h in first.hits]
    # ...a different question about the same thing (cosine 0.90) does not.
    assert (await retriever.retrieve("What deposit may a landlord require?")).cache_hits["retrieval"] == 0
    filtered = await retriever.retrieve(
        "How much deposit can a landlord ask for?", filters=SearchFilters(date_to="2022")
    )
    assert filtered.cache_hits["retrieval"] == 0  # filters are part of the key
    uncached = HybridRetriever(
        retriever.corpus, retriever.embedder, retriever.vectors, retriever.lexical, RetrievalSettings(cache_ttl_s=0)
    )
    for _ in range(2):
        assert (await uncached.retrieve("deposit")).cache_hits["retrieval"] == 0


def test_spans_merge_when_they_overlap_or_touch() -> None:
    assert merge_spans([(10, 20), (0, 5), (18, 30), (30, 31), (40, 41)]) == [(0, 5), (10, 31), (40, 41)]


async def test_short_provisions_go_in_whole_within_the_budget(services: Services) -> None:
    deps = services.orchestrator.deps
    result = await deps.retriever.retrieve("How much deposit can a landlord ask for?")
    bundle = await deps.bundler.bundle(result.hits)
    assert bundle.pieces and bundle.tokens <= bundle.budget
    assert [p.index for p in bundle.pieces] == list(range(1, len(bundle.pieces) + 1))
    assert len({p.chunk.section_id for p in bundle.pieces}) == len(bundle.pieces)  # one piece per provision
    first = bundle.pieces[0]
    document = await deps.corpus.document(first.chunk.doc_key)
    section = document.section(first.chunk.section_id) if document else None
    assert first.whole_provision and section is not None and first.text == section.text
    again = await deps.bundler.bundle(result.hits)
    assert again.fetches == 0  # parents come from the fetch cache


async def test_long_provisions_contribute_merged_verbatim_spans(services: Services) -> None:
    deps = services.orchestrator.deps
    result = await deps.retriever.retrieve("notice of a rent increase", top_k=10)
    tight = ContextBundler(deps.corpus, deps.retriever.embedder.count_tokens, budget_tokens=400, provision_tokens=60)
    bundle = await tight.bundle(result.hits)
    assert bundle.tokens <= 400 and bundle.left_out
    assert any(not p.whole_provision for p in bundle.pieces)
    for piece in bundle.pieces:
        document = await deps.corpus.document(piece.chunk.doc_key)
        section = document.section(piece.chunk.section_id) if document else None
        assert section is not None
        if not piece.whole_provision:
            assert piece.chunk.chunk_id in piece.chunk_ids
            assert all(span in section.text for span in piece.text.split("\n…\n"))  # verbatim, cut at chunk edges


async def test_query_expansion_adds_terms_the_top_chunks_share(services: Services) -> None:
    retriever = services.orchestrator.deps.retriever
    plain = await retriever.retrieve("landlord deposit", mode="bm25", top_k=10)
    expanded = await retriever.retrieve("landlord deposit", mode="bm25", top_k=10, expand=True)
    assert plain.expansion == [] and expanded.expansion
    assert not {"landlord", "deposit"} & set(expanded.expansion)
    assert expanded.stages["bm25_unexpanded"] == plain.stages["bm25"]
    assert expanded.hits[0].chunk.doc_key == "sample/act/2024/3"  # still about the tenancy deposit
