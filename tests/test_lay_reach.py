"""Lay questions reaching their provision: the provisions' headings ranked by meaning and fused into the hybrid
search, every provision's heading searched as a source of candidates, and a ``related`` reply that shows the closest
distinct provisions (issue 41)."""

from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from api.composer.related import related_quotes, related_text
from api.schemas.documents import Chunk
from api.services import Services, open_services
from api.settings import EmbeddingSettings, RetrievalSettings, Settings
from api.text.units import heading_text
from api.tools.chunk_table import ChunkTable
from api.tools.embeddings import Embedder, build_embedder
from api.tools.retrieval import HeadingIndex, Retrieved, provision_headings, with_headings
from api.tools.vector_store import SearchFilters

# Nothing in the question says "evict" or "court order"; its words ("changed the locks", "my stuff") are closer to the
# tenancy Act's deposit and rent provisions. The heading "Eviction only by court order" is what it is about.
LOCKED_OUT = "The landlord changed the locks and threw my stuff out on the street."
EVICTION = "sample/act/2024/3#s6"
# "leave" pulls the employment Act's annual leave provision first by its words; the question is a notice to vacate.
TOLD_TO_GO = "They gave me one day to pack up and leave the flat."
NOTICE_TO_VACATE = "sample/act/2024/3#s5"


@pytest.fixture
async def services(private_data_dir: Path) -> AsyncIterator[Services]:
    async with open_services(Settings(data_dir=private_data_dir, retrieval=RetrievalSettings(cache_ttl_s=0))) as s:
        yield s


@pytest.mark.parametrize(("question", "section"), [(LOCKED_OUT, EVICTION), (TOLD_TO_GO, NOTICE_TO_VACATE)])
async def test_the_provision_whose_heading_names_the_situation_comes_first(
    services: Services, question: str, section: str
) -> None:
    retriever = services.orchestrator.deps.retriever
    assert retriever.cfg.heading_weight > 0  # on by default
    result = await retriever.retrieve(question)
    assert result.hits[0].chunk.section_id == section, [h.chunk.section_id for h in result.hits]
    assert result.hits[0].ranks["heading"] == 1
    # Without the headings the words and the chunk's meaning alone put another provision first.
    before = [cid for cid, _ in result.stages["before_headings"]]
    assert services.corpus.chunks[before[0]].section_id != section
    assert [cid for cid, _ in result.stages["fused"]][: len(result.hits)] == [h.chunk.chunk_id for h in result.hits]
    assert "headings" in result.timings


async def test_heading_weight_zero_keeps_the_two_searches_order(private_data_dir: Path) -> None:
    settings = Settings(data_dir=private_data_dir, retrieval=RetrievalSettings(cache_ttl_s=0, heading_weight=0))
    async with open_services(settings) as services:
        result = await services.orchestrator.deps.retriever.retrieve(LOCKED_OUT, top_k=10)
    assert [h.chunk.chunk_id for h in result.hits] == [cid for cid, _ in result.stages["fused"]][:10]
    assert "before_headings" not in result.stages and all("heading" not in h.ranks for h in result.hits)
    assert "headings" not in result.timings
    assert result.hits[0].chunk.section_id != EVICTION


def chunk(section: str, ordinal: int, heading: str, text: str) -> Chunk:
    doc = "t/act/2020/1"
    return Chunk(chunk_id=f"{doc}#{section}/c{ordinal}", doc_key=doc, section_id=f"{doc}#{section}",
                 section_number=section.removeprefix("s"), section_heading=heading, title="Tenancy Act, 2020",
                 text=text, ordinal=ordinal)  # fmt: skip


