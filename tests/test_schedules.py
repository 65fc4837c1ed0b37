"""A schedule's provisions are labelled as what they are ("paragraph 4 of Schedule 28"), never as the Act's own
section of the same number, in every place a label is shown; a definition inside a schedule applies only within it.

The corpus is built here: an Act with its own section 4 and a Schedule whose paragraph 4 shares the number and whose
paragraph 1 defines a word the Act's section 4 also uses ("tax"). It is ingested from JSONL into Milvus Lite as
``gweta ingest`` does, and asked questions through the real orchestrator (the quote-only path)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from api.auth import Caller
from api.composer.citations import make_citation
from api.composer.judge.gate import gate_model_answer
from api.composer.prompts import format_passages
from api.schemas.documents import Chunk, Document, Section
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import Settings
from api.text.citation_style import cite_as, load_styles
from api.text.schedules import schedule_of, schedule_unit, split_label, unpinpointed
from api.tools.links import find_links
from api.tools.reader import DocumentReader
from api.tools.whatsapp import source_line
from ingestion.parsers import ParseOptions
from ingestion.parsers.jsonl import parse_jsonl
from tests.conftest import ingest_into

KEY = "zw/act/2031/7"
ACT = {
    "id": KEY,
    "title": "Fuel Levies Act",
    "chapter": "Chapter 23:99",
    "kind": "act",
    "jurisdiction": "ZW",
    "url": "https://example.test/akn/zw/act/2031/7",
    "expression_date": "2031-05-01",
    "sections": [
        {"ref": "s1", "section": "1", "heading": "Interpretation", "part": "Part I",
         "text": "1. Interpretation In this Act— “levy” means the fuel levy charged under section 4."},
        {"ref": "s4", "section": "4", "heading": "Charge of fuel levy", "part": "Part II",
         "text": "4. Charge of fuel levy (1) There shall be charged, levied and collected a fuel levy on every litre "
                 "of petrol sold by a licensed fuel retailer. (2) The levy is a tax payable by the licensed fuel "
                 "retailer at the end of each month."},
        {"ref": "s5", "section": "5", "heading": "Schedules", "part": "Part II",
         "text": "5. Schedules The Second Schedule has effect as part of this Act."},
        {"ref": "s1", "section": "1", "heading": "Interpretation", "part": "Second Schedule",
         "text": "1. Interpretation In this Schedule— “tax” means the carbon tax on imported coal, payable by the "
                 "importer of the coal."},
        {"ref": "s4", "section": "4", "heading": "Rate of carbon tax on imported coal", "part": "Second Schedule",
         "text": "4. Rate of carbon tax on imported coal (1) The carbon tax on imported coal shall be charged at the "
                 "rate of nine dollars for every tonne of coal imported. (2) The tax shall be paid within thirty "
                 "days of the coal's arrival."},
    ],
}  # fmt: skip
SCHEDULE_PARAGRAPH = f"{KEY}#s4~2"
SCHEDULE_DEFINITION = f"{KEY}#s1~2"
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def parsed() -> Document:
    (document,) = parse_jsonl(Path("acts.jsonl"), json.dumps(ACT).encode(), ParseOptions())
    return document


def test_a_schedules_provisions_are_labelled_by_their_schedule_and_keep_their_ids() -> None:
    document = parsed()
    # Ids stay as they were (a gold reference "law id + ref" resolves to "<id>#<ref>", the repeat to "~2").
    ids = [f"{KEY}#s1", f"{KEY}#s4", f"{KEY}#s5", SCHEDULE_DEFINITION, SCHEDULE_PARAGRAPH]
    assert [s.section_id for s in document.sections] == ids
    assert [s.label for s in document.sections] == [
        "section 1", "section 4", "section 5", "paragraph 1 of the Second Schedule",
        "paragraph 4 of the Second Schedule",
    ]  # fmt: skip


def test_which_part_names_a_schedule_and_what_it_calls_its_provisions() -> None:
    assert schedule_of("Schedule 28") == "Schedule 28"
    assert schedule_of("Schedule 1, Part I") == "Schedule 1, Part I"
    assert schedule_of("First Schedule > Part II > Fees payable") == "First Schedule, Part II"
    assert schedule_of("SCHEDULE 2 (Section 12) Forms") == "SCHEDULE 2"
    assert schedule_of("Part II") == schedule_of("") == schedule_of("Chapter IV, Part I") == ""
    # A schedule drafted in sections (a constitution, a university's statutes) calls its provisions sections.
    assert schedule_unit(["(1) Subject to subsection (2) …", "as provided in subsection (3)"]) == "section"
    assert schedule_unit(["(1) Subject to subparagraph (2) …", "in subsection (3) of section 8 of this Act"]) == (
        "paragraph"
    )
    constitution = Section(section_id="x#s44~2", number="44", part="Schedule 1, Chapter 4, Part 1", text="…",
                           unit="section")  # fmt: skip
    assert constitution.label == "section 44 of Schedule 1, Chapter 4, Part 1"
    assert split_label("paragraph 4(2) of Schedule 1, Part I") == ("paragraph", "4(2)", "Schedule 1, Part I")
    assert split_label("paragraph 4 of the Second Schedule") == ("paragraph", "4", "Second Schedule")
    assert split_label("section 4(2)") is None and split_label("paragraph 12") is None
    assert unpinpointed("paragraph 4(2)(a) of Schedule 28") == "paragraph 4 of Schedule 28"
    assert unpinpointed("section 3(1)") == "section 3"


def test_a_schedules_citation_is_styled_as_its_jurisdiction_cites_schedules(tmp_path: Path) -> None:
    label = "paragraph 4(2) of Schedule 28"
    assert cite_as("Income Tax Act", label, f"{KEY}#s4~2(2)", "Chapter 23:06", "ZW") == (
        "Income Tax Act [Chapter 23:06], Sch 28 para 4(2)"
    )
    assert cite_as("Tax Act", "paragraph 4 of the Second Schedule", "x#s4~2", "", "ZW") == "Tax Act, Second Sch para 4"
    assert cite_as("Income Tax Act", "paragraph 4 of Schedule 1, Part I", "x#s4~3", "", "ZW") == (
        "Income Tax Act, Sch 1, Pt I para 4"
    )
    # A jurisdiction without a schedule style names it in words, never as the Act's section 4.
    assert cite_as("Income Tax Act", label, f"{KEY}#s4~2(2)", "23:06", "") == (
        "Income Tax Act (Chapter 23:06), paragraph 4(2) of Schedule 28"
    )
    # The style is data: a file that leaves schedules out takes its "other" template.
    styles = tmp_path / "style.toml"
    styles.write_text(
        '[default]\nstatute = "{title} s.{number}"\nstatute_chaptered = "{title} cap {chapter} s.{number}"\n'
        'judgment = "{title} at [{number}]"\nother = "{title} ({label})"\n'
    )
    assert cite_as("Tax Act", label, "x#s4~2(2)", "", "KE", load_styles(styles)) == (
        "Tax Act (paragraph 4(2) of Schedule 28)"
    )


def test_every_label_of_a_schedules_chunk_names_the_schedule() -> None:
    chunk = Chunk(
        chunk_id=f"{SCHEDULE_PARAGRAPH}/c0", doc_key=KEY, section_id=SCHEDULE_PARAGRAPH, section_number="4",
        section_heading="Rate", section_label="paragraph 4 of Schedule 28", title="Fuel Levies Act", text="(1) …",
        ordinal=0,
    )  # fmt: skip
    citation = make_citation(1, chunk, "the rate of nine dollars", f"{SCHEDULE_PARAGRAPH}(1)")
    assert citation.section == "paragraph 4(1) of Schedule 28"
    assert format_passages([chunk]).startswith("[1] Fuel Levies Act, paragraph 4 of Schedule 28 Rate")
    assert "paragraph 4 of Schedule 28" in chunk.embed_text
    styled = citation.model_copy(update={"cite_as": ""})
    assert source_line([styled], "Chapter 23:99", "ZW") == "Fuel Levies Act [Chapter 23:99], Sch 28 para 4"
    # A chunk stored before labels were kept is labelled from its number, as before.
    old = chunk.model_copy(update={"section_label": "", "section_id": f"{KEY}#s4", "chunk_id": f"{KEY}#s4/c0"})
    assert make_citation(1, old, "x", f"{KEY}#s4(1)").section == "section 4(1)"


def test_a_definition_inside_a_schedule_applies_only_within_that_schedule() -> None:
    document = parsed()
    links = find_links([document])
    tax = next(d for d in links.definitions[KEY] if d.term == "tax")
    assert tax.provision_id == SCHEDULE_DEFINITION and tax.scope == "part:Second Schedule"
    act_s4 = document.sections[1]
    assert "tax" in act_s4.text
    assert [d.term for d in links.defined_in(act_s4.text, KEY, act_s4.section_id, act_s4.part)] == ["levy"]
    paragraph = document.sections[4]
    used = links.defined_in(paragraph.text, KEY, paragraph.section_id, paragraph.part)
    assert [d.term for d in used] == ["tax"]
    # One with no "In this …" at all is still the schedule's alone.
    bare = document.sections[3].model_copy(update={"text": "1. Interpretation “tax” means the carbon tax on coal."})
    alone = document.model_copy(update={"sections": [bare], "doc_key": "zw/act/2031/8"})
    assert [d.scope for d in find_links([alone]).definitions["zw/act/2031/8"]] == ["part:Second Schedule"]


@pytest.fixture(scope="module")
async def schedule_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("schedule-corpus")
    (source / "acts.jsonl").write_text(json.dumps(ACT, ensure_ascii=False) + "\n", encoding="utf-8")
    data_dir = tmp_path_factory.mktemp("schedule-data")
    report = await ingest_into(Settings(data_dir=data_dir), source)
    assert report.failures == 0
    return data_dir


async def ask(data_dir: Path, question: str) -> FinalEvent:
    async with open_services(Settings(data_dir=data_dir)) as services:
        events = [e async for e in services.orchestrator.stream(QueryRequest(q=question, session_id="s"), Caller("u"))]
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final


async def test_a_quote_only_answer_from_a_schedule_names_the_schedule_everywhere(schedule_data_dir: Path) -> None:
    final = await ask(schedule_data_dir, "What is the rate of the carbon tax on imported coal?")
    cited = [c for c in final.citations if c.section_id == SCHEDULE_PARAGRAPH]
    assert cited, final
    for citation in cited:
        assert citation.section.startswith("paragraph 4") and citation.section.endswith(" of the Second Schedule")
        assert citation.cite_as.startswith("Fuel Levies Act [Chapter 23:99], Second Sch para 4")
    assert "Paragraph 4 of the Second Schedule of the Fuel Levies Act" in final.answer
    assert "Section 4 of the Fuel Levies Act (Rate" not in final.answer


async def test_a_schedules_definition_is_never_added_to_an_answer_from_the_acts_own_sections(
    schedule_data_dir: Path,
) -> None:
    final = await ask(schedule_data_dir, "Who pays the fuel levy on petrol sold by a licensed fuel retailer?")
    provisions = [c for c in final.citations if c.kind == "provision"]
    assert provisions and all(c.section_id in (f"{KEY}#s1", f"{KEY}#s4", f"{KEY}#s5") for c in provisions), final
    assert any(c.section.startswith("section 4") and c.cite_as.startswith("Fuel Levies Act [Chapter 23:99], s 4")
               for c in provisions)  # fmt: skip
    # The cited words say "tax", which only the Second Schedule defines: that definition is not the Act's.
    assert any("tax" in c.quote for c in provisions)
    assert all(c.section_id != SCHEDULE_DEFINITION for c in final.citations)
    assert "carbon tax on imported coal" not in final.answer


def review_sheet() -> Any:
    """``benchmarks/review_sheet.py``, loaded from its file (it imports ``report`` from its own folder)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("review_sheet_benchmark", BENCHMARKS / "review_sheet.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_the_review_sheet_shows_the_entry_cited_not_another_under_the_same_reference(shared_data: Path) -> None:
    sheet = review_sheet()
    income_tax = "zw/act/1967/5"
    texts = sheet.provisions({f"{income_tax}#s4"})
    # Every entry under "s4" (the Act's own section 4 and each Schedule's paragraph 4) is kept, each by its own id.
    repeats = [key for key in texts if key.split("~")[0] == f"{income_tax}#s4"]
    assert len(repeats) > 10 and len(set(texts[k] for k in repeats)) == len(repeats)
    schedule = next(k for k in repeats if "of Schedule" in texts[k].split("\n")[0])
    row = {"id": "q", "kind": "direct", "question": "?", "gold": [],
           "answers": {"model": {"answer": "The rate is set [1].", "cited": [f"{income_tax}#s4"],
                                 "sections": [schedule], "verified": True, "warnings": []}}}  # fmt: skip
    shown = sheet.sheet([row])
    assert texts[schedule] in shown and texts[f"{income_tax}#s4"] not in shown
    # A trace from before full ids were kept shows every entry under the reference, none dropped.
    del row["answers"]["model"]["sections"]
    old = sheet.sheet([row])
    assert all(texts[k] in old for k in repeats)


async def test_the_reader_cites_a_linked_schedule_provision_by_its_schedule(schedule_data_dir: Path) -> None:
    async with open_services(Settings(data_dir=schedule_data_dir)) as services:
        view = await DocumentReader(services.corpus).provision(KEY, "s5", Caller("u"))
    assert view.section.label == "section 5"
    # "the Second Schedule" resolves to its first paragraph, cited by its schedule, not as the Act's section 1.
    (link,) = [link for link in view.refers_to if link.provision_id == SCHEDULE_DEFINITION]
    assert link.cite_as == "Fuel Levies Act [Chapter 23:99], Second Sch para 1"
    schedule = await DocumentReader(services.corpus).provision(KEY, "s4~2", Caller("u"))
    assert schedule.section.label == "paragraph 4 of the Second Schedule" and schedule.previous is not None
    assert schedule.previous.label == "paragraph 1 of the Second Schedule"


def test_a_model_sentence_must_name_a_schedules_paragraph_by_its_schedule() -> None:
    document = parsed()
    paragraph = document.sections[4]
    chunk = Chunk(
        chunk_id=f"{paragraph.section_id}/c0", doc_key=KEY, section_id=paragraph.section_id, section_number="4",
        section_heading=paragraph.heading, section_label=paragraph.label, title="Fuel Levies Act",
        text=paragraph.text, ordinal=0,
    )  # fmt: skip
    offered = {1: make_citation(1, chunk, paragraph.text)}
    texts = {paragraph.section_id: paragraph.text}
    rate = "the carbon tax on imported coal is charged at nine dollars for every tonne of coal imported [1]."
    named = gate_model_answer(
        f"Under paragraph 4 of the Second Schedule of the Fuel Levies Act, {rate}", offered, texts
    )
    assert named.passed and [c.section for c in named.citations] == ["paragraph 4(1) of the Second Schedule"]
    # "Section 4" of the Act is another provision: the Schedule's paragraph 4 does not support a sentence about it.
    wrong = gate_model_answer(f"Under section 4 of the Fuel Levies Act, {rate}", offered, texts)
    assert not wrong.passed and wrong.citations == [] and wrong.answer == ""


def test_inside_a_schedule_drafted_in_sections_section_n_is_that_schedules_own() -> None:
    key = "zw/act/2031/9"
    record = {
        "id": key, "title": "Charter Amendment Act, 2031", "chapter": "", "kind": "act", "jurisdiction": "ZW",
        "sections": [
            {"ref": "s2", "section": "2", "heading": "Interpretation", "part": "",
             "text": "2. Interpretation In this Act— “existing Charter” means the Charter before this Act."},
            {"ref": "s2", "section": "2", "heading": "Supremacy", "part": "Schedule 1, Chapter 1",
             "text": "2. Supremacy (1) This Charter is the supreme law. (2) Subject to subsection (1), it binds all."},
            {"ref": "s3", "section": "3", "heading": "Founding values", "part": "Schedule 1, Chapter 1",
             "text": "3. Founding values (1) Subject to section 2, the values are these. (2) Subsection (1) applies "
                     "to every person and every organ of the Charter's government."},
        ],
    }  # fmt: skip
    (document,) = parse_jsonl(Path("acts.jsonl"), json.dumps(record).encode(), ParseOptions())
    assert [s.label for s in document.sections][1:] == [
        "section 2 of Schedule 1, Chapter 1", "section 3 of Schedule 1, Chapter 1"
    ]  # fmt: skip
    targets = {r.target for r in find_links([document]).references if r.source.startswith(f"{key}#s3")}
    assert f"{key}#s2~2" in targets and f"{key}#s2" not in targets


def test_a_schedule_is_read_from_its_own_heading_and_nothing_else() -> None:
    from api.text.schedules import schedule_label, schedule_of

    assert schedule_of("The Schedule") == "Schedule"
    assert schedule_label("paragraph", "4", schedule_of("The Schedule")) == "paragraph 4 of the Schedule"
    assert schedule_of("Schedule Civil Aviation Rules") == "Schedule"  # "Civil" is no roman number
    assert schedule_of("Fee Schedule") == ""  # a table's name, not a schedule of the Act
    assert schedule_of("Second Schedule > Part II") == "Second Schedule, Part II"
