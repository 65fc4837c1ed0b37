"""Provisions an answer's cited words refer to ("subject to section 3"), added as their own verbatim citations
(``kind: "reference"``) on both paths, bounded and within the caller's tenant."""

from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from api.auth import Caller
from api.main import create_app
from api.schemas.events import Citation, FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import IngestionSettings, LLMSettings, RetrievalSettings, Settings
from api.tools.links import find_links
from api.tools.whatsapp import format_reply
from tests.conftest import ingest_into
from tests.servers import FakeOpenAI, LiveServer, Reply
from tests.sse import Event, collect
from tests.test_definitions import chunks_of, cite
from tests.test_links import law

LICENSING = """<!-- id: pub/act/2020/3; jurisdiction: SAMPLE -->
# Dealers Licensing Act, 2020
[Chapter 14:50]

1. Short title
This Act may be cited as the Dealers Licensing Act, 2020.

2. Duration of licences
(1) Subject to section 3, a dealer's licence is valid for one year from the date of its issue.
(2) A dealer may apply for the renewal of a licence before it expires.

3. Suspension for failing to keep records
(1) Where a holder fails to keep the records required by this Act, the Registrar may suspend the holder's authority \
to trade for a period not exceeding ninety days.
(2) The Registrar shall give written notice of a suspension to the holder.
"""
PRIVATE = """<!-- id: acme/act/2024/2; jurisdiction: SAMPLE -->
# Acme Vending Rules Act, 2024

1. Short title
This Act may be cited as the Acme Vending Rules Act, 2024.

2. Vending permits
A vending permit is valid for six months, subject to section 3.

3. Hygiene
The Acme compliance desk may withdraw the authority to trade of a stall that inspectors find unhygienic.
"""
LICENCE_Q = "How long is a dealer's licence valid?"
S2_1 = "Subject to section 3, a dealer's licence is valid for one year from the date of its issue."
S3_1 = (
    "Where a holder fails to keep the records required by this Act, the Registrar may suspend the holder's authority "
    "to trade for a period not exceeding ninety days."
)
STREAM = "/api/v1/query/stream"


@pytest.fixture(scope="module")
async def referring_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding a public Act whose section 2 is "subject to section 3", and a private Act of tenant acme
    whose section 2 is "subject to section 3"."""
    root = tmp_path_factory.mktemp("references")
    data_dir = root / "data"
    for name, text, tenant in (("public", LICENSING, ""), ("acme", PRIVATE, "acme")):
        (root / name).mkdir()
        (root / name / "act.md").write_text(text)
        report = await ingest_into(Settings(data_dir=data_dir, ingestion=IngestionSettings(tenant=tenant)), root / name)
        assert report.failures == 0
    return data_dir


def assert_contract(events: list[Event]) -> dict[str, Any]:
    """The final event of a stream that keeps the SSE contract: the tokens are the answer, the citation events its
    citations, and every quote the document's own words."""
    assert events[0].event == "meta" and events[-1].event == "final"
    final: dict[str, Any] = events[-1].json()
    assert final["answer"] == "".join(e.json()["text"] for e in events if e.event == "token")
    assert [e.json()["citation"] for e in events if e.event == "citation"] == final["citations"]
    for citation in final["citations"]:
        assert citation["quote"] in LICENSING and f"[{citation['index']}]" in final["answer"]
    return final


def references(final: FinalEvent) -> list[Citation]:
    return [c for c in final.citations if c.kind == "reference"]


async def ask(
    data_dir: Path, question: str, tenant: str = "", add_references: int = 2, related_provisions: int = 3
) -> FinalEvent:
    retrieval = RetrievalSettings(add_references=add_references, related_provisions=related_provisions)
    settings = Settings(data_dir=data_dir, retrieval=retrieval)
    async with open_services(settings) as services:
        caller = Caller(tenant or "local", tenant=tenant)
        events = [e async for e in services.orchestrator.stream(QueryRequest(q=question, session_id="r"), caller)]
    assert isinstance(events[-1], FinalEvent)
    return events[-1]


