"""Definitions an answer depends on, added as their own verbatim citations (``kind: "definition"``) on both paths,
bounded and within the caller's tenant; a question that asks what a term means is answered from its definition."""

import shutil
from pathlib import Path
from typing import Any

import httpx

from api.auth import Caller
from api.composer.definitions import MAX_DEFINITIONS, asked_term, meaning_of, needed_definitions
from api.main import create_app
from api.schemas.documents import Chunk, Document
from api.schemas.events import Citation, FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import IngestionSettings, LLMSettings, Settings
from api.tools.links import find_links
from tests.conftest import ingest_into
from tests.servers import FakeOpenAI, LiveServer, Reply
from tests.sse import Event, collect
from tests.test_links import law
from tests.test_stream import SOURCES, assert_contract

FORCED = "Can a marriage officer solemnise a marriage if one party was forced into it?"
S4_2 = (
    "A marriage officer shall not solemnise a marriage if he or she has reason to believe that either party has been "
    "forced or deceived into consenting."
)
STREAM = "/api/v1/query/stream"
OFFICER = "means a person designated as a marriage officer under section 6"


def contract(events: list[Event]) -> dict[str, Any]:
    """The final event of a stream that keeps the SSE contract (every quote the document's own words)."""
    return dict(assert_contract(events))


def definitions(final: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in final["citations"] if c["kind"] == "definition"]


async def test_a_quote_only_answer_quotes_the_definition_of_a_term_its_cited_words_use(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=60) as client:
        events = await collect(client, "GET", STREAM, params={"q": FORCED, "session_id": "d1"})
    final = contract(events)  # every quote, the definition's too, is the document's own words
    assert final["verified"] and S4_2 in final["answer"]
    (officer,) = definitions(final)
    assert officer["section_id"] == "sample/act/2022/9#s2" and officer["quote"].startswith('"marriage officer" means')
    assert officer["quote"] in SOURCES["sample/act/2022/9"]
    # Its own paragraph quotes the definition: it is the support of no other sentence.
    paragraph = next(p for p in final["answer"].split("\n\n") if f"[{officer['index']}]" in p)
    assert (
        paragraph == f"Section 2 of the Marriage Act, 2022 defines “marriage officer”: “{OFFICER}” [{officer['index']}]"
    )
    assert all(c["kind"] == "provision" for c in final["citations"] if c is not officer)


async def test_a_question_that_asks_what_a_term_means_is_answered_from_its_definition_first(
    live_app: LiveServer,
) -> None:
    q = "What is a spouse under the Marriage Act?"
    async with httpx.AsyncClient(base_url=live_app.url, timeout=60) as client:
        final = assert_contract(await collect(client, "GET", STREAM, params={"q": q, "session_id": "d"}))
    first = final["citations"][0]
    assert first["kind"] == "definition" and first["index"] == 1
    assert final["answer"].startswith(
        "Section 2 of the Marriage Act, 2022 defines “spouse”: “means a party to a marriage solemnised or registered "
        "under this Act.” [1]"
    )
    # The markers run on from it with none skipped, and the definition is not quoted twice.
    assert [c["index"] for c in final["citations"]] == list(range(1, len(final["citations"]) + 1))
    assert final["answer"].count("a party to a marriage solemnised") == 1


def test_the_term_a_question_asks_about() -> None:
    assert asked_term("What is a 'spouse' under the Marriages Act?") == "spouse"
    assert asked_term("what does “marriage officer” mean") == "marriage officer"
    assert asked_term("Define lobola") == "lobola"
    assert asked_term("What is the meaning of the term employee in the Labour Act?") == "employee"
    assert asked_term("Who is a complainant under the Domestic Violence Act?") == "complainant"
    assert asked_term("How much deposit can a landlord ask for?") == ""
    assert asked_term("Can a marriage officer refuse to marry us?") == ""


