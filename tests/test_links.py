"""Definitions and cross-references read from the documents' own text, stored at ingestion and shown by the reader."""

import json
import logging
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from api.schemas.documents import Document, Section
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import Settings
from api.tools.links import LINKS_KEY, LINKS_READER, Links, find_definitions, find_links
from tests.conftest import ingest_into
from tests.servers import LiveServer


def law(key: str, title: str, chapter: str, *texts: str, tenant: str = "", part: str = "") -> Document:
    sections = [
        Section(section_id=f"{key}#s{n}", number=str(n), text=text, ref=f"s{n}", part=part)
        for n, text in enumerate(texts, 1)
    ]
    return Document(doc_key=key, title=title, chapter=chapter, content_hash=key, sections=sections, tenant=tenant)


LABOUR = law(
    "t/1985/16", "Labour Act", "Chapter 28:01",
    "1. Short title This Act may be cited as the Labour Act [Chapter 28:01].",
    "2. Interpretation In this Act— “employee” means any person who performs work for another person; "
    "“employer” includes the State; and “spouse” has the meaning given in section 3.",
    "3. Spouses (1) A spouse of an employee may apply for leave. (2) Subject to subsection (1), paragraph (b) of "
    "subsection (4) applies. (3) In this section, “leave” means paid leave. (4) The leave— (a) is unpaid; (b) lasts "
    "ten days.",
    "4. Dismissal (1) No employer shall dismiss an employee except in terms of section 3(4)(b) or sections 5 and 6. "
    "(2) The period referred to in subsection (1) is thirty days.",
    "5. Notice Notice shall be given in writing.",
    "6. Pay Pay in lieu of notice shall be given. Nothing in section 99 or section 4 of Act 3 of 2022 applies.",
    "7. Amendment of Cap. 5:05 The Child Act is amended in section 2 by the insertion of— “employee” means a child.",
)  # fmt: skip
PENSIONS = law(
    "t/2000/2", "Pension Funds Act", "Chapter 24:09",
    "1. Members A member dismissed in terms of section 4 of the Labour Act [Chapter 28:01] keeps the benefit, "
    "as does one dismissed under section 5 of the Labour Act and one in terms of section 6 of that Act.",
)  # fmt: skip


def test_definitions_are_read_with_their_words_and_scope() -> None:
    found = {d.term: d for d in find_definitions(LABOUR)}
    assert set(found) == {"employee", "employer", "spouse", "leave"}
    assert found["employee"].text == "“employee” means any person who performs work for another person"
    assert found["employer"].provision_id == "t/1985/16#s2" and found["employer"].scope == ""
    # "In this section" limits the definition to the section it is in.
    assert found["leave"].scope == "t/1985/16#s3" and found["leave"].provision_id == "t/1985/16#s3(3)"
    links = find_links([LABOUR])
    used = [d.term for d in links.defined_in(LABOUR.sections[3].text, LABOUR.doc_key, "t/1985/16#s4")]
    assert used == ["employee", "employer"]  # "leave" is defined for section 3 only
    assert "leave" in [d.term for d in links.defined_in(LABOUR.sections[2].text, LABOUR.doc_key, "t/1985/16#s3")]


def test_a_definition_made_for_one_part_applies_in_that_part_only() -> None:
    code = law(
        "t/2004/23", "Criminal Code", "",
        "1. Interpretation in Part III In this Part— “young person” means a boy or girl under sixteen.",
        "2. Rape A young person may not consent.", part="Chapter V, Part III",
    )  # fmt: skip
    other = Section(section_id="t/2004/23#s3", number="3", text="3. Theft A young person steals.", part="Chapter VI")
    code = code.model_copy(update={"sections": [*code.sections, other]})
    links = find_links([code])
    assert links.definitions["t/2004/23"][0].scope == "part:Chapter V > Part III"
    assert [
        d.term for d in links.defined_in(code.sections[1].text, code.doc_key, "t/2004/23#s2", "Chapter V, Part III")
    ]
    assert links.defined_in(other.text, code.doc_key, "t/2004/23#s3", "Chapter VI") == []