async def test_a_quote_only_answer_quotes_the_provision_its_cited_words_are_subject_to(
    referring_data_dir: Path,
) -> None:
    final = await ask(referring_data_dir, LICENCE_Q)
    assert final.verified and S2_1 in final.answer
    (referred,) = references(final)
    # The referenced section's words, verbatim, its sentence closest to the question and the referring words.
    assert referred.section_id == "pub/act/2020/3#s3" and referred.provision_id == "pub/act/2020/3#s3(1)"
    assert " ".join(referred.quote.split()) == S3_1
    assert referred.quote in LICENSING
    # Its own paragraph, after the answer's quotes, says which cited provision refers to it; it supports nothing else.
    paragraphs = final.answer.split("\n\n")
    assert paragraphs[-1] == (
        "Section 3(1) of the Dealers Licensing Act, 2020, referred to above (subject to section 3): "
        f"“{referred.quote}” [{referred.index}]"
    )
    assert all(f"[{referred.index}]" not in p for p in paragraphs[:-1])
    assert [c.kind for c in final.citations if c is not referred] == ["provision"] * (len(final.citations) - 1)
    # Off when the setting says none.
    assert references(await ask(referring_data_dir, LICENCE_Q, add_references=0)) == []


async def test_a_referenced_provision_of_a_tenants_document_is_quoted_only_to_that_tenant(
    referring_data_dir: Path,
) -> None:
    question = "How long is a vending permit valid?"
    acme = await ask(referring_data_dir, question, tenant="acme")
    referred = [c for c in references(acme) if c.doc_key.startswith("acme/")]
    assert [c.section_id for c in referred] == ["acme/act/2024/2#s3"] and "compliance desk" in referred[0].quote
    other = await ask(referring_data_dir, question, tenant="other")
    assert all(not c.doc_key.startswith("acme/") for c in other.citations)
    assert "compliance desk" not in repr(other) and "acme/act" not in repr(other)


async def test_the_closest_provisions_of_a_related_reply_come_with_the_provisions_they_refer_to(
    referring_data_dir: Path,
) -> None:
    question = "Does a dealer's licence allow selling alcohol?"
    # Shown as one of the closest provisions itself, the referenced section is not quoted again as a reference.
    shown = await ask(referring_data_dir, question)
    assert shown.outcome == "related" and "pub/act/2020/3#s3" in {c.section_id for c in shown.citations}
    assert references(shown) == []
    final = await ask(referring_data_dir, question, related_provisions=1)
    assert final.outcome == "related" and S2_1 in final.answer
    (referred,) = references(final)
    assert referred.provision_id == "pub/act/2020/3#s3(1)" and " ".join(referred.quote.split()) == S3_1
    # Below the closest provisions and above the closing words that say they may not settle the question.
    paragraphs = final.answer.split("\n\n")
    assert paragraphs[-2].startswith("Section 3(1) of the Dealers Licensing Act, 2020, referred to above (subject to")
    assert paragraphs[-1].startswith("They may not settle your question")


PERMITS = law(
    "t/2024/2", "Vending Rules Act", "",
    "A vending permit is valid for six months, subject to section 2.",
    "The inspector may cancel a vending permit held by a vendor whose stall is unhygienic.",
)  # fmt: skip