BOARD = law(
    "t/2001/4", "Mining Act", "Chapter 21:05",
    "1. Short title This Act may be cited as the Mining Act.",
    "2. Interpretation In this Act— “Minister” means the Minister of Mines; “claim” means a block of ground pegged "
    "for mining; “prospector” means a holder of a prospecting licence; “miner” includes a prospector; “shaft” means "
    "a vertical opening.",
    "3. Claims (1) The Minister may register a claim of a prospector or miner who has dug a shaft.",
)  # fmt: skip


def chunks_of(document: Document, tenant: str = "") -> dict[str, Chunk]:
    return {
        f"{s.section_id}/c0": Chunk(chunk_id=f"{s.section_id}/c0", doc_key=document.doc_key, section_id=s.section_id,
                                    section_number=s.number, section_heading="", title=document.title, text=s.text,
                                    ordinal=0, tenant=tenant)
        for s in document.sections
    }  # fmt: skip


def cite(document: Document, n: int, quote: str) -> Citation:
    section = document.sections[n - 1]
    return Citation(index=1, doc_key=document.doc_key, title=document.title, section_id=section.section_id,
                    section=f"section {n}", chunk_id=f"{section.section_id}/c0", quote=quote)  # fmt: skip


def test_at_most_two_definitions_never_of_everyday_terms_and_only_from_a_readable_document() -> None:
    links = find_links([BOARD])
    quote = "The Minister may register a claim of a prospector or miner who has dug a shaft."
    cited = [cite(BOARD, 3, quote)]
    found = needed_definitions("Who may register a shaft?", cited, links, chunks_of(BOARD), {BOARD.doc_key: BOARD}, "")
    # Four terms the cited words use are defined; "Minister" is everyday drafting. The one the question uses too
    # comes first, then the others in the order of length.
    assert len(found) == MAX_DEFINITIONS
    assert [n.definition.term for n in found] == ["shaft", "prospector"]
    assert all(n.definition.text in BOARD.sections[1].text for n in found)
    # A document of another tenant is never quoted to this caller, though it defines the terms the quote uses.
    private = chunks_of(BOARD, tenant="acme")
    assert needed_definitions("Who may register a shaft?", cited, links, private, {BOARD.doc_key: BOARD}, "other") == []
    assert len(needed_definitions("Who may?", cited, links, private, {BOARD.doc_key: BOARD}, "acme")) == 2
    # A definition whose words are not in its document as read now is never quoted.
    changed = BOARD.model_copy(update={"sections": [*BOARD.sections[:1], BOARD.sections[2]]})
    assert needed_definitions("Who may?", cited, links, chunks_of(BOARD), {BOARD.doc_key: changed}, "") == []


def test_terms_sharing_one_definition_are_quoted_once_by_its_meaning_alone() -> None:
    market = law(
        "t/2001/3", "Market Stalls Act", "",
        "1. Interpretation In this Act— “stall” means a booth let by a council; “ trader ” or “stallholder”, in "
        "relation to a market, means a person to whom a stall is let.",
        "2. Rent A trader shall pay the rent of the stall. A stallholder may not sublet.",
    )  # fmt: skip
    links = find_links([market])
    cited = [cite(market, 2, "A trader shall pay the rent of the stall. A stallholder may not sublet.")]
    found = needed_definitions("Who pays the rent?", cited, links, chunks_of(market), {market.doc_key: market}, "")
    assert [meaning_of(n.definition) for n in found] == [
        "in relation to a market, means a person to whom a stall is let.",
        "means a booth let by a council",
    ]


PRIVATE_ACT = """<!-- id: acme/act/2024/1; jurisdiction: SAMPLE -->
# Acme Staff Marriage Rules Act, 2024

1. Interpretation
In this Act—
"spouse" means an Acme employee's partner who is registered with the Acme benefits office.

2. Benefits
A spouse may claim the staff marriage allowance once a year.
"""


