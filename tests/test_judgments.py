"""Judgments: their headings read into court, date, citation, parties and judges; cited in their own style; linked
to the provisions they cite, which list the cases that cite them."""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import async_playwright, expect

from api.main import create_app
from api.schemas.documents import Document
from api.schemas.events import Citation
from api.settings import LimitsSettings, Settings
from api.text.citation_style import cite_as
from api.tools.corpus import Corpus
from api.tools.links import find_links
from api.tools.object_store import build_object_store
from ingestion import parsers
from ingestion.parsers.judgment import read_judgment
from ingestion.parsers.structure import Line, build_document
from tests.conftest import ingest_into
from tests.servers import LiveServer
from tests.sse import collect
from tests.test_web import CHROMIUM, CHROMIUM_ARGS

PDFS = "corpus/zimbabwe_pdfs"
LABELLED = Path("evaluation/judgments_labelled.jsonl")


def labelled() -> list[dict[str, object]]:
    return [json.loads(line) for line in LABELLED.read_text().splitlines() if line.strip()]


def test_the_labels_cover_every_shared_judgment(shared_data: Path) -> None:
    manifest = json.loads((shared_data / PDFS / "manifest.json").read_text())
    judgments = {entry["file"] for entry in manifest if entry["kind"] == "judgment"}
    assert {row["file"] for row in labelled()} == judgments and len(judgments) == 12


@pytest.mark.parametrize("row", labelled(), ids=lambda row: str(row["file"])[:24])
def test_each_shared_judgments_heading_is_read_as_labelled_by_hand(shared_data: Path, row: dict[str, object]) -> None:
    path = shared_data / PDFS / str(row["file"])
    (doc,) = parsers.parse(path, path.read_bytes())
    judgment = doc.judgment
    assert judgment is not None and doc.doc_type == "judgment"
    got = {
        "file": row["file"],
        "court": judgment.court,
        "decided": judgment.decided,
        "neutral_citation": judgment.neutral_citation,
        "citations": judgment.citations,
        "case_numbers": judgment.case_numbers,
        "case_name": judgment.case_name,
        "applicants": [p.name for p in judgment.parties if p.side == "applicant"],
        "respondents": [p.name for p in judgment.parties if p.side == "respondent"],
        "roles": sorted({f"{p.side}:{p.role}" for p in judgment.parties}),
        "judges": judgment.judges,
    }
    assert got == row
    # The case name is the title, the decision date the date filters go by, the citation's jurisdiction its style's.
    assert doc.title == judgment.case_name and doc.date == judgment.decided and doc.jurisdiction == "ZW"


def test_a_long_line_of_hearing_dates_stays_in_the_heading_and_the_judges_words_open_the_body(
    shared_data: Path,
) -> None:
    chitando = next((shared_data / PDFS).glob("Chitando_v_*.docx"))
    (doc,) = parsers.parse(chitando, chitando.read_bytes())
    assert "31 January 2025" in doc.sections[0].text and doc.sections[1].text.startswith("1. Kumbirai Manyika Kangai")
    washaya = next((shared_data / PDFS).glob("Washaya_v_*.docx"))
    (doc,) = parsers.parse(washaya, washaya.read_bytes())
    assert doc.sections[1].text.startswith("1. MUCHAWA J: The plaintiff filed this action")
    assert "MUCHAWA J: The plaintiff" not in doc.sections[0].text


def test_headings_of_other_common_law_courts_are_read_by_the_same_rules() -> None:
    english = """Neutral Citation Number: [2023] EWCA Civ 1004
Case No: CA 2022/1234
IN THE COURT OF APPEAL (CIVIL DIVISION)
ON APPEAL FROM THE HIGH COURT OF JUSTICE
Royal Courts of Justice
Judgment delivered: 24 August 2023
Before:
LORD JUSTICE LEWISON
LADY JUSTICE ANDREWS
Between:
ACME LIMITED
Appellant
- and -
JOHN SMITH
Respondent
Ms A Brown (instructed by X LLP) for the Appellant""".splitlines()
    judgment, code = read_judgment(english)
    assert code == "UK" and judgment.neutral_citation == "[2023] EWCA Civ 1004" and judgment.court == "Court of Appeal"
    assert (judgment.decided, judgment.case_name) == ("2023-08-24", "Acme Limited v John Smith")
    assert judgment.judges == ["Lord Justice Lewison", "Lady Justice Andrews"]
    assert [(p.side, p.role) for p in judgment.parties] == [("applicant", "appellant"), ("respondent", "respondent")]
    south_african = """REPORTABLE
IN THE SUPREME COURT OF APPEAL OF SOUTH AFRICA
Case no: 123/2020
In the matter between:
THE MINISTER OF POLICE
Appellant
and
THANDI MOKOENA
Respondent
Neutral citation: Minister of Police v Mokoena (123/2020) [2021] ZASCA 45 (20 April 2021)
Coram: PONNAN and MOLEMELA JJA
Heard: 2 March 2021
Delivered: 20 April 2021""".splitlines()
    judgment, code = read_judgment(south_african)
    assert code == "ZA" and judgment.neutral_citation == "[2021] ZASCA 45" and judgment.case_numbers == ["123/2020"]
    assert judgment.court == "Supreme Court of Appeal of South Africa" and judgment.decided == "2021-04-20"
    assert judgment.case_name == "The Minister of Police v Thandi Mokoena"
    assert judgment.judges == ["Ponnan JA", "Molemela JA"]