def test_every_definition_of_a_long_scoped_interpretation_section_keeps_its_scope() -> None:
    terms = " ".join(f"“term {n}” means a thing described at length, with many words, number {n};" for n in range(9))
    code = law(
        "t/2004/24", "Criminal Code", "",
        f"1. Interpretation in Chapter IV In this Chapter— {terms} “public place” means any place the public may "
        "enter, whether on payment or otherwise, as referred to in this Chapter.",
        "2. Interpretation (1) In this Act— “court” means the High Court. (2) In this section, “day” means a day.",
        part="Chapter IV",
    )  # fmt: skip
    found = {d.term: d.scope for d in find_links([code]).definitions["t/2004/24"]}
    assert found["public place"] == found["term 0"] == "part:Chapter IV"
    assert found["court"] == "" and found["day"] == "t/2004/24#s2"


def test_a_definition_ends_where_the_next_item_or_provision_begins() -> None:
    abuse = law(
        "t/2006/14", "Domestic Violence Act", "",
        "3. Meaning (1) Violence includes abuse. (2) In this Act— (a) subsection (1)(a) “physical abuse” includes any "
        "act of violence; (b) subsection (1)(b) “sexual abuse” includes degrading conduct. (3) This applies widely.",
    )  # fmt: skip
    found = {d.term: d.text for d in find_definitions(abuse)}
    assert found == {
        "physical abuse": "“physical abuse” includes any act of violence",
        "sexual abuse": "“sexual abuse” includes degrading conduct.",
    }


def test_terms_that_share_one_meaning_are_each_defined_and_end_no_definition_before_them() -> None:
    market = law(
        "t/2001/3", "Market Stalls Act", "",
        "2. Interpretation In this Act— “stall” means a booth let by a council; “ trader ” or “stallholder”, in "
        "relation to a market, means a person to whom a stall is let; “sell”, “selling” and “sale” include barter; "
        "“council” means a local authority; “levy” [definition repealed by Act 2 of 2009] “ pitch ”, for the purposes "
        "of a market day, means a place marked out for a stall; “ rent ”— (a) in relation to a stall, means the sum "
        "a trader pays.",
    )  # fmt: skip
    found = {d.term: d.text for d in find_definitions(market)}
    assert found == {
        "stall": "“stall” means a booth let by a council",
        "trader": "“ trader ” or “stallholder”, in relation to a market, means a person to whom a stall is let",
        "stallholder": "“ trader ” or “stallholder”, in relation to a market, means a person to whom a stall is let",
        "sell": "“sell”, “selling” and “sale” include barter",
        "selling": "“sell”, “selling” and “sale” include barter",
        "sale": "“sell”, “selling” and “sale” include barter",
        "council": "“council” means a local authority",
        "pitch": "“ pitch ”, for the purposes of a market day, means a place marked out for a stall",
        "rent": "“ rent ”— (a) in relation to a stall, means the sum a trader pays.",
    }
    # A definition that is a list's item ends where the next item begins.
    fees = law("t/2001/4", "Market Fees Act", "", "5. Fees (1) For this section— (a) “fee” does not include a fine; "
               "(b) the council shall publish its fees.")  # fmt: skip
    assert [d.text for d in find_definitions(fees)] == ["“fee” does not include a fine"]


def test_a_run_of_terms_begins_only_where_a_definition_may_and_never_holds_a_clause_of_the_meaning_before() -> None:
    court = law(
        "t/2001/5", "Small Claims Act", "",
        "2. Interpretation (1) In this Act— “claim” includes “counter-claim”, and “plaintiff” and “defendant” include "
        "a party to a counter-claim; “small area” means any area which is— (a) a ward; or (b) a village ', or (c) a "
        "township as defined in the Survey Act', “large area” means any other area; (e) in paragraph (a) “levy” means "
        "a rate; (f) the court shall sit daily. (2) A claim shall be heard within a month.",
    )  # fmt: skip
    found = {d.term: d.text for d in find_definitions(court)}
    assert found == {
        # A quoted phrase right after a definition's verb is its meaning, not a term.
        "claim": "“claim” includes “counter-claim”",
        "plaintiff": "“plaintiff” and “defendant” include a party to a counter-claim",
        "defendant": "“plaintiff” and “defendant” include a party to a counter-claim",
        # A single-quoted clause with a bracket belongs to the meaning before it.
        "small area": "“small area” means any area which is— (a) a ward; or (b) a village ', or (c) a township as "
        "defined in the Survey Act'",
        "large area": "“large area” means any other area",
        # "(a)" after "paragraph" names an item; the definition's own is (e), and it ends where (f) begins.
        "levy": "“levy” means a rate",
    }