def test_a_referenced_provision_is_never_taken_from_a_document_the_caller_may_not_read() -> None:
    from api.composer.references import needed_references  # here: the other tests run where it is missing

    links = find_links([PERMITS])
    cited = [cite(PERMITS, 1, "A vending permit is valid for six months, subject to section 2.")]
    documents = {PERMITS.doc_key: PERMITS}
    found = needed_references("How long is a permit valid?", cited, links, chunks_of(PERMITS), documents, "")
    assert [(n.provision_id, n.quote) for n in found] == [("t/2024/2#s2", PERMITS.sections[1].text)]
    private = chunks_of(PERMITS, tenant="acme")
    assert needed_references("How long?", cited, links, private, documents, "other") == []
    assert len(needed_references("How long?", cited, links, private, documents, "acme")) == 1
    # None when the cited words make no reference, or the answer already quotes the referenced words.
    plain = [cite(PERMITS, 1, "A vending permit is valid for six months")]
    assert needed_references("How long?", plain, links, chunks_of(PERMITS), documents, "") == []
    both = [*cited, cite(PERMITS, 2, found[0].quote)]
    assert needed_references("How long?", both, links, chunks_of(PERMITS), documents, "") == []


def test_a_citation_may_be_of_kind_reference() -> None:
    citation = Citation(index=3, doc_key="d", title="T", section_id="d#s3", section="section 3", chunk_id="d#s3/c0",
                        quote="the words", kind="reference")  # fmt: skip
    assert citation.model_dump()["kind"] == "reference"
    assert "reference" in Citation.model_json_schema()["properties"]["kind"]["enum"]
    assert "'reference'" in Citation.model_json_schema()["properties"]["kind"]["description"]
    with pytest.raises(ValidationError):
        Citation.model_validate({**citation.model_dump(), "kind": "mention"})