def test_a_heading_without_a_known_citation_keeps_what_it_has() -> None:
    judgment, code = read_judgment(["JANE DOE", "v", "RICHARD ROE", "DISTRICT COURT OF ATLANTIS", "BLOGGS J",
                                    "Heard 3 May 2024; delivered 9 July 2024"])  # fmt: skip
    assert code == "" and judgment.neutral_citation == "" and judgment.citations == []
    assert (judgment.court, judgment.judges, judgment.decided) == (
        "District Court of Atlantis",
        ["Bloggs J"],
        "2024-07-09",
    )
    assert judgment.case_name == "Jane Doe v Richard Roe"


MATRIMONIAL = """<!-- id: test/act/1985/33; jurisdiction: ZW -->
# Matrimonial Causes Act
[Chapter 5:13]

1. Short title
This Act may be cited as the Matrimonial Causes Act.

7. Division of assets and maintenance orders
(1) Subject to this section, in granting a decree of divorce, the court may make an order dividing the assets of
the spouses.
(4) In making an order in terms of subsection (1) the court shall have regard to all the circumstances of the case.

8. Variation of orders
An order made in terms of section 7 may be varied on good cause shown.
"""


@pytest.fixture(scope="module")
async def cited(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Path, str]]:
    """A data dir holding a short Act of our own and a shared judgment that cites its section 7 ("s 7 of the
    Matrimonial Causes Act"), ingested by the real pipeline; with the judgment's doc key."""
    root = tmp_path_factory.mktemp("cases")
    source = root / "source"
    source.mkdir()
    (source / "matrimonial.md").write_text(MATRIMONIAL)
    melo = next((shared_data / PDFS).glob("Melo_v_Kandibero*.docx"))
    (source / melo.name).write_bytes(melo.read_bytes())
    report = await ingest_into(Settings(data_dir=root / "data"), source)
    assert not [d for d in report.documents if d.status == "failed"]
    yield root / "data", melo.stem


