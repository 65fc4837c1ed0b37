"""Scanned PDFs: detected, read by tesseract (installed from Debian by the project's installer) or by the PageIndex
service on loopback, then structured like any text layer."""

import io
from pathlib import Path

import pypdfium2
import pytest

from api.errors import ConfigError, IngestionError
from api.settings import IngestionSettings
from ingestion.ocr import PageIndexOcr, TesseractOcr, build_ocr
from ingestion.parsers import ParseOptions, parse
from ingestion.parsers.pdf import clean_pages, debris_share
from tests.servers import FakePageIndex, LiveServer

PDFS = "corpus/zimbabwe_pdfs"


def words(text: str) -> set[str]:
    return {w.strip(".,;:()“”\"'").lower() for w in text.split()} - {""}


@pytest.fixture(scope="module")
def scanned_pages(shared_data: Path) -> tuple[bytes, list[str]]:
    """Pages 6-7 of the Marriages Act as a scan: images only, no text layer; and the text those pages hold."""
    pdf = pypdfium2.PdfDocument(shared_data / PDFS / "Marriages_Act_2022.pdf")
    images = [pdf[i].render(scale=200 / 72, grayscale=True).to_pil() for i in (5, 6)]
    texts = [pdf[i].get_textpage().get_text_range() for i in (5, 6)]
    pdf.close()
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=200, save_all=True, append_images=images[1:])
    return buffer.getvalue(), texts


def test_a_scan_without_ocr_is_a_clear_failure(tmp_path: Path, scanned_pages: tuple[bytes, list[str]]) -> None:
    with pytest.raises(IngestionError, match="no text layer .* OCR is off"):
        parse(tmp_path / "scan.pdf", scanned_pages[0], ParseOptions(ocr=None))


def test_tesseract_reads_a_scan_into_provisions(tmp_path: Path, scanned_pages: tuple[bytes, list[str]]) -> None:
    data, texts = scanned_pages
    (doc,) = parse(tmp_path / "Marriages_scan.pdf", data, ParseOptions(ocr=TesseractOcr(dpi=300)))
    assert doc.warnings[0] == "no text layer: OCR used (tesseract)"
    s5 = doc.section("Marriages_scan#s5")
    assert s5 is not None and s5.pages == (1, 1)
    assert "lawful union of two persons to the exclusion of all others" in s5.text
    assert {"s5", "s8", "s9"} <= {s.section_id.split("#")[1] for s in doc.sections}
    expected = words(" ".join(texts))
    assert len(words(" ".join(s.text for s in doc.sections)) & expected) / len(expected) > 0.9


def test_a_garbled_text_layer_is_read_again(shared_data: Path) -> None:
    path = shared_data / PDFS / "Appropriation_Act_2017.pdf"
    (doc,) = parse(path, path.read_bytes(), ParseOptions(ocr=TesseractOcr()))
    assert doc.warnings[0] == "the text layer was garbled OCR: OCR used (tesseract)"
    text = " ".join(s.text for s in doc.sections)
    pdf = pypdfium2.PdfDocument(path)
    layer, _, _ = clean_pages([pdf[i].get_textpage().get_text_range() for i in range(len(pdf))])
    pdf.close()
    layer_text = " ".join(line.text for line in layer)
    # The gazette numbers its sections without full stops ("1 Short title"); the OCR reading keeps them.
    s1, s3 = doc.section("Appropriation_Act_2017#s1"), doc.section("Appropriation_Act_2017#s3")
    assert s1 is not None and s1.heading == "Short title" and "may be cited as the Appropriation Act" in s1.text
    assert s3 is not None and s3.heading.startswith("Consolidated Revenue Fund charged")
    phrase = "Estimates of Expenditure for the year ending on the 31st December, 2017"
    assert phrase in text and phrase not in layer_text  # the text layer reads "3lst December,2017"
    assert debris_share(layer) > 0.01  # what made it look garbled


def test_pageindex_reads_a_scan_through_its_api(tmp_path: Path, scanned_pages: tuple[bytes, list[str]]) -> None:
    data, texts = scanned_pages
    service = FakePageIndex([f"# Marriages Act\n\n{t}" for t in texts], polls_before_done=2)
    service.failures = [503]  # the first upload is refused; the client backs off and retries
    with LiveServer(service.app) as server:
        engine = PageIndexOcr(server.url, "pi-key", poll_s=0.05)
        (doc,) = parse(tmp_path / "Marriages_scan.pdf", data, ParseOptions(ocr=engine))
    assert doc.warnings[0] == "no text layer: OCR used (pageindex)"
    s5 = doc.section("Marriages_scan#s5")
    assert s5 is not None and "lawful union of two persons" in s5.text and s5.pages == (1, 1)
    assert doc.section("Marriages_scan#s8") is not None
    assert len(service.uploads) == 1 and b'filename="Marriages_scan.pdf"' in service.uploads[0]
    assert service.deleted == ["pi-1"]


def test_pageindex_names_a_refused_key(tmp_path: Path, scanned_pages: tuple[bytes, list[str]]) -> None:
    service = FakePageIndex(["x"])
    with LiveServer(service.app) as server, pytest.raises(IngestionError, match="refused the API key"):
        parse(tmp_path / "scan.pdf", scanned_pages[0], ParseOptions(ocr=PageIndexOcr(server.url, "wrong")))


def test_settings_choose_the_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert build_ocr(IngestionSettings(ocr="off")) is None
    assert isinstance(build_ocr(IngestionSettings(ocr="auto")), TesseractOcr)
    engine = build_ocr(IngestionSettings(ocr="pageindex", pageindex_url="http://127.0.0.1:9/", pageindex_api_key="k"))
    assert isinstance(engine, PageIndexOcr) and engine.url == "http://127.0.0.1:9"
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without the tesseract program
    assert build_ocr(IngestionSettings(ocr="auto")) is None
    with pytest.raises(ConfigError, match="tesseract"):
        build_ocr(IngestionSettings(ocr="tesseract"))
