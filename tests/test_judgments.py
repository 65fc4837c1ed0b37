"""Judgments: their headings read into court, date, citation, parties and judges; cited in their own style; linked
to the provisions they cite, which list the cases that cite them."""

import json
from pathlib import Path

import pytest

from ingestion import parsers
from ingestion.parsers.judgment import read_judgment

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