async def test_a_definition_is_never_given_from_another_tenants_document(sample_data_dir: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(sample_data_dir, data_dir, ignore=shutil.ignore_patterns("LOCK"))
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "rules.md").write_text(PRIVATE_ACT)
    await ingest_into(Settings(data_dir=data_dir, ingestion=IngestionSettings(tenant="acme")), tmp_path / "acme")
    q = QueryRequest(q="What is a spouse under the Acme Staff Marriage Rules Act?", session_id="t")
    finals = {}
    async with open_services(Settings(data_dir=data_dir)) as services:
        for tenant in ("acme", "other"):
            events = [e async for e in services.orchestrator.stream(q, Caller(tenant, tenant=tenant))]
            assert isinstance(events[-1], FinalEvent)
            finals[tenant] = events[-1]
    acme = [c for c in finals["acme"].citations if c.kind == "definition"]
    assert acme[0].doc_key == "acme/act/2024/1" and "Acme benefits office" in acme[0].quote
    # The other caller's answer may echo the question's words, never the private document's.
    other = finals["other"]
    assert all(c.doc_key.startswith("sample/") for c in other.citations)
    assert "benefits office" not in repr(other) and "acme/act" not in repr(other)


async def test_a_models_verified_answer_gets_the_definitions_its_cited_words_use(private_data_dir: Path) -> None:
    answer = f"No. “{S4_2}” [1]"
    upstream = FakeOpenAI([Reply([answer[:40], answer[40:]])])
    with LiveServer(upstream.app) as llm_server:
        cfg = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1")
        with LiveServer(create_app(Settings(data_dir=private_data_dir, llm=cfg))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                events = await collect(client, "GET", STREAM, params={"q": FORCED, "session_id": "m"})
    final = contract(events)
    assert final["verified"] and final["answer"].startswith(answer.replace("[1]", ""))
    (officer,) = definitions(final)
    # Added after the model's gated sentences, as its own paragraph; the model's sentence keeps its own citation.
    assert final["answer"].endswith(
        f"\n\nSection 2 of the Marriage Act, 2022 defines “marriage officer”: “{OFFICER}” [{officer['index']}]"
    )
    provisions = [c for c in final["citations"] if c["kind"] == "provision"]
    assert provisions and provisions[0]["section_id"] == "sample/act/2022/9#s4"


async def test_the_closest_provisions_of_a_related_reply_come_with_the_definitions_they_use(
    live_app: LiveServer,
) -> None:
    q = "Does a supplier have to give a consumer a receipt in a foreign language?"
    async with httpx.AsyncClient(base_url=live_app.url, timeout=60) as client:
        final = contract(await collect(client, "GET", STREAM, params={"q": q, "session_id": "r"}))
    assert final["outcome"] == "related"
    # The third closest provision is the Interpretation section's "supplier" itself: not repeated as a definition.
    assert [c["quote"].split('"')[1] for c in definitions(final)] == ["consumer", "defective"]
    assert sum("means a person who sells goods" in c["quote"] for c in final["citations"]) == 1
    # Below the closest provisions and above the closing words that say they may not settle the question.
    paragraphs = final["answer"].split("\n\n")
    assert paragraphs[-3].startswith("Section 2 of the Consumer Protection Act, 2022 defines “consumer”: “means")
    assert paragraphs[-1].startswith("They may not settle your question")


async def test_a_model_asked_what_a_term_means_reads_its_definition_first(private_data_dir: Path) -> None:
    meaning = "“a party to a marriage solemnised or registered under this Act.”"
    upstream = FakeOpenAI([Reply([f"A spouse means {meaning} [1]"])])
    with LiveServer(upstream.app) as llm_server:
        cfg = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1")
        with LiveServer(create_app(Settings(data_dir=private_data_dir, llm=cfg))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                q = {"q": "What is a spouse under the Marriage Act?", "session_id": "m"}
                final = contract(await collect(client, "GET", STREAM, params=q))
    synthesize = next(r for r, skill in zip(upstream.requests, upstream.skills_called, strict=True)
                      if skill == "synthesize")  # fmt: skip
    prompt = "\n".join(m["content"] for m in synthesize["messages"])
    # The defining provision is the model's first source, and the answer cites it.
    first = prompt.index("[1] Marriage Act, 2022, section 2 (Interpretation)\n")
    assert '"spouse" means a party to a marriage' in prompt[first:].split("\n\n[2] ")[0]
    assert final["verified"] and final["citations"][0]["section_id"] == "sample/act/2022/9#s2"
