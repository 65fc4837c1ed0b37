"""Every source format through its parser: real files from ../shared where they exist, small ones made here."""

import io
import json
import re
from pathlib import Path

import docx
import pypdfium2
import pytest

from api.errors import IngestionError
from api.schemas.documents import Document
from ingestion import parsers
from ingestion.fidelity import compare
from ingestion.parsers.pdf import page_text
from tests.conftest import SAMPLE_CORPUS

PDFS = "corpus/zimbabwe_pdfs"


def parse(path: Path, data: bytes | None = None) -> list[Document]:
    return parsers.parse(path, path.read_bytes() if data is None else data)


def acts_record(shared: Path, law_id: str) -> dict[str, object]:
    with (shared / "corpus/zimbabwe_legislation/acts.jsonl").open() as fh:
        for line in fh:
            if f'"id": "{law_id}"' in line[:200]:
                return dict(json.loads(line))
    raise AssertionError(law_id)


def test_acts_jsonl_keeps_law_ids_refs_and_metadata(shared_data: Path, tmp_path: Path) -> None:
    record = acts_record(shared_data, "zw/act/2022/1")
    path = tmp_path / "acts.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (doc,) = parse(path)
    assert (doc.doc_key, doc.chapter, doc.jurisdiction, doc.doc_type) == ("zw/act/2022/1", "Chapter 5:15", "ZW", "act")
    assert doc.dates == {"expression": "2022-05-27"}
    s3 = next(s for s in doc.sections if s.ref == "s3")
    assert s3.section_id == "zw/act/2022/1#s3" and s3.heading.startswith("Minimum age")


def test_flat_passages_group_by_document_and_keep_passage_ids(tmp_path: Path) -> None:
    rows = [
        {"id": "p-1", "title": "AML 1.", "text": "INTRODUCTION", "document_id": 1, "document_title": "AML Rules",
         "passage_id": "1."},
        {"id": "p-2", "title": "AML 1.1", "text": "These Rules apply to every Relevant Person.", "document_id": 1,
         "document_title": "AML Rules", "passage_id": "1.1"},
        {"id": "p-3", "title": "Solo", "text": "A passage with no document."},
    ]  # fmt: skip
    path = tmp_path / "obliqa" / "corpus.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    docs = {d.doc_key: d for d in parse(path)}
    assert set(docs) == {"obliqa/corpus/1", "p-3"}
    aml = docs["obliqa/corpus/1"]
    assert aml.title == "AML Rules" and [s.source_id for s in aml.sections] == ["p-1", "p-2"]
    assert aml.sections[1].section_id == "obliqa/corpus/1#1.1"