def test_headings_reorder_by_provision_and_a_provision_without_one_keeps_its_score() -> None:
    a0 = chunk("s3", 0, "Deposits", "A landlord may require a deposit of not more than one month's rent.")
    a1 = chunk("s3", 1, "Deposits", "The deposit shall be refunded within fourteen days after the lease ends.")
    b = chunk("s6", 0, "Eviction only by court order", "No tenant shall be evicted except by order of a court.")
    c = chunk("s9", 0, "", "The Minister may make regulations for the better carrying out of this Act.")
    fused = [Retrieved(a0, 0.030, {"dense": 1}), Retrieved(a1, 0.029, {"dense": 2}),
             Retrieved(b, 0.028, {"bm25": 1}), Retrieved(c, 0.027, {"bm25": 2})]  # fmt: skip
    assert heading_text(c) == ""
    ranked = with_headings(fused, [heading_text(b), heading_text(a0)], 1.0, 60)
    # Both chunks of the deposits provision gain its heading's share (rank 2): they stay in front of the third.
    assert [h.chunk.chunk_id for h in ranked] == [a0.chunk_id, a1.chunk_id, b.chunk_id, c.chunk_id]
    assert ranked[0].ranks == {"dense": 1, "heading": 2} and ranked[1].ranks["heading"] == 2
    assert ranked[0].score == pytest.approx(0.030 + 1 / 62) and ranked[2].score == pytest.approx(0.028 + 1 / 61)
    assert ranked[3].chunk == c and ranked[3].score == 0.027 and "heading" not in ranked[3].ranks
    # Only the eviction heading among the closest: that provision comes first.
    assert [h.chunk.chunk_id for h in with_headings(fused, [heading_text(b)], 1.0, 60)][0] == b.chunk_id


def test_every_provision_heading_is_kept_once_with_the_first_chunk_of_each_provision_it_heads() -> None:
    deposits = chunk("s3", 0, "Deposits", "A landlord may require a deposit.")
    deposits_2 = chunk("s3", 1, "Deposits", "The deposit shall be refunded within fourteen days.")
    rent = chunk("s4", 0, "Rent increases", "Rent shall not be increased more than once a year.")
    untitled = chunk("s7", 0, "", "The Minister may make regulations.")
    deposits_again = chunk("s8", 0, "Deposits", "A deposit paid before this Act commenced is kept.")
    table = ChunkTable.build([deposits, deposits_2, rent, untitled, deposits_again])
    try:
        texts, provisions = provision_headings(table)
    finally:
        table.close()
    # One heading heading two provisions of the law is one text; a provision without a heading is not searched.
    assert texts == [heading_text(deposits), heading_text(rent)]
    assert provisions == [[deposits.chunk_id, deposits_again.chunk_id], [rent.chunk_id]]


def test_the_heading_search_takes_the_closest_headings_provisions_among_those_admitted() -> None:
    index = HeadingIndex(
        ["A — Deposits", "A — Rent", "A — Eviction"],
        np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32),
        [["d1", "d2"], ["r1"], ["e1"]],
    )
    query = np.array([0.0, 1.0], dtype=np.float32)
    every = index.search(query, 10, lambda _: True)
    assert [h.chunk_id for h in every] == ["r1", "e1", "d1", "d2"]  # one heading's provisions in the corpus's order
    assert [h.score for h in every] == pytest.approx([1.0, 0.8, 0.0, 0.0])
    assert [h.chunk_id for h in index.search(query, 2, lambda _: True)] == ["r1", "e1"]
    assert [h.chunk_id for h in index.search(query, 2, lambda cid: cid != "r1")] == ["e1", "d1"]
    assert index.search(query, 0, lambda _: True) == []


async def test_the_heading_search_brings_in_provisions_neither_search_found(private_data_dir: Path) -> None:
    # Each search asked for two chunks only, so that what the heading search adds is visible on the small corpus.
    cfg = RetrievalSettings(cache_ttl_s=0, candidates=2, heading_source=3, heading_source_weight=1.0)
    async with open_services(Settings(data_dir=private_data_dir, retrieval=cfg)) as services:
        retriever = services.orchestrator.deps.retriever
        index = await retriever.heading_index()
        assert await retriever.heading_index() is index  # built once for the corpus version
        chunks = list(services.corpus.chunks.values())
        assert set(index.texts) == {heading_text(c) for c in chunks} - {""}
        assert np.allclose(index.vectors, await retriever.embedder.embed_documents(index.texts), atol=1e-5)
        result = await retriever.retrieve(LOCKED_OUT, top_k=10)
        listed = [cid for cid, _ in result.stages["heading_search"]]
        assert len(listed) == 3 and "heading_search" in result.timings
        found = [services.corpus.chunks[cid] for cid in listed]
        assert found[0].section_id == EVICTION  # "Eviction only by court order" names the situation
        assert len({c.section_id for c in found}) == 3 and all(heading_text(c) for c in found)
        searched = {cid for stage in ("dense", "bm25") for cid, _ in result.stages[stage]}
        brought = [h for h in result.hits if h.chunk.chunk_id not in searched]
        assert brought and all(set(h.ranks) <= {"heading_search", "heading"} for h in brought)
        assert {h.chunk.chunk_id for h in brought} <= set(listed)
        # A filter applies to the heading search's provisions as to the searches'.
        other = SearchFilters(excluded=(found[0].doc_key,))
        filtered = await retriever.retrieve(LOCKED_OUT, top_k=10, filters=other)
        assert all(not cid.startswith(found[0].doc_key) for cid, _ in filtered.stages["heading_search"])
        assert all(h.chunk.doc_key != found[0].doc_key for h in filtered.hits)
        # A search by meaning only (an expansion's hypothetical passage) is left as it was.
        dense = await retriever.retrieve(LOCKED_OUT, mode="dense")
        assert "heading_search" not in dense.stages and all("heading_search" not in h.ranks for h in dense.hits)