async def test_a_models_verified_answer_gets_the_provision_its_cited_words_are_subject_to(
    referring_data_dir: Path,
) -> None:
    answer = f"“{S2_1}” [1]"
    upstream = FakeOpenAI([Reply([answer[:30], answer[30:]])])
    with LiveServer(upstream.app) as llm_server:
        cfg = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1")
        with LiveServer(create_app(Settings(data_dir=referring_data_dir, llm=cfg))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                events = await collect(client, "GET", STREAM, params={"q": LICENCE_Q, "session_id": "m"})
    final = assert_contract(events)  # every quote, the referenced provision's too, is the document's own words
    assert final["verified"]
    (referred,) = [c for c in final["citations"] if c["kind"] == "reference"]
    # Added after the model's gated sentence, as its own paragraph; the model's sentence keeps its own citation.
    assert final["answer"].startswith(answer.replace(" [1]", ""))
    assert final["answer"].endswith(
        f"referred to above (subject to section 3): “{referred['quote']}” [{referred['index']}]"
    )
    assert referred["section_id"] == "pub/act/2020/3#s3"
    provisions = [c for c in final["citations"] if c["kind"] == "provision"]
    assert [c["section_id"] for c in provisions] == ["pub/act/2020/3#s2"]


def test_a_whatsapp_reply_lists_the_referenced_provision_as_a_source_like_a_definition() -> None:
    def cited(index: int, section: str, quote: str, kind: str = "provision") -> Citation:
        return Citation.model_validate(
            {"index": index, "doc_key": "pub/act/2020/3", "title": "Dealers Licensing Act, 2020", "kind": kind,
             "section_id": f"pub/act/2020/3#s{section}", "provision_id": f"pub/act/2020/3#s{section}(1)",
             "section": f"section {section}(1)", "chunk_id": "c", "quote": quote}
        )  # fmt: skip

    answer = (
        f"Section 2 of the Dealers Licensing Act, 2020 provides: “{S2_1}” [1]\n\n"
        f"Section 3(1) of the Dealers Licensing Act, 2020, referred to above (subject to section 3): “{S3_1}” [2]"
    )
    final = FinalEvent(answer=answer, citations=[cited(1, "2", S2_1), cited(2, "3", S3_1, "reference")])
    reply = format_reply(final, {"pub/act/2020/3": "14:50"}, "")
    body, sources = reply.split("\n\n*Sources*\n")
    assert body.endswith(f"“{S3_1}” [2]")
    assert sources.splitlines() == [
        "[1] Dealers Licensing Act, 2020 (Chapter 14:50), section 2",
        "[2] Dealers Licensing Act, 2020 (Chapter 14:50), section 3",
    ]


TRADERS = """<!-- id: pub/act/2021/7; jurisdiction: SAMPLE -->
# Market Traders Act, 2021
[Chapter 14:51]

1. Short title
This Act may be cited as the Market Traders Act, 2021.

2. Duration of trading permits
(1) Subject to section 3, a trading permit remains in force for twelve months from the day it is granted.
(2) A permit holder may apply to renew the permit before it lapses.

3. Suspension for unhygienic stalls
(1) The council may suspend a trading permit where a health inspector reports that the holder's stall is unhygienic.
(2) The council shall give the holder written notice of a suspension.
"""
SUSPEND_Q = "Can my permit be suspended for an unhygienic stall?"
T2_1 = "Subject to section 3, a trading permit remains in force for twelve months from the day it is granted."
T3_1 = (
    "The council may suspend a trading permit where a health inspector reports that the holder's stall is unhygienic."
)


@pytest.fixture(scope="module")
async def traders_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding a public Act whose section 2(1) is "subject to section 3"."""
    root = tmp_path_factory.mktemp("referring")
    (root / "act").mkdir()
    (root / "act" / "act.md").write_text(TRADERS)
    report = await ingest_into(Settings(data_dir=root / "data"), root / "act")
    assert report.failures == 0
    return root / "data"


async def test_an_answer_citing_what_another_provision_is_subject_to_quotes_that_provision_too(
    traders_data_dir: Path,
) -> None:
    final = await ask(traders_data_dir, SUSPEND_Q)
    assert final.verified and T3_1 in final.answer
    assert "pub/act/2021/7#s3(1)" in {c.provision_id for c in final.citations if c.kind == "provision"}
    # Section 2(1) is "subject to section 3": the cited words qualify the rule it states, so it is read with them,
    # quoted verbatim from the sentence that makes the reference and introduced as what refers to the cited one.
    (referring,) = references(final)
    assert referring.section_id == "pub/act/2021/7#s2" and referring.provision_id == "pub/act/2021/7#s2(1)"
    assert referring.quote == T2_1
    paragraphs = final.answer.split("\n\n")
    assert paragraphs[-1] == (
        "Section 2(1) of the Market Traders Act, 2021 refers to the provision cited above (subject to section 3): "
        f"“{T2_1}” [{referring.index}]"
    )
    assert all(f"[{referring.index}]" not in p for p in paragraphs[:-1])
    # Off when the setting says none.
    settings = Settings(data_dir=traders_data_dir, retrieval=RetrievalSettings(add_referring=0))
    async with open_services(settings) as services:
        events = [e async for e in services.orchestrator.stream(QueryRequest(q=SUSPEND_Q, session_id="off"))]
    assert isinstance(events[-1], FinalEvent) and references(events[-1]) == []


async def test_a_models_verified_answer_gets_the_provision_that_is_subject_to_its_cited_words(
    traders_data_dir: Path,
) -> None:
    answer = f"“{T3_1}” [1]"
    upstream = FakeOpenAI([Reply([answer[:30], answer[30:]])])
    with LiveServer(upstream.app) as llm_server:
        cfg = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1")
        with LiveServer(create_app(Settings(data_dir=traders_data_dir, llm=cfg))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                events = await collect(client, "GET", STREAM, params={"q": SUSPEND_Q, "session_id": "m"})
    final: dict[str, Any] = events[-1].json()
    assert final["verified"] and final["answer"].startswith(answer.replace(" [1]", ""))
    assert [e.json()["citation"] for e in events if e.event == "citation"] == final["citations"]
    (referring,) = [c for c in final["citations"] if c["kind"] == "reference"]
    assert referring["provision_id"] == "pub/act/2021/7#s2(1)" and referring["quote"] == T2_1
    assert final["answer"].endswith(
        f"refers to the provision cited above (subject to section 3): “{T2_1}” [{referring['index']}]"
    )


def test_a_provision_referring_to_a_cited_one_is_quoted_only_when_it_depends_on_it_and_the_caller_may_read_it() -> None:
    from api.composer.references import needed_referring  # here: the other tests run where it is missing

    rules = law(
        "t/2024/5", "Market Stalls Act", "",
        "Subject to section 2, a market stall licence is valid for one year.",
        "The inspector may cancel a market stall licence held by a vendor whose stall is unhygienic.",
        "An inspector appointed under section 2 may enter a stall at any reasonable hour.",
    )  # fmt: skip
    links = find_links([rules])
    cited = [cite(rules, 2, rules.sections[1].text)]
    documents = {rules.doc_key: rules}
    question = "How long is a market stall licence valid?"
    found = needed_referring(question, cited, links, chunks_of(rules), documents, "")
    # Section 1 is subject to the cited section 2; section 3's "under section 2" is a plain mention, not followed.
    assert [(n.provision_id, n.quote, n.refers, n.reference.relation) for n in found] == [
        ("t/2024/5#s1", rules.sections[0].text, True, "subject to")
    ]
    # Outside the evidence it must share two words with the question; from the evidence one is enough.
    assert needed_referring("Is a vendor's licence cancelled?", cited, links, chunks_of(rules), documents, "") == []
    held = needed_referring("Is a vendor's licence cancelled?", cited, links, chunks_of(rules), documents, "",
                            evidence=["t/2024/5#s1"])  # fmt: skip
    assert [n.provision_id for n in held] == ["t/2024/5#s1"]
    # Never from a document the caller may not read, nor a section the answer already cites.
    private = chunks_of(rules, tenant="acme")
    assert needed_referring(question, cited, links, private, documents, "other") == []
    assert len(needed_referring(question, cited, links, private, documents, "acme")) == 1
    both = [*cited, cite(rules, 1, rules.sections[0].text)]
    assert needed_referring(question, both, links, chunks_of(rules), documents, "") == []
    assert needed_referring(question, cited, links, chunks_of(rules), documents, "", limit=0) == []


COUSINS = law(
    "t/2022/5", "Unions Act", "",
    "1. Interpretation (1) In this Act— “application” means an application in terms of section 4; “dependant” "
    "means— (a) a spouse; (b) a minor child.",
    "2. Cousins (1) No marriage is valid between persons related in a degree specified in section 3. (2) If a "
    "marriage is contracted between cousins who do not belong to a community referred to in section 4, and at the "
    "time of the marriage— (a) both parties knew of the relationship, the marriage is void; (b) the parties did not "
    "know of the relationship, the marriage is valid. (3) Subject to subsections (1) and (2) and subject to section "
    "5, cousins who belong to a community referred to in section 4 may marry.",
    "3. Degrees The degrees of relationship that bar a marriage are those of parent and child.",
    "4. Communities A community whose custom allows cousins to marry is one the Minister lists.",
    "5. Notice Cousins who intend to marry shall give the marriage officer written notice.",
    "6. Returns (1) Subject to subsections (2) to (4), goods may be returned. (2) Perishable goods may not be "
    "returned. (3) Goods in use may not be returned. (4) Goods sold as seen may not be returned.",
)  # fmt: skip


def test_a_quote_is_read_with_its_provisions_lead_in_and_a_reference_to_another_section_comes_first() -> None:
    from api.composer.references import needed_references

    links = find_links([COUSINS])
    documents = {COUSINS.doc_key: COUSINS}
    chunks = chunks_of(COUSINS)

    def cited(n: int, provision: str, quote: str) -> list[Citation]:
        return [cite(COUSINS, n, quote).model_copy(update={"provision_id": f"t/2022/5#s{n}{provision}"})]

    # A quoted paragraph (b) reads with its subsection's lead-in ("If … referred to in section 4, and … —"): the
    # community it names is what the quote depends on; subsection (1)'s reference is not the quote's.
    paragraph = cited(2, "(2)(b)", "the parties did not know of the relationship, the marriage is valid.")
    found = needed_references("May cousins marry?", paragraph, links, chunks, documents, "")
    assert [n.chunk.section_id for n in found] == ["t/2022/5#s4"]
    # A quote that makes two references: the one to a section the answer does not cite comes first.
    both = cited(2, "(3)", COUSINS.sections[1].text.split("(3) ")[1])
    found = needed_references("May cousins marry?", both, links, chunks, documents, "", limit=1)
    assert [n.provision_id for n in found] == ["t/2022/5#s5"]
    # A range ("subsections (2) to (4)") is one reference: quoted once, by its first provision.
    returns = cited(6, "(1)", "Subject to subsections (2) to (4), goods may be returned.")
    found = needed_references("Can goods be returned?", returns, links, chunks, documents, "", limit=3)
    assert [n.provision_id for n in found] == ["t/2022/5#s6(2)"]
    # An interpretation provision's lead-in holds other definitions: a quoted definition does not depend on them.
    minor = cited(1, "(1)(b)", "a minor child.")
    assert needed_references("Who is a dependant?", minor, links, chunks, documents, "") == []


def test_research_follows_each_reference_once_and_another_section_before_the_rest_of_its_own(tmp_path: Path) -> None:
    from api.orchestrators.query.following import dependencies
    from api.tools.corpus import Corpus, Manifest
    from api.tools.object_store import LocalObjectStore

    shop = law(
        "t/2019/5", "Shops Act", "",
        "1. Returns (1) Subject to subsections (2) to (4), a consumer may return goods delivered late, as referred to "
        "in section 2. (2) Perishable goods may not be returned. (3) Goods in use may not be returned. (4) Goods "
        "sold as seen may not be returned.",
        "2. Late delivery A consumer may refuse goods delivered after the agreed date.",
    )  # fmt: skip
    chunks = chunks_of(shop)
    corpus = Corpus(Manifest(), chunks.values(), LocalObjectStore(tmp_path), links=find_links([shop]))
    followed = dependencies(corpus, [chunks["t/2019/5#s1/c0"], chunks["t/2019/5#s2/c0"]], "", 2, [])
    # Section 2 first, then the range's first subsection once: not (2), (3) and (4) at the cost of section 2.
    assert [r.target for r, _ in followed] == ["t/2019/5#s2", "t/2019/5#s1(2)"]


def test_an_editorial_note_is_never_quoted_as_the_words_of_a_referenced_provision() -> None:
    from api.composer.references import needed_references

    licences = law(
        "t/2010/5", "Licences Act", "",
        "1. Licences (1) Subject to subsection (2), a licence lapses after a year. (2) [subsection substituted by "
        "section 3 of Act 5 of 2010] The Registrar may extend the period of a licence.",
    )  # fmt: skip
    cited = [cite(licences, 1, "Subject to subsection (2), a licence lapses after a year.").model_copy(
        update={"provision_id": "t/2010/5#s1(1)"})]  # fmt: skip
    (found,) = needed_references("What then?", cited, find_links([licences]), chunks_of(licences),
                                 {licences.doc_key: licences}, "")  # fmt: skip
    assert found.provision_id == "t/2010/5#s1(2)" and found.quote == "The Registrar may extend the period of a licence."


def test_a_provision_using_a_term_defined_by_the_cited_one_is_read_with_it() -> None:
    from api.composer.references import USES, needed_referring, references_text

    wills = law(
        "t/2019/8", "Testaments Act", "",
        "1. Interpretation In this Act— “competent witness” means a person who in terms of section 2 is competent to "
        "witness the signing of a testament; “testament” includes a codicil.",
        "2. Competent witnesses Any person who is of or over the age of sixteen years shall be competent to witness "
        "the signing of a testament.",
        "3. Formalities A testament is valid only if it is signed in the presence of two or more competent "
        "witnesses present at the same time.",
        "4. Revocation A testament may be revoked by a later testament.",
    )  # fmt: skip
    headings = ["Interpretation", "Competent witnesses", "Formalities", "Revocation"]
    named = [s.model_copy(update={"heading": h}) for s, h in zip(wills.sections, headings, strict=True)]
    wills = wills.model_copy(update={"sections": named})
    links = find_links([wills])
    cited = [cite(wills, 2, wills.sections[1].text)]
    documents = {wills.doc_key: wills}
    question = "Can my sixteen-year-old sign as a witness to my testament?"
    found = needed_referring(question, cited, links, chunks_of(wills), documents, "")
    # Section 3 uses "competent witnesses", which section 1 defines by the cited section 2: it says what the witness
    # is for; section 4 uses no such term.
    assert [(n.provision_id, n.reference.relation, n.reference.words) for n in found] == [
        ("t/2019/8#s3", USES, "competent witness")
    ]
    text, citations = references_text(found, 2)
    assert text.startswith("Section 3 of the Testaments Act uses “competent witness”") and citations[0].kind == (
        "reference"
    )
    assert citations[0].quote.startswith("A testament is valid only if it is signed in the presence of two or more")
    # The paragraph passes the sentence gate every added paragraph must pass.
    from api.composer.judge.gate import gate_model_answer

    gate = gate_model_answer(text, {c.index: c for c in citations}, {found[0].chunk.section_id: wills.sections[2].text})
    assert gate.passed and not gate.failed
    # A question that shares too little with the using provision gets nothing from it.
    assert needed_referring("How old must a witness be?", cited, links, chunks_of(wills), documents, "") == []


def test_a_provision_the_others_are_framed_in_terms_of_is_read_with_the_cited_one_first() -> None:
    from api.composer.references import needed_referring

    wills = law(
        "t/2019/9", "Testaments Act", "",
        "1. Interpretation In this Act— “competent witness” means a person who in terms of section 2 is competent to "
        "witness the signing of a testament.",
        "2. Competent witnesses Any person who is of or over the age of sixteen years shall be competent to witness "
        "the signing of a testament.",
        "3. Formalities A testament is valid only if it is made in the presence of two or more competent witnesses "
        "present at the same time.",
        "4. Amendments No amendment made in a testament shall be valid unless the testament has been signed and "
        "witnessed in terms of section 3 and each competent witness signs the amendment.",
    )  # fmt: skip
    headings = ["Interpretation", "Competent witnesses", "Formalities", "Amendments"]
    named = [s.model_copy(update={"heading": h}) for s, h in zip(wills.sections, headings, strict=True)]
    wills = wills.model_copy(update={"sections": named})
    links = find_links([wills])
    cited = [cite(wills, 2, wills.sections[1].text)]
    documents = {wills.doc_key: wills}
    question = "Can my sixteen-year-old son sign as a witness to my testament?"
    found = needed_referring(question, cited, links, chunks_of(wills), documents, "", limit=2)
    # Both use "competent witness", which section 1 defines by the cited section 2, and section 4 shares more words
    # with the question; but section 4's quoted words are framed in terms of section 3 (the testament "signed and
    # witnessed in terms of section 3"): section 3 states the rule section 4 builds on, and is read first.
    assert [n.provision_id for n in found] == ["t/2019/9#s3", "t/2019/9#s4"]
    # With the framing provision already cited, the other is still read with the cited one.
    both = [*cited, cite(wills, 3, wills.sections[2].text)]
    assert [n.provision_id for n in needed_referring(question, both, links, chunks_of(wills), documents, "")] == [
        "t/2019/9#s4"
    ]


def test_a_clause_cut_from_a_long_sentence_is_quoted_from_its_own_words_and_cited_to_its_item() -> None:
    from api.composer.references import needed_referring

    writing = "it is in writing on paper, parchment or any other material that will last, " * 8
    wills = law(
        "t/2019/10", "Testaments Act", "",
        "1. Interpretation In this Act— “competent witness” means a person who in terms of section 2 is competent to "
        "witness the signing of a testament.",
        "2. Competent witnesses Any person who is of or over the age of sixteen years shall be competent to witness "
        "the signing of a testament.",
        f"3. Formalities (1) A testament shall not be valid unless— (a) {writing.strip()}; and (b) it is signed in the "
        "presence of two or more competent witnesses present at the same time; and (c) it is dated.",
    )  # fmt: skip
    headings = ["Interpretation", "Competent witnesses", "Formalities"]
    named = [s.model_copy(update={"heading": h}) for s, h in zip(wills.sections, headings, strict=True)]
    wills = wills.model_copy(update={"sections": named})
    cited = [cite(wills, 2, wills.sections[1].text)]
    question = "Must my testament be signed before witnesses?"
    (found,) = needed_referring(question, cited, find_links([wills]), chunks_of(wills), {wills.doc_key: wills}, "")
    # The sentence is too long to quote whole: its clause holding the term is quoted, from the item's own words (not
    # the "and (b)" that joins it to paragraph (a)), and cited to paragraph (b), which holds them.
    assert found.quote == "it is signed in the presence of two or more competent witnesses present at the same time;"
    assert found.provision_id == "t/2019/10#s3(1)(b)"


def test_a_provision_using_the_term_a_cited_definition_defines_is_read_with_it() -> None:
    from api.composer.references import DEFINED_USE, needed_referring, references_text

    upkeep = law(
        "t/1978/4", "Family Upkeep Act", "",
        "1. Interpretation In this Act— “dependant” means— (a) a surviving spouse; (b) a minor child of the deceased; "
        "“Minister” means the Minister of Justice.",
        "2. Applications Any dependant of a deceased person may apply for an award of maintenance from the estate.",
        "3. Reports The Minister may ask for a report on any award of maintenance from an estate.",
    )  # fmt: skip
    headings = ["Interpretation", "Applications", "Reports"]
    named = [s.model_copy(update={"heading": h}) for s, h in zip(upkeep.sections, headings, strict=True)]
    upkeep = upkeep.model_copy(update={"sections": named})
    links = find_links([upkeep])
    documents = {upkeep.doc_key: upkeep}
    question = "As a minor child, can I claim maintenance from my late father's estate?"
    # The answer quotes an item of the definition of "dependant": section 2, which uses the term, says what being one
    # gives; section 3 uses no term the quote defines.
    cited = [cite(upkeep, 1, "(b) a minor child of the deceased;")]
    found = needed_referring(question, cited, links, chunks_of(upkeep), documents, "")
    assert [(n.provision_id, n.reference.relation, n.reference.words) for n in found] == [
        ("t/1978/4#s2", DEFINED_USE, "dependant")
    ]
    text, citations = references_text(found, 2)
    assert text.startswith("Section 2 of the Family Upkeep Act uses “dependant”, which the provision cited above")
    assert citations[0].quote.startswith("Any dependant of a deceased person may apply")
    from api.composer.judge.gate import gate_model_answer

    gate = gate_model_answer(text, {c.index: c for c in citations}, {"t/1978/4#s2": upkeep.sections[1].text})
    assert gate.passed and not gate.failed
    # The term's own words say nothing of which of its users was asked about: one sharing a single other word with
    # the question is not read with the definition.
    assert needed_referring("Can a dependant apply?", cited, links, chunks_of(upkeep), documents, "") == []
    # A definition of a term of everyday drafting ("Minister") sends no provision using it.
    minister = [cite(upkeep, 1, "“Minister” means the Minister of Justice.")]
    assert needed_referring("Can the Minister ask for a report on maintenance?", minister, links, chunks_of(upkeep),
                            documents, "") == []  # fmt: skip