def test_references_resolve_to_the_finest_provision_that_exists() -> None:
    links = find_links([LABOUR, PENSIONS])
    pairs = {(r.source, r.target, r.relation) for r in links.references}
    assert ("t/1985/16#s3(2)", "t/1985/16#s3(1)", "subject to") in pairs
    # "paragraph (b) of subsection (4) applies": the provision applied is what the words depend on.
    assert ("t/1985/16#s3(2)", "t/1985/16#s3(4)(b)", "applying") in pairs
    assert ("t/1985/16#s4(1)", "t/1985/16#s3(4)(b)", "in terms of") in pairs  # section 3(4)(b)
    assert {("t/1985/16#s4(1)", "t/1985/16#s5", ""), ("t/1985/16#s4(1)", "t/1985/16#s6", "")} <= pairs
    assert ("t/1985/16#s4(2)", "t/1985/16#s4(1)", "referred to in") in pairs
    assert ("t/1985/16#s2", "t/1985/16#s3", "") in pairs  # "has the meaning given in section 3"
    # Another law, named by its chapter or by its title; "that Act" and "Act 3 of 2022" name nothing it can match,
    # and section 99 does not exist: no link rather than a wrong one.
    assert ("t/2000/2#s1", "t/1985/16#s4", "in terms of") in pairs
    assert ("t/2000/2#s1", "t/1985/16#s5", "") in pairs
    targets = {r.target for r in links.references}
    assert "t/1985/16#s99" not in targets and "t/1985/16#s6" not in {
        r.target for r in links.references if r.source.startswith("t/2000/2")
    }
    assert not [r for r in links.references if r.source.startswith("t/1985/16#s6")]
    # Both directions, as the reader shows them.
    assert {r.source for r in links.referred_by("t/1985/16#s4")} == {"t/2000/2#s1"}
    assert {r.target for r in links.refers_to("t/1985/16#s4")} >= {"t/1985/16#s5", "t/1985/16#s3(4)(b)"}


def test_older_drafting_numbers_in_words_notes_and_other_laws_subsections() -> None:
    older = law(
        "t/1960/1", "Roads Act", "Chapter 13:12",
        "1. Gates (1) A gate erected in terms of paragraph (b) of subsection (4) of section three stays. [subsection "
        "as amended by section 2 of Act No. 22 of 2001] (2) The officer referred to in paragraph (a) of subsection (1) "
        "of section 4 of the Labour Act [Chapter 28:01] may enter. (3) Subject to section forty-one, this applies.",
        "2. Fees Fees under subsection (1) of that section are payable.",
        "3. Roads (4) The roads— (a) are public; (b) are open.",
    )  # fmt: skip
    links = find_links([LABOUR, older])
    got = {(r.source, r.target) for r in links.references if r.source.startswith("t/1960/1")}
    assert ("t/1960/1#s1(1)", "t/1960/1#s3(4)(b)") in got
    assert ("t/1960/1#s1(2)", "t/1985/16#s4(1)") in got  # s4 of the Labour Act has no paragraph (a) in (1)
    # Section forty-one does not exist; the note names an amending law; "that section" cannot be resolved.
    assert got == {("t/1960/1#s1(1)", "t/1960/1#s3(4)(b)"), ("t/1960/1#s1(2)", "t/1985/16#s4(1)")}


def test_a_law_is_found_only_among_its_own_tenants_documents_and_schedules_by_their_part() -> None:
    private = law("acme/1", "Acme Policy", "", "1. Staff Dismissal follows section 4 of the Labour Act.", tenant="acme")
    assert find_links([LABOUR, private]).refers_to("acme/1#s1") == []
    scheduled = law("t/3/3", "Fees Act", "", "1. Fees The fees in the First Schedule apply.")
    schedule = (
        law("t/3/3", "", "", "", part="Schedule 1, Fees")
        .sections[0]
        .model_copy(update={"section_id": "t/3/3#sch1", "number": "S1", "part": "Schedule 1, Fees"})
    )
    scheduled = scheduled.model_copy(update={"sections": [*scheduled.sections, schedule]})
    assert [r.target for r in find_links([scheduled]).references] == ["t/3/3#sch1"]