async def test_the_reader_of_a_section_lists_the_cases_that_cite_it(cited: tuple[Path, str]) -> None:
    data_dir, melo = cited
    with LiveServer(create_app(Settings(data_dir=data_dir))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            section = (await client.get("/api/v1/documents/test/act/1985/33/provisions/s7")).json()
            other = (await client.get("/api/v1/documents/test/act/1985/33/provisions/s1")).json()
            outline = (await client.get(f"/api/v1/documents/{melo}")).json()
            paragraph = section["cited_by_cases"][0]["provision_id"].partition("#")[2]
            citing = (await client.get(f"/api/v1/documents/{melo}/provisions/{paragraph}")).json()
    (case,) = section["cited_by_cases"]
    assert case["title"] == "Kudzanayi Melo v Austin Kandibero" and case["words"] == "s 7 of the Matrimonial Causes Act"
    assert case["cite_as"] == "[2023] ZWHHC 199, para 15" and case["provision_id"].startswith(f"{melo}#p15")
    assert (case["court"], case["decided"]) == ("High Court of Zimbabwe", "2023-05-24")
    assert case["paragraphs"] == [case["provision_id"]]
    # Section 8's own reference stays in referred_by; the judgment is listed only as a case; section 1 has none.
    assert {link["provision_id"] for link in section["referred_by"]} == {"test/act/1985/33#s8"}
    assert other["cited_by_cases"] == []
    # The citing paragraph links back to the section it cites, and the judgment's outline carries its metadata.
    assert "test/act/1985/33#s7" in {link["provision_id"] for link in citing["refers_to"]}
    assert "s 7 of the Matrimonial Causes Act" in citing["section"]["text"]
    assert outline["judgment"]["neutral_citation"] == "[2023] ZWHHC 199" and outline["title"] == case["title"]
    assert outline["date"] == "2023-05-24" and outline["jurisdiction"] == "ZW"


async def test_a_judgments_paragraph_is_cited_as_the_judgment_cites_itself(cited: tuple[Path, str]) -> None:
    data_dir, melo = cited
    settings = Settings(data_dir=data_dir)
    corpus = await Corpus.load(build_object_store(settings.object_store, data_dir))
    entry = corpus.manifest.documents[melo]
    assert entry.judgment is not None and entry.judgment.neutral_citation == "[2023] ZWHHC 199"
    chunk = next(c for c in corpus.chunks.values() if c.section_id == f"{melo}#p12")
    citation = Citation(index=1, doc_key=melo, title=entry.title, section_id=chunk.section_id,
                        provision_id=chunk.provision_id, section="paragraph 12", chunk_id=chunk.chunk_id,
                        quote=chunk.text[:40])  # fmt: skip
    assert corpus.styled(citation).cite_as == "[2023] ZWHHC 199, para 12"
    # Without a citation in its heading, a judgment is cited by its title; a statute as before.
    assert cite_as("Doe v Roe", "paragraph 3", "x/j/1#p3", "", "ZW") == "Doe v Roe, para 3"
    assert cite_as("Doe v Roe", "paragraph 3", "x/j/1#p3", "", "", citation="[2024] ZWSC 2") == (
        "[2024] ZWSC 2, paragraph 3"
    )
    act = Citation(index=2, doc_key="test/act/1985/33", title="Matrimonial Causes Act",
                   section_id="test/act/1985/33#s7", provision_id="test/act/1985/33#s7(4)", section="section 7(4)",
                   chunk_id="test/act/1985/33#s7/c0", quote="all the circumstances")  # fmt: skip
    assert corpus.styled(act).cite_as == "Matrimonial Causes Act [Chapter 5:13], s 7(4)"


def act(doc_key: str, title: str, chapter: str, *sections: str) -> Document:
    text = f"<!-- id: {doc_key}; jurisdiction: ZW -->\n# {title}\n[Chapter {chapter}]\n\n" + "\n\n".join(sections)
    (doc,) = parsers.parse(Path(f"{doc_key.replace('/', '_')}.md"), text.encode())
    return doc


def test_a_judgment_links_only_to_the_laws_it_names() -> None:
    marriages = act("t/act/2022/1", "Marriages Act, 2022", "5:15", "2. Interpretation Words mean things.",
                    "3. Minimum age (1) No person under eighteen may marry. (2) Consent is needed.", "4. Banns",
                    "5. Licences")  # fmt: skip
    war = act("t/act/1984/33", "War Marriages Validation Act", "5:15", "3. Validation Marriages are valid.")
    roads = act("t/act/1960/1", "Roads Act", "6:13", "2. Roads Roads are public.")
    minors = act(
        "t/act/2001/2", "Minors Act", "5:20", "1. Age Age is as in section 3 of the Marriages Act [Chapter 5:15]."
    )
    heading = [Line("JANE DOE"), Line("versus"), Line("JOHN DOE"), Line("HIGH COURT OF ZIMBABWE"), Line("BLOGGS J")]
    paragraphs = [
        "The parties married in terms of section 3 of the Marriages Act [Chapter 5:15] in 2023.",
        "Section 3 requires consent; see subsection (2) and paragraph (a) and the First Schedule.",
        "The court applied s 3(1) of the Marriages Act and ss 4 and 5 of that Act.",
        "Banns are read under s 2 of the Marriages Act [Chapter 6:13], the court said.",
    ]
    case = build_document(heading + [Line(f"{i}. {text}") for i, text in enumerate(paragraphs, 1)], doc_key="j/1",
                          content_hash="x", source="", doc_type="judgment", unit="p")  # fmt: skip
    links = find_links([marriages, war, roads, minors, case])
    made = {(r.source, r.target) for r in links.references if r.source.startswith("j/1")}
    # Bare numbers in a judgment are never its own paragraphs; "that Act" is not resolved; a chapter number two
    # laws share is narrowed by the title named, and a wrong one (6:13 is the Roads Act) gives way to the title.
    assert made == {("j/1#p1", "t/act/2022/1#s3"), ("j/1#p3", "t/act/2022/1#s3(1)"), ("j/1#p4", "t/act/2022/1#s2")}
    assert ("t/act/2001/2#s1", "t/act/2022/1#s3") in {(r.source, r.target) for r in links.references}
    # A statute is still taken at its chapter number alone where only one law has it (a renamed Act keeps it).
    renamed = act("t/act/2005/3", "Fees Act", "5:21", "1. Fees As in section 1 of the Minors (Age) Act [Chapter 5:20].")
    assert ("t/act/2005/3#s1", "t/act/2001/2#s1") in {
        (r.source, r.target) for r in find_links([minors, renamed]).references
    }


def test_the_shared_judgments_link_to_the_acts_they_cite_as_labelled_by_hand(shared_data: Path) -> None:
    acts = shared_data / "corpus/zimbabwe_legislation/acts.jsonl"
    documents = parsers.parse(acts, acts.read_bytes())
    judgments = [parsers.parse(p, p.read_bytes())[0] for p in (shared_data / PDFS / str(r["file"]) for r in labelled())]
    links = find_links([*documents, *judgments])
    files = {j.doc_key: Path(j.source).name for j in judgments}
    made = {(files[r.source.split("#")[0]], r.source.partition("#")[2], r.words, r.target)
            for r in links.references if r.source.split("#")[0] in files}  # fmt: skip
    rows = [json.loads(line) for line in Path("evaluation/judgment_references_labelled.jsonl").read_text().splitlines()]
    assert all(row["correct"] for row in rows)
    assert made == {(row["file"], row["paragraph"], row["words"], row["target"]) for row in rows}
    # Every link's words are in the paragraph it is made in.
    paragraphs = {s.section_id: s.text for j in judgments for s in j.sections}
    for reference in links.references:
        if reference.source.split("#")[0] in files:
            section = reference.source.split("(")[0]
            assert reference.words.split(" of the ")[0] in " ".join(paragraphs[section].split())


async def test_the_web_reader_lists_the_cases_and_opens_the_citing_paragraph(cited: tuple[Path, str]) -> None:
    data_dir, melo = cited
    settings = Settings(data_dir=data_dir, limits=LimitsSettings(requests_per_minute=0))
    errors: list[str] = []
    with LiveServer(create_app(settings)) as server:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                page.on("pageerror", lambda error: errors.append(str(error)))
                await page.goto(f"{server.url}/?doc=test/act/1985/33&provision=s7")
                cases = page.locator("#reader .reader-cases")
                await expect(cases.locator("h3")).to_have_text("Cases that cite this section")
                await expect(cases.locator("li")).to_have_count(1)
                await expect(cases.locator("li")).to_contain_text("[2023] ZWHHC 199, para 15, 2023-05-24")
                await cases.locator("button", has_text="Kudzanayi Melo v Austin Kandibero").click()
                await expect(page.locator("#reader-title")).to_have_text("Kudzanayi Melo v Austin Kandibero")
                await expect(page.locator("#reader-meta")).to_have_text(
                    "[2023] ZWHHC 199 · High Court of Zimbabwe · 2023-05-24 · Tsanga J"
                )
                current = page.locator("#reader .reader-section.current")
                await expect(current.locator("h3")).to_contain_text("paragraph 15 — ")
                await expect(current.locator("mark")).to_have_text("s 7 of the Matrimonial Causes Act")
                await expect(page.locator("#reader .reader-cases")).to_have_count(0)
            finally:
                await browser.close()
    assert errors == []


def test_a_pdf_judgments_paragraphs_are_read_from_where_its_lines_stop_short(shared_data: Path) -> None:
    path = next((shared_data / PDFS).glob("ZIMSEC_v_*.pdf"))
    (doc,) = parsers.parse(path, path.read_bytes())
    preamble, *paragraphs = doc.sections
    assert "SUPREME COURT OF ZIMBABWE" in preamble.text and "This is an appeal" not in preamble.text
    assert len(paragraphs) > 50 and paragraphs[0].text.startswith("1. PATEL JA: This is an appeal against")
    assert paragraphs[0].label == "paragraph 1" and paragraphs[0].pages == (1, 1)
    # A paragraph runs on over a page break; the order's items are paragraphs of their own.
    assert any(p.pages and p.pages[0] < p.pages[1] for p in paragraphs)
    order = [p for p in paragraphs if "1. The appeal be and is hereby allowed with costs." in p.text]
    assert len(order) == 1 and order[0].text.endswith("allowed with costs.")


async def test_every_citation_of_a_judgment_in_an_answer_carries_its_own_citation(cited: tuple[Path, str]) -> None:
    data_dir, melo = cited
    question = "What share of the value of the property did the plaintiff seek in Kudzanayi Melo v Austin Kandibero?"
    with LiveServer(create_app(Settings(data_dir=data_dir))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            events = await collect(client, "GET", "/api/v1/query/stream", params={"q": question})
    streamed = [e.json()["citation"] for e in events if e.event == "citation"]
    final = next(e.json() for e in events if e.event == "final")
    cases = [c for c in [*streamed, *final["citations"]] if c["doc_key"] == melo]
    assert cases and final["outcome"] == "answered"
    for citation in cases:
        number = citation["section_id"].partition("#p")[2]
        assert (
            citation["cite_as"] == f"[2023] ZWHHC 199, para {number}" and citation["section"] == f"paragraph {number}"
        )
    assert any("50 %" in c["quote"] for c in cases)
