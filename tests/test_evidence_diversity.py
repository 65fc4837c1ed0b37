"""The evidence holds distinct provisions: a search's first ``top_k`` chunks and, after them, the best chunk of further
provisions until ``top_k`` distinct ones are held (choosing at most ``retrieval.section_chunks`` chunks of one section),
so one long section found several times does not keep out the provisions an answer or the closest provisions could
come from (issue 41)."""

from pathlib import Path

import pytest

from api.schemas.documents import Chunk
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import Services, open_services
from api.settings import RetrievalSettings, Settings
from api.tools.retrieval import Retrieved, diverse, with_provisions
from tests.conftest import ingest_into

DEPOSIT = [
    "A landlord may require a tenant to pay a security deposit before the tenancy begins, and the security deposit "
    "must not exceed the rent for one month of the tenancy.",
    "The landlord must give the tenant a written receipt for the security deposit stating the amount of the security "
    "deposit, the date it was paid and the address of the premises.",
    "A security deposit paid in instalments is a security deposit for the purposes of this section, and each "
    "instalment of the security deposit must be receipted when it is paid.",
    "A landlord who takes a security deposit larger than the rent for one month must refund the excess of the security "
    "deposit to the tenant within seven days of a demand.",
    "Where the premises are sold, the security deposit passes to the new owner, who holds the security deposit on the "
    "same terms as the landlord who received the security deposit.",
    "A security deposit is not rent, and a landlord may not treat any part of the security deposit as the rent for the "
    "last month of the tenancy unless the tenant agrees in writing.",
    "A landlord who fails to comply with this section in relation to a security deposit commits an offence and is "
    "liable to a fine, and the court may order the security deposit repaid.",
    "The security deposit must be kept by the landlord in a separate account and the security deposit must not be "
    "used by the landlord for any other purpose during the tenancy.",
]
OTHERS = [
    ("2. Return of the deposit", "At the end of the tenancy the landlord must return the deposit to the tenant within "
     "fourteen days, less any amount properly deducted for damage beyond fair wear and tear."),
    ("3. Inspection of the premises", "The landlord and the tenant must inspect the premises together at the start "
     "and at the end of the tenancy, and each deposit deduction must refer to the inspection report."),
    ("4. Disputes about a deposit", "A tenant who disputes a deduction from a deposit may refer the dispute to the "
     "rent board, which must decide it within thirty days."),
    ("5. Interest on deposits", "A deposit held for more than one year earns interest for the tenant at the rate the "
     "Minister prescribes by notice."),
    ("6. Rent increases", "A landlord may not increase the rent more than once in twelve months and must give the "
     "tenant three months' written notice of an increase."),
    ("7. Repairs", "The landlord must keep the premises in good repair and must carry out repairs within a reasonable "
     "time after the tenant reports a defect."),
]  # fmt: skip
LONG = "t/act/2021/7#s1"
"""Section 1 is long (four chunks), every chunk about the security deposit: by chunks alone it fills the evidence."""
ASKED = "How much security deposit can my landlord take?"