async def test_the_heading_search_is_off_by_default(services: Services) -> None:
    retriever = services.orchestrator.deps.retriever
    assert retriever.cfg.heading_source == 0
    result = await retriever.retrieve(LOCKED_OUT, top_k=10)
    assert "heading_search" not in result.stages and all("heading_search" not in h.ranks for h in result.hits)


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    with ThreadPoolExecutor(1) as pool:
        yield build_embedder(EmbeddingSettings(), pool)


LONG = chunk("s3", 0, "Deposits", "A landlord may require a deposit of not more than one month's rent.")
LONG_2 = chunk("s3", 1, "Deposits", "A deposit held by a landlord shall be kept in a separate trust account.")
RENT = chunk("s4", 0, "Rent increases", "Rent shall not be increased more than once in any period of twelve months.")
VACATE = chunk("s5", 0, "Notice to vacate", "A landlord shall give a tenant at least three months' written notice.")
EVICT = chunk("s6", 0, "Eviction only by court order", "No tenant shall be evicted except by order of a court.")
HITS = [Retrieved(c, 1.0 - i / 10, {}) for i, c in enumerate([LONG, LONG_2, RENT, VACATE, EVICT])]


async def test_the_closest_provisions_are_distinct_sections_up_to_the_setting(embedder: Embedder) -> None:
    question = "The landlord changed the locks and threw my stuff out on the street."
    quotes = await related_quotes(embedder, question, HITS, provisions=3)
    # Two chunks of one long section are one provision: the next two sections are shown, not its second chunk.
    assert [q.hit.chunk.section_id for q in quotes] == [LONG.section_id, RENT.section_id, VACATE.section_id]
    assert all(q.text in q.hit.chunk.text for q in quotes)  # verbatim
    four = await related_quotes(embedder, question, HITS, provisions=4)
    assert [q.hit.chunk.section_id for q in four][-1] == EVICT.section_id
    two = await related_quotes(embedder, question, HITS, provisions=2)
    assert [q.hit.chunk.section_id for q in two] == [LONG.section_id, RENT.section_id]
    text, cited = related_text(four)
    assert len(cited) == 4 and all(f"“{c.quote}” [{c.index}]" in text for c in cited)


async def test_the_closest_provisions_can_be_chosen_among_more_by_meaning(embedder: Embedder) -> None:
    question = "They threw me out of my flat without going to court."
    # In the search's order the eviction provision is fourth: three provisions in that order leave it out.
    first = await related_quotes(embedder, question, HITS, provisions=3)
    assert EVICT.section_id not in [q.hit.chunk.section_id for q in first]
    # Chosen among the four by the search's order fused with meaning, the eviction provision (whose sentence is the
    # one about being put out) is shown, in the search's order; the provision it displaces is the furthest in meaning.
    chosen = await related_quotes(embedder, question, HITS, provisions=3, among=4)
    sections = [q.hit.chunk.section_id for q in chosen]
    assert sections == [LONG.section_id, VACATE.section_id, EVICT.section_id]  # the rent provision gives way
    assert all(q.text in q.hit.chunk.text for q in chosen)
    # ``among`` no larger than ``provisions`` keeps the search's order.
    same = await related_quotes(embedder, question, HITS, provisions=3, among=3)
    assert [q.hit.chunk.section_id for q in same] == [q.hit.chunk.section_id for q in first]
