"""Files that are hostile or odd: bounded lines, provisions and chunks, a size limit per file, and the same bytes
through a second path (a move or an alias, never a second copy of the corpus)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from api.schemas.documents import Document, Section
from api.settings import EmbeddingSettings, IngestionSettings, Settings
from api.tools.corpus import Corpus
from api.tools.embeddings import Embedder, build_embedder
from api.tools.object_store import LocalObjectStore
from ingestion.chunking import chunk_document, remembering
from ingestion.limits import MAX_LABEL_CHARS, MAX_PROVISION_CHARS, bound_document, cut_spans, max_chunk_chars
from ingestion.parse_pool import parse_file
from ingestion.parsers import ParseOptions, parse
from tests.conftest import SAMPLE_CORPUS, ingest_into
from tests.test_ingestion import snapshot

MB = 2**20
CAP = max_chunk_chars(200)


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    with ThreadPoolExecutor(2) as pool:
        yield build_embedder(EmbeddingSettings(), pool)


def one_section(text: str) -> Document:
    section = Section(section_id="x/act/1#s1", number="1", heading="Huge", text=text)
    return Document(doc_key="x/act/1", title="X", content_hash="h", sections=[section])


def test_cuts_fall_at_a_line_break_then_a_space_then_anywhere() -> None:
    assert cut_spans("aaaaaa\nbb cc dd", 10) == [(0, 7), (7, 15)]
    assert cut_spans("aaaaaaaa bbbbbbbb", 10) == [(0, 9), (9, 17)]
    assert cut_spans("x" * 25, 10) == [(0, 10), (10, 20), (20, 25)]
    assert cut_spans("short", 10) == [(0, 5)]


def test_token_counts_of_short_texts_are_remembered_within_a_bound() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    counted = remembering(count, longest=8, entries=2)
    assert [counted(t) for t in ("a b", "a b", "c", "a b c d e f g h i")] == [2, 2, 1, 9]
    assert calls == ["a b", "c", "a b c d e f g h i"]  # long texts are not kept
    counted("d")  # a third short text: the memory is full, so it starts over
    counted("a b")
    assert calls[-2:] == ["d", "a b"]


def test_an_ordinary_document_is_left_as_it_is() -> None:
    path = SAMPLE_CORPUS / "residential-tenancies-act.md"
    (document,) = parse(path, path.read_bytes())
    assert bound_document(document) is document


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("x" * (3 * MB), id="one 3 MB word"),
        pytest.param("lorem ipsum dolor " * (MB // 6), id="3 MB of words, no other boundary"),
    ],
)
def test_no_chunk_is_longer_than_the_cap_whatever_the_text(embedder: Embedder, body: str) -> None:
    text = "1. Huge " + body
    chunks = chunk_document(one_section(text), embedder.count_tokens, 200)
    assert max(len(c.text) for c in chunks) <= CAP  # was one chunk of the whole section
    assert all(embedder.count_tokens(c.text) <= 200 for c in chunks[:100])
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")  # all of it, in order


def test_a_one_line_file_of_megabytes_parses_into_bounded_provisions(tmp_path: Path) -> None:
    word, words = tmp_path / "word.txt", tmp_path / "words.md"
    word.write_text("x" * (3 * MB))
    words.write_text("1. Definitions " + "lorem ipsum dolor " * (MB // 6))
    for path in (word, words):
        parsed = parse_file(path, ParseOptions())
        assert not parsed.error, parsed.error
        (document,) = parsed.documents
        assert len(document.title) <= MAX_LABEL_CHARS
        assert all(len(s.text) <= MAX_PROVISION_CHARS and len(s.heading) <= MAX_LABEL_CHARS for s in document.sections)
        assert sum(len(s.text) for s in document.sections) > 2.9 * MB  # cut, not dropped
        assert any("over the 100,000 limit: stored in" in w for w in document.warnings), document.warnings
    (document,) = parse_file(words, ParseOptions()).documents
    ids = [s.section_id for s in document.sections]
    assert ids[:3] == ["words#s1", "words#s1~part2", "words#s1~part3"] and len(set(ids)) == len(ids)


async def test_files_over_the_size_setting_fail_clearly_and_hostile_ones_ingest_bounded(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "src"
    corpus_dir.mkdir()
    with (corpus_dir / "big.txt").open("wb") as fh:
        fh.truncate(2 * MB)  # sparse: 2 MB on paper
    (corpus_dir / "word.md").write_text("<!-- id: x/act/9 -->\n# A Word\n1. Word " + "y" * 300_000)
    settings = Settings(data_dir=tmp_path / "data", ingestion=IngestionSettings(max_file_mb=1))
    report = await ingest_into(settings, corpus_dir)
    status = {Path(d.source).name: (d.status, d.message) for d in report.documents}
    assert status["big.txt"] == (
        "failed",
        "big.txt is 2 MiB, over the 1 MiB limit (GWETA_INGESTION__MAX_FILE_MB); split it",
    )
    assert status["word.md"][0] == "ingested"
    corpus = await Corpus.load(LocalObjectStore(settings.data_dir / "objects"))
    assert len(corpus) > 100 and max(len(c.text) for c in corpus.chunks.values()) <= CAP


# document identity: content and id, not the path


def write_acts(path: Path) -> None:
    rows = [
        {"id": "x/act/1", "title": "Water Act", "sections": [
            {"ref": "s1", "section": "1", "heading": "Permits", "text": "1. Permits A permit is needed to draw water."},
        ]},
        {"id": "x/act/2", "title": "Fees Act", "sections": [
            {"ref": "s1", "section": "1", "heading": "Fees", "text": "1. Fees The fee for a permit is ten dollars."},
        ]},
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in rows))


async def test_the_same_file_through_a_symlink_is_indexed_once(tmp_path: Path) -> None:
    source, alias = tmp_path / "corpus" / "acts.jsonl", tmp_path / "alias" / "acts.jsonl"
    write_acts(source)
    alias.parent.mkdir()
    alias.symlink_to(source)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, source.parent)
    before = await snapshot(settings.data_dir)
    report = await ingest_into(settings, alias.parent)
    assert [(d.status, d.doc_key) for d in report.documents] == [("skipped", "x/act/1"), ("skipped", "x/act/2")]
    assert report.parsed_files == 0 and "embed" not in report.stage_seconds  # not even parsed; nothing re-embedded
    ids, count, _, manifest = await snapshot(settings.data_dir)
    documents: dict[str, dict[str, str]] = manifest["documents"]  # type: ignore[assignment]
    assert set(documents) == {"x/act/1", "x/act/2"}  # no "@acts" copies
    assert (ids, count) == before[:2]
    assert {e["origin"] for e in documents.values()} == {str(source.resolve())}


async def test_a_moved_folder_is_a_move_not_a_second_source(tmp_path: Path) -> None:
    first, moved = tmp_path / "first", tmp_path / "moved"
    write_acts(first / "acts.jsonl")
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", first)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, first)
    before = await snapshot(settings.data_dir)
    was = first.resolve()
    first.rename(moved)
    report = await ingest_into(settings, moved)
    assert {d.status for d in report.documents} == {"unchanged"} and len(report.documents) == 3
    assert all(d.message == f"moved from {was / Path(d.source).name}" for d in report.documents)
    assert report.parsed_files == 0 and "embed" not in report.stage_seconds
    assert (await snapshot(settings.data_dir))[:3] == before[:3]
    (moved / "acts.jsonl").unlink()  # the documents now live in the new folder: removing them there removes them
    after = await ingest_into(settings, moved)
    assert sorted(d.doc_key for d in after.documents if d.status == "removed") == ["x/act/1", "x/act/2"]


async def test_the_same_bytes_in_a_second_folder_are_not_a_second_copy(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", one / "dp.md")
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", two / "dp-copy.txt")
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, one)
    before = await snapshot(settings.data_dir)
    second = await ingest_into(settings, two)
    assert [(d.status, d.doc_key) for d in second.documents] == [("skipped", "sample/act/2021/5")]
    assert second.documents[0].message == f"the same file as {(one / 'dp.md').resolve()}, indexed once"
    assert (await snapshot(settings.data_dir))[:3] == before[:3]
    both = await ingest_into(settings, tmp_path / "one")  # and the original stays where it was
    assert [(d.status, d.doc_key) for d in both.documents] == [("unchanged", "sample/act/2021/5")]