def act_text() -> str:
    first, second = " ".join(DEPOSIT[:4]), " ".join(DEPOSIT[4:])
    lines = ["<!-- id: t/act/2021/7; jurisdiction: SAMPLE -->", "# Tenancy Deposits Act, 2021", "",
             "1. Security deposit", first, "", second, "", first.replace("landlord", "lessor"), "",
             second.replace("landlord", "lessor"), ""]  # fmt: skip
    for heading, text in OTHERS:
        lines += [heading, text, ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
async def deposits_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("deposits-src")
    (source / "tenancy-deposits-act.md").write_text(act_text())
    data = tmp_path_factory.mktemp("deposits-data")
    report = await ingest_into(Settings(data_dir=data), source)
    assert report.count("ingested") == 1 and report.total_chunks == 10
    return data


def settings(data: Path, section_chunks: int | None = None) -> Settings:
    """The defaults (``section_chunks`` unless given) with the cache off, so that each search runs."""
    limit = {} if section_chunks is None else {"section_chunks": section_chunks}
    return Settings(data_dir=data, retrieval=RetrievalSettings(cache_ttl_s=0, **limit))


def sections_of(hits: list[Retrieved]) -> list[str]:
    return [h.chunk.section_id for h in hits]


def chunk(section: str, ordinal: int) -> Chunk:
    doc = "t/act/2020/1"
    return Chunk(chunk_id=f"{doc}#{section}/c{ordinal}", doc_key=doc, section_id=f"{doc}#{section}",
                 section_number=section.removeprefix("s"), section_heading="", title="Tenancy Act, 2020",
                 text=f"Text of {section} part {ordinal}.", ordinal=ordinal)  # fmt: skip


def test_at_most_n_chunks_of_a_section_while_others_remain_and_the_order_is_kept() -> None:
    order = [("s1", 0), ("s1", 1), ("s1", 2), ("s2", 0), ("s1", 3), ("s3", 0), ("s2", 1), ("s4", 0), ("s5", 0)]
    hits = [Retrieved(chunk(s, o), 1.0 / (i + 1), {}) for i, (s, o) in enumerate(order)]
    ids = lambda found: [h.chunk.chunk_id.split("#")[1] for h in found]  # noqa: E731
    assert ids(diverse(hits, 6, 0)) == ["s1/c0", "s1/c1", "s1/c2", "s2/c0", "s1/c3", "s3/c0"]  # no limit
    assert ids(diverse(hits, 6, 2)) == ["s1/c0", "s1/c1", "s2/c0", "s3/c0", "s2/c1", "s4/c0"]
    # Five sections for six places: the first chunk passed over fills the sixth, in its place in the search's order.
    assert ids(diverse(hits, 6, 1)) == ["s1/c0", "s1/c1", "s2/c0", "s3/c0", "s4/c0", "s5/c0"]
    # Fewer sections than places: the chunks passed over fill them, in the search's order; nothing is lost.
    assert ids(diverse(hits, 20, 1)) == ids(hits)
    assert diverse(hits, 6, 2) == diverse(diverse(hits, 20, 2), 6, 2)  # cutting again changes nothing
    # The evidence: the first six as ranked, then the best chunk of the provisions the limit brings in, in order.
    assert ids(with_provisions(hits, 6, 1)) == ["s1/c0", "s1/c1", "s1/c2", "s2/c0", "s1/c3", "s3/c0", "s4/c0", "s5/c0"]
    assert ids(with_provisions(hits, 6, 2)) == [*ids(hits[:6]), "s2/c1", "s4/c0"]
    assert with_provisions(hits, 6, 0) == hits[:6]


async def test_a_long_section_no_longer_keeps_other_provisions_out(deposits_dir: Path) -> None:
    async with open_services(settings(deposits_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        assert retriever.cfg.section_chunks == 1 and retriever.cfg.top_k == 6  # the defaults
        result = await retriever.retrieve(ASKED)
    fused = [cid for cid, _ in result.stages["fused"]]
    chosen = [h.chunk.chunk_id for h in result.hits]
    # The first six chunks as ranked (four of them the long section's), then the next three provisions' best chunks.
    assert chosen == fused[:9], chosen
    assert sections_of(result.hits)[:6].count(LONG) == 4 and len(set(sections_of(result.hits))) == 6
    # Two a section: two more provisions come in after the first six chunks.
    async with open_services(settings(deposits_dir, 2)) as services:
        two = await services.orchestrator.deps.retriever.retrieve(ASKED)
    assert [h.chunk.chunk_id for h in two.hits] == fused[:8] and len(set(sections_of(two.hits))) == 5
    # With the limit off (0) the same search's first six chunks are the evidence: three provisions.
    async with open_services(settings(deposits_dir, 0)) as services:
        plain = await services.orchestrator.deps.retriever.retrieve(ASKED)
    assert [h.chunk.chunk_id for h in plain.hits] == fused[:6] and len(set(sections_of(plain.hits))) == 3


async def test_no_more_provisions_than_the_search_found(deposits_dir: Path) -> None:
    async with open_services(settings(deposits_dir, 1)) as services:
        ten = await services.orchestrator.deps.retriever.retrieve(ASKED, top_k=10)
    # Seven sections, ten chunks: all ten, once each.
    assert len(ten.hits) == len({h.chunk.chunk_id for h in ten.hits}) == 10 and len(set(sections_of(ten.hits))) == 7


@pytest.mark.parametrize(("section_chunks", "provisions"), [(0, 3), (2, 5), (None, 6)])
async def test_the_answer_is_composed_from_the_wider_evidence(
    deposits_dir: Path, section_chunks: int | None, provisions: int
) -> None:
    async with open_services(settings(deposits_dir, section_chunks)) as services:
        final = await final_answer(services, ASKED)
    research = [step for step in final.research if step.kind == "research"]
    evidence = [cid.rsplit("/c", 1)[0] for step in research for cid in step.added]
    assert evidence.count(LONG) == 4 and len(set(evidence)) == provisions, evidence
    # Citations still name the provisions they quote, and every quote is the Act's own words.
    assert final.citations and final.verified
    text = " ".join(act_text().split())
    assert all(" ".join(c.quote.replace("…", "").split()) in text or c.quote.split("…")[0].strip() in text
               for c in final.citations), [c.quote for c in final.citations]  # fmt: skip


async def final_answer(services: Services, question: str) -> FinalEvent:
    events = [e async for e in services.orchestrator.stream(QueryRequest(q=question, session_id="diverse"))]
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final
