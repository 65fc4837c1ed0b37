"""A small file must not take gigabytes: an archive-based file (DOCX) is held to an uncompressed size and a
compression ratio read from its zip directory before anything is unpacked, and one document to a number of chunks;
each refusal is a clear per-document failure in the ingest report, and the other files of the run are ingested."""

import io
import zipfile
from pathlib import Path

import docx
import pytest

from api.errors import IngestionError
from api.settings import IngestionSettings, Settings
from ingestion.parsers import ParseOptions, parse
from tests.conftest import ingest_into

PARAGRAPH = "<w:p><w:r><w:t>The tenant shall pay the rent on the first day of every month.</w:t></w:r></w:p>"


def small_docx(sections: int = 3) -> bytes:
    document = docx.Document()
    document.add_paragraph("Housing Rules, 2024")
    for n in range(1, sections + 1):
        document.add_paragraph(f"{n}. Rule {n}")
        document.add_paragraph(f"A landlord shall keep the premises in good repair under rule {n}.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def bomb_docx(unpacked_mb: int) -> bytes:
    """A real Word document whose body repeats one paragraph until its XML is ``unpacked_mb`` MiB: deflate packs it
    several hundred to one."""
    source = zipfile.ZipFile(io.BytesIO(small_docx()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for item in source.infolist():
            if item.filename != "word/document.xml":
                target.writestr(item, source.read(item))
                continue
            head, _, tail = source.read(item).decode().partition("<w:body>")
            info = zipfile.ZipInfo("word/document.xml")
            info.compress_type = zipfile.ZIP_DEFLATED
            with target.open(info, "w") as member:
                member.write(f"{head}<w:body>".encode())
                block = (PARAGRAPH * 1000).encode()
                for _ in range(unpacked_mb * 2**20 // len(block) + 1):
                    member.write(block)
                member.write(tail.encode())
    return out.getvalue()


def test_a_zip_bomb_docx_is_refused_before_it_is_unpacked(tmp_path: Path) -> None:
    bomb = bomb_docx(20)
    assert len(bomb) < 200_000  # 20 MiB of XML in well under 200 KB
    path = tmp_path / "bomb.docx"
    with pytest.raises(IngestionError, match=r"compressed [0-9,]+ to 1 .*ingestion.max_compression_ratio"):
        parse(path, bomb, ParseOptions())
    with pytest.raises(IngestionError, match=r"unpacks to 2[01] MiB, over the 8 MiB limit \(ingestion.max_unpacked_mb"):
        parse(path, bomb, ParseOptions(max_unpacked_bytes=8 * 2**20, max_compression_ratio=10**6))
    with pytest.raises(IngestionError, match="not a readable archive"):
        parse(path, b"PK\x03\x04" + b"\x00" * 100, ParseOptions())
    assert parse(tmp_path / "fine.docx", small_docx(), ParseOptions())[0].sections  # a real document still parses


async def test_each_refusal_is_a_failure_of_that_document_in_the_ingest_report(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "bomb.docx").write_bytes(bomb_docx(20))
    (source / "rules.docx").write_bytes(small_docx(3))
    many = "\n\n".join(f"{n}. Section {n}\nThe landlord shall repair item {n} within a week." for n in range(1, 41))
    (source / "many.md").write_text(
        f"<!-- id: sample/act/2024/9; jurisdiction: SAMPLE -->\n# Many Sections Act\n\n{many}\n"
    )
    settings = Settings(data_dir=tmp_path / "data", ingestion=IngestionSettings(max_chunks_per_document=20))
    report = await ingest_into(settings, source)
    by_file = {Path(d.source).name: d for d in report.documents}
    assert by_file["rules.docx"].status == "ingested" and by_file["rules.docx"].chunks >= 3
    bomb = by_file["bomb.docx"]
    assert bomb.status == "failed" and "ingestion.max_compression_ratio" in bomb.message and bomb.chunks == 0
    many_sections = by_file["many.md"]
    assert many_sections.status == "failed" and many_sections.chunks == 0
    assert "makes 40 chunks, over the 20 one document may (ingestion.max_chunks_per_document)" in many_sections.message
    assert report.total_chunks == by_file["rules.docx"].chunks  # nothing of the refused documents was stored