def test_links_round_trip_and_an_old_data_dir_has_none() -> None:
    links = find_links([LABOUR, PENSIONS])
    assert Links.model_validate(links.model_dump()) == links
    assert Links().referred_by("t/1985/16#s4") == []
    # Found by this code's reader; what a data dir ingested before readers were versioned holds is stale.
    assert links.reader == LINKS_READER and not links.stale and Links().stale


async def test_links_an_older_reader_found_are_reported_until_ingest_reads_them_again(
    private_data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stored = private_data_dir / "objects" / LINKS_KEY
    old = json.loads(stored.read_text(encoding="utf-8"))
    old.pop("reader")  # as a data dir ingested before the reader's version was kept
    stored.write_text(json.dumps(old), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="api.tools.corpus"):
        with LiveServer(create_app(Settings(data_dir=private_data_dir))) as server:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                ready = (await client.get("/readyz")).json()
    assert ready["status"] == "ready" and ready["links"] == "stale"
    assert any("gweta ingest" in record.getMessage() for record in caplog.records)
    # Ingesting again (nothing changed in the documents) reads the links with this code's reader.
    await ingest_into(Settings(data_dir=private_data_dir), Path("sample_corpus"))
    assert json.loads(stored.read_text(encoding="utf-8"))["reader"] == LINKS_READER
    with LiveServer(create_app(Settings(data_dir=private_data_dir))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            assert (await client.get("/readyz")).json()["links"] == "current"


async def test_the_reader_shows_definitions_references_and_what_refers_to_a_section(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    await ingest_into(Settings(data_dir=data_dir), Path("sample_corpus"))
    with LiveServer(create_app(Settings(data_dir=data_dir))) as server:
        async with httpx.AsyncClient(base_url=server.url) as client:
            listing = (await client.get("/api/v1/documents")).json()["documents"]
            marriage = next(d["doc_key"] for d in listing if "Marriage" in d["title"])
            outline = (await client.get(f"/api/v1/documents/{marriage}")).json()["sections"]
            fragments = [s["section_id"].partition("#")[2] for s in outline]
            views = [(await client.get(f"/api/v1/documents/{marriage}/provisions/{f}")).json() for f in fragments]
    # The minimum-age section's "subsection (1)" points into itself; the interpretation section's "under section 6"
    # points to the section on marriage officers, which then lists it as referring to it.
    refers = {link["provision_id"] for view in views for link in view["refers_to"]}
    assert any(p.endswith("(1)") for p in refers)
    by = {view["provision_id"]: view["referred_by"] for view in views}
    assert any(links for links in by.values())
    # A reference says where its words are in the referring section's text (the page links them there) and how the
    # other provision is cited.
    made = [(view, link) for view in views for link in view["refers_to"]]
    assert made and all(v["section"]["text"][k["at"] : k["at"] + len(k["words"])] == k["words"] for v, k in made)
    assert {k["cite_as"] for _, k in made} >= {"Marriage Act [Chapter 5:17], s 6"}
    defined = {d["term"] for view in views for d in view["definitions"]}
    assert {"spouse", "marriage officer"} <= defined
    for view in views:
        for d in view["definitions"]:
            assert d["text"].split("”")[0].strip('“"') in d["text"]


DETENTION = """<!-- id: test/act/1979/18; jurisdiction: TEST -->
# Border Control Act
[Chapter 4:02]

1. Short title
This Act may be cited as the Border Control Act.

4. Arrest of persons entering unlawfully
(1) Subject to section 9, a border officer may arrest any person who enters the country unlawfully and
may detain that person while inquiries are made.
(2) A person arrested under subsection (1) shall be told why.

9. Conditions of custody
(1) A person so held shall be kept in a police cell or other convenient place for not more than
fourteen days.
(2) The Minister may release such a person on a bond.
"""


async def test_research_fetches_the_provision_the_evidence_is_subject_to(tmp_path: Path) -> None:
    source = tmp_path / "laws"
    source.mkdir()
    (source / "border.md").write_text(DETENTION)
    question = QueryRequest(q="Can a border officer arrest and detain someone who entered unlawfully?", session_id="a")
    for follow, session in ((3, "followed"), (0, "not-followed")):
        # One hit a search, so section 9 is not found by the search itself.
        retrieval = {"follow_references": follow, "top_k": 1}
        settings = Settings(data_dir=tmp_path / f"data-{session}", retrieval=retrieval)
        await ingest_into(settings, source)
        async with open_services(settings) as services:
            events = [
                e async for e in services.orchestrator.stream(question.model_copy(update={"session_id": session}))
            ]
        final = events[-1]
        assert isinstance(final, FinalEvent)
        followed = [step for step in final.research if step.kind == "reference"]
        if follow:
            # Section 4 is found by the search; what it is subject to comes in without one.
            assert [step.query for step in followed] == ["section 9"]
            assert followed[0].added == ["test/act/1979/18#s9/c0"]
        else:
            assert followed == []


DIVORCE = law(
    "t/1985/33", "Matrimonial Causes Act", "Chapter 5:13",
    *(f"{n}. Section {n} The court may make order number {n}." for n in range(1, 15)),
)  # fmt: skip


def test_a_range_of_sections_names_every_section_in_it() -> None:
    marriages = law(
        "t/2022/1", "Marriages Act", "Chapter 5:15",
        *(f"{n}. Filler {n} Words." for n in range(1, 7)),
        "7. Degrees Persons within the prohibited degrees may not marry.",
        "8. Partnerships On dissolution, sections 7 to 11 of the Matrimonial Causes Act [Chapter 5:13] shall, with "
        "necessary changes, apply. Subsections (2) to (4) of section 9 of the Matrimonial Causes Act apply too.",
        "9. Notices (1) A notice. (2) Subject to subsections (3) to (5), a notice lapses. (3) One. (4) Two. (5) Three.",
        "10. Long Nothing in sections 2 to 4 of this Act affects a will; sections 1 to 14 of the Matrimonial Causes "
        "Act shall not apply.",
    )  # fmt: skip
    divorce = DIVORCE.model_copy(update={"sections": [
        *DIVORCE.sections[:8],
        Section(section_id="t/1985/33#s9", number="9", text="9. Nine (1) a. (2) b. (3) c. (4) d. (5) e.", ref="s9"),
        *DIVORCE.sections[9:],
    ]})  # fmt: skip
    links = find_links([marriages, divorce])
    made = {(r.source, r.target, r.relation) for r in links.refers_to("t/2022/1#s8")}
    # "sections 7 to 11 of" another law: each of its sections 7 to 11, never this law's own section 7, and what the
    # words after make them ("shall … apply"): provisions the referring one applies.
    assert {t for _, t, _ in made} == {
        *(f"t/1985/33#s{n}" for n in range(7, 12)), "t/1985/33#s9(2)", "t/1985/33#s9(3)", "t/1985/33#s9(4)"
    }  # fmt: skip
    assert {rel for *_, rel in made} == {"applying"}
    inner = {(r.target, r.relation) for r in links.refers_to("t/2022/1#s9")}
    assert inner == {(f"t/2022/1#s9({n})", "subject to") for n in (3, 4, 5)}
    # A range longer than a dozen sections stands for its ends alone; "shall not apply" and "nothing in … affects"
    # apply nothing.
    long = {(r.target, r.relation) for r in links.refers_to("t/2022/1#s10")}
    assert long == {("t/2022/1#s2", ""), ("t/2022/1#s3", ""), ("t/2022/1#s4", ""), ("t/1985/33#s1", ""),
                    ("t/1985/33#s14", "")}  # fmt: skip


def test_a_law_named_by_a_short_name_its_citing_law_defines_resolves_to_that_law() -> None:
    marriages = law(
        "t/2022/1", "Marriages Act", "Chapter 5:15",
        "1. Interpretation In this Act— “Divorce Code” means the Matrimonial Causes Act [Chapter 5:13]; “principal "
        "Act” means the Matrimonial Causes Act [Chapter 5:13]; “Other Code” means any code the Minister approves.",
        "2. Orders An order specified in section 7(2) of the Divorce Code, or one in terms of section 8 of the "
        "principal Act, binds. Section 9 of the Other Code and section 10 of the Unknown Code do not.",
    )  # fmt: skip
    links = find_links([marriages, DIVORCE])
    made = {(r.target, r.relation, r.words) for r in links.refers_to("t/2022/1#s2")}
    assert made == {
        ("t/1985/33#s7", "specified in", "section 7(2) of the Divorce Code"),
        ("t/1985/33#s8", "in terms of", "section 8 of the principal Act"),
    }
