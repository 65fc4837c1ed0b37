from pathlib import Path

import pytest

from api.errors import IngestionError
from api.schemas.documents import Document, Section
from ingestion import parsers
from ingestion.chunking import chunk_document, split_section
from ingestion.parsers import parser_for
from tests.conftest import SAMPLE_CORPUS


def words(text: str) -> int:
    return len(text.split())


def parse(path: Path) -> Document:
    (document,) = parsers.parse(path, path.read_bytes())
    return document


def test_statute_structure_is_recovered() -> None:
    doc = parse(SAMPLE_CORPUS / "residential-tenancies-act.md")
    assert doc.doc_key == "sample/act/2024/3"
    assert (doc.title, doc.chapter, doc.jurisdiction) == ("Residential Tenancies Act, 2024", "Chapter 8:21", "SAMPLE")
    assert [s.number for s in doc.sections] == ["1", "2", "3", "4", "5", "6"]
    s3 = doc.sections[2]
    assert (s3.section_id, s3.heading, s3.part) == ("sample/act/2024/3#s3", "Deposits", "Part II – Deposits and rent")
    assert s3.text.startswith("3. Deposits\n(1) A landlord") and s3.text.endswith("level 5.")


def test_zimbabwe_markdown_sections_and_ids(shared_data: Path) -> None:
    path = shared_data / "corpus/zimbabwe_legislation/markdown/marriages-act-2022.md"
    doc = parse(path)
    assert doc.doc_key == "zw/act/2022/1" and doc.jurisdiction == "ZW" and doc.chapter == "Chapter 5:15"
    s3 = next(s for s in doc.sections if s.section_id == "zw/act/2022/1#s3")
    assert "No person under the age of eighteen years may contract a marriage" in s3.text
    assert s3.part == "Part II"
    assert len({s.section_id for s in doc.sections}) == len(doc.sections)


def test_plain_text_with_part_lines_and_no_metadata(tmp_path: Path) -> None:
    src = tmp_path / "water-act.txt"
    src.write_text(
        "WATER ACT\n\nPART I\n1. Definitions\nIn this Act, water means water.\nPART II\n2. Permits\n(1) A "
        "permit is needed.\n(2) It lasts a year.\n"
    )
    doc = parse(src)
    assert doc.doc_key == "water-act" and doc.title == "WATER ACT"
    assert [(s.number, s.part) for s in doc.sections] == [("1", "PART I"), ("2", "PART II")]


@pytest.mark.parametrize(
    ("content", "message"), [(b"", "empty"), (b"\xff\xfe\x00bad", "not UTF-8"), (b"  \n", "empty")]
)
def test_unusable_text_is_a_clear_ingestion_error(tmp_path: Path, content: bytes, message: str) -> None:
    src = tmp_path / "x.md"
    src.write_bytes(content)
    with pytest.raises(IngestionError, match=message):
        parse(src)


def test_unknown_file_type_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IngestionError, match="unsupported file type '.xyz'"):
        parser_for(tmp_path / "a.xyz")


@pytest.mark.parametrize("max_tokens", [12, 40, 200])
def test_chunks_are_verbatim_slices_that_never_cross_a_section(shared_data: Path, max_tokens: int) -> None:
    path = shared_data / "corpus/zimbabwe_legislation/markdown/marriages-act-2022.md"
    doc = parse(path)
    chunks = chunk_document(doc, words, max_tokens=max_tokens)
    by_section = {s.section_id: s for s in doc.sections}
    for chunk in chunks:
        assert chunk.text in by_section[chunk.section_id].text
        assert chunk.text == chunk.text.strip() and chunk.text
    # Every word of every section lands in some chunk of that section, in order.
    for section in doc.sections:
        joined = " ".join(c.text for c in chunks if c.section_id == section.section_id)
        assert joined.split() == section.text.split()
    oversize = [c for c in chunks if words(c.text) > max_tokens]
    assert not oversize


def test_long_section_splits_at_subsection_markers_first() -> None:
    doc = parse(SAMPLE_CORPUS / "residential-tenancies-act.md")
    pieces = split_section(doc.sections[2], 40, words)
    assert len(pieces) > 1
    assert all(p.startswith(("3. Deposits", "(")) for p in pieces)


def test_chunks_name_the_provision_they_start_in() -> None:
    doc = parse(SAMPLE_CORPUS / "employment-standards-act.md")
    chunks = chunk_document(doc, words, max_tokens=20)
    starts = {c.provision_id for c in chunks if c.section_id == "sample/act/2023/7#s6"}
    assert starts == {"sample/act/2023/7#s6", "sample/act/2023/7#s6(1)", "sample/act/2023/7#s6(1)(a)",
                      "sample/act/2023/7#s6(1)(b)", "sample/act/2023/7#s6(2)"}  # fmt: skip


def test_a_reference_to_a_subsection_is_not_a_split_point() -> None:
    section = Section(section_id="x#s4", number="4", text="4. Offence (1) A person who contravenes subsection (3) "
                      "shall be guilty of an offence and liable to a fine.")  # fmt: skip
    assert not any(p.startswith("(3)") for p in split_section(section, 12, words))
    doc = Document(doc_key="x", title="X", content_hash="h", sections=[section])
    # Even when a tight budget cuts right before "(3)", the chunk is not taken for subsection (3).
    assert {c.provision_id for c in chunk_document(doc, words, 8)} == {"x#s4", "x#s4(1)"}


def test_provisions_continue_from_where_a_chunk_starts() -> None:
    from api.text.provisions import provision_at, provision_starts

    text = "served for five years; or\n(b) three months, where the employee has served longer."
    starts = provision_starts(text, "x#s6", start_in="x#s6(1)(a)")
    assert starts == [(26, "x#s6(1)(b)")]
    assert provision_at(starts, 0, "x#s6(1)(a)") == "x#s6(1)(a)" and provision_at(starts, 30, "") == "x#s6(1)(b)"


def test_a_reference_written_with_spaces_before_its_subsection_is_no_provision_start() -> None:
    from api.text.provisions import provision_starts

    text = (
        "In this Constitution— “sitting” means a period; “Senator Chief” means a Chief elected in terms of section "
        "120 (1) (b) or (c); “State” includes the Government.\n(2) In this Constitution— (a) a person "
        "includes a body."
    )
    starts = provision_starts(text, "x#s332")
    assert [provision for _, provision in starts] == ["x#s332(2)", "x#s332(2)(a)"]


def test_a_figure_glossing_a_number_in_words_is_no_provision_start() -> None:
    from api.text.provisions import provision_starts

    text = (
        "(1) A member holds office for four (4) years. (2) An offender is liable to a fine of not less than level "
        "seven (7) or to imprisonment, and may appeal within twenty-eight (28) days. (3) The Board sits monthly."
    )
    starts = provision_starts(text, "x#s81")
    # The section has subsections (1) to (3): "(4)", "(7)" and "(28)" are figures, not subsections to cite.
    assert [provision for _, provision in starts] == ["x#s81(1)", "x#s81(2)", "x#s81(3)"]