def test_a_changed_record_changes_only_its_documents_hash(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": "First passage text."}, {"id": "b", "text": "Second passage text."}]
    path = tmp_path / "c.jsonl"
    before = {d.doc_key: d.content_hash for d in parse(path, "\n".join(map(json.dumps, rows)).encode())}
    rows[1]["text"] = "Second passage, amended."
    after = {d.doc_key: d.content_hash for d in parse(path, "\n".join(map(json.dumps, rows)).encode())}
    assert before["a"] == after["a"] and before["b"] != after["b"]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b'{"id": 1, "text": "ok"}\n{not json\n', "line 2 is not JSON"), (b'{"title": "no id"}\n', "expected an object")],
)
def test_bad_jsonl_names_the_line(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(IngestionError, match=message):
        parse(tmp_path / "bad.jsonl", content)


@pytest.mark.parametrize(
    ("pdf", "law_id", "min_mean"),
    [("Marriages_Act_2022.pdf", "zw/act/2022/1", 0.95), ("Electoral_Act.pdf", "zw/act/2004/25", 0.95)],
)
def test_pdf_provisions_match_the_same_act_in_acts_jsonl(
    shared_data: Path, tmp_path: Path, pdf: str, law_id: str, min_mean: float
) -> None:
    (parsed,) = parse(shared_data / PDFS / pdf)
    reference_file = tmp_path / "ref.jsonl"
    reference_file.write_text(json.dumps(acts_record(shared_data, law_id)))
    (reference,) = parse(reference_file)
    fidelity = compare(parsed, reference)
    assert parsed.doc_key == law_id  # from the Laws.Africa cover page
    assert fidelity.found_share == 1.0
    assert fidelity.mean_similarity >= min_mean
    assert fidelity.at_least_90 >= 0.9 * fidelity.reference_sections


def test_pdf_cleaning_drops_headers_contents_and_keeps_pages(shared_data: Path) -> None:
    (doc,) = parse(shared_data / PDFS / "Marriages_Act_2022.pdf")
    text = "\n".join(s.text for s in doc.sections)
    assert "Marriages Act, 2022 (Chapter 5:15) Zimbabwe" not in text  # running header
    assert "......" not in text and "FRBR URI" not in text  # contents and cover
    s5 = doc.section("zw/act/2022/1#s5")
    assert s5 is not None and s5.pages == (6, 6) and doc.pages == 21
    assert "lawful union of two persons to the exclusion of all others" in s5.text
    assert doc.dates == {"expression": "2022-05-27"} and doc.chapter == "Chapter 5:15"


def test_amendment_notes_become_provision_metadata(shared_data: Path) -> None:
    (doc,) = parse(shared_data / PDFS / "Electoral_Act.pdf")
    noted = [s for s in doc.sections if s.notes]
    assert len(noted) > 20
    assert all(n.startswith("[") and n.endswith("]") for s in noted for n in s.notes)


def test_a_noisy_scan_is_flagged(shared_data: Path) -> None:
    (doc,) = parse(shared_data / PDFS / "Electoral_Amendment_Act_2018.pdf")
    assert any("noisy OCR" in w for w in doc.warnings)


@pytest.mark.parametrize(("data", "message"), [(b"%PDF-1.4 garbage", "not a readable PDF"), (b"", "not a readable")])
def test_corrupt_pdf_is_a_clear_error(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(IngestionError, match=message):
        parse(tmp_path / "broken.pdf", data)


def test_docx_judgment_paragraphs_become_numbered_provisions(shared_data: Path) -> None:
    path = next((shared_data / PDFS).glob("Katsvaira_v_Katsvairo*.docx"))
    (doc,) = parse(path)
    assert doc.doc_type == "judgment" and "Katsvairo" in doc.title
    assert doc.sections[0].section_id.endswith("#preamble") and "HIGH COURT OF ZIMBABWE" in doc.sections[0].text
    paragraphs = [s for s in doc.sections if re.fullmatch(r"p\d+", s.section_id.split("#")[1])]
    assert len(paragraphs) > 50 and paragraphs[0].section_id.endswith("#p1")


def test_docx_statute_is_read_by_its_sections(tmp_path: Path) -> None:
    document = docx.Document()
    for text in ("Water Act", "1. Short title", "This Act may be cited as the Water Act.", "2. Permits",
                 "(1) A permit is needed to draw water.", "3. Offences", "A person who draws water without a permit "
                 "commits an offence."):  # fmt: skip
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    (doc,) = parse(tmp_path / "water.docx", buffer.getvalue())
    assert [s.section_id for s in doc.sections] == ["water#s1", "water#s2", "water#s3"]


def test_html_headings_and_sections(tmp_path: Path) -> None:
    page = b"""<html><head><title>Water Act</title><script>var x = "1. not a section";</script></head><body>
      <nav>Home | About</nav><h1>Water Act</h1><h2>Part I</h2>
      <p>1. Short title</p><p>This Act may be cited as the Water Act.</p>
      <div><p>2. Permits</p><ul><li>(1) A permit is needed.</li><li>(2) It lasts a year.</li></ul></div>
    </body></html>"""
    (doc,) = parse(tmp_path / "water.html", page)
    assert doc.title == "Water Act" and [s.number for s in doc.sections] == ["1", "2"]
    assert doc.sections[1].part == "Part I" and "(2) It lasts a year." in doc.sections[1].text
    assert "not a section" not in "".join(s.text for s in doc.sections)


def test_provisions_map_back_to_their_place_in_the_source(shared_data: Path) -> None:
    path = shared_data / PDFS / "Marriages_Act_2022.pdf"
    (doc,) = parse(path)
    s5 = doc.section("zw/act/2022/1#s5")
    assert s5 is not None and s5.pages == (6, 6) and s5.offsets is not None
    pdf = pypdfium2.PdfDocument(path)
    page = page_text(pdf[5].get_textpage().get_text_range())
    pdf.close()
    start, end = s5.offsets
    assert page[start:].startswith("5. Nature of marriages")
    assert " ".join(page[start:end].split()) == " ".join(s5.text.split())  # the same words, line breaks aside
    markdown = SAMPLE_CORPUS / "residential-tenancies-act.md"
    (act,) = parse(markdown)
    s3 = act.section("sample/act/2024/3#s3")
    assert s3 is not None and s3.offsets is not None
    assert markdown.read_text()[s3.offsets[0] : s3.offsets[1]] == s3.text
