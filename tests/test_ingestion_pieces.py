"""Each job of the ingest pipeline on its own: discovery and fingerprints, the parse pool, staging and commit, the
index rebuild and reconcile, the report's clock. The end-to-end runs are in test_ingestion.py."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from api.schemas.documents import Chunk, Document
from api.settings import EmbeddingSettings
from api.text.units import heading_text
from api.tools.bm25 import read_lexical_artifact
from api.tools.corpus import MANIFEST_KEY, Manifest, ManifestEntry, chunks_object_key, doc_object_key
from api.tools.embeddings import Embedder, build_embedder
from api.tools.object_store import LocalObjectStore, get_json, put_json
from api.tools.sentence_vectors import embedded_texts, load_sentence_vectors, rebuild_sentence_vectors
from api.tools.vector_store import MilvusVectorStore
from ingestion import indexes
from ingestion.discovery import digest, file_fingerprint, scan, unchanged_reports, vanished
from ingestion.parse_pool import Parsed, parse_file, parse_in_order
from ingestion.parsers import ParseOptions, parse, source_fingerprint
from ingestion.report import DocumentReport, IngestReport, StageClock, no_progress
from ingestion.staging import DocumentWriter, Staged, document_report, owned_by, placement
from tests.conftest import SAMPLE_CORPUS

OPTIONS = ParseOptions()
DP_ACT = SAMPLE_CORPUS / "data-protection-act.md"
LIMIT = OPTIONS.max_file_bytes


def entry(origin: str, fingerprint: str = "f", chunks: int = 1) -> ManifestEntry:
    return ManifestEntry(
        content_hash="h", source=origin, title="T", chunk_ids=[f"c{i}" for i in range(chunks)], origin=origin,
        source_fingerprint=fingerprint,
    )  # fmt: skip


def sample_document(name: str = "data-protection-act.md") -> Document:
    path = SAMPLE_CORPUS / name
    return parse(path, path.read_bytes(), OPTIONS)[0]


# discovery and fingerprints


async def test_scan_sorts_files_into_skipped_unchanged_moved_and_to_parse(tmp_path: Path) -> None:
    known, new, alias, odd = (tmp_path / name for name in ("known.md", "new.md", "alias.md", "notes.xyz"))
    gone = tmp_path / "gone" / "moved.md"  # held by the manifest from a path that no longer exists
    moved = tmp_path / "moved.md"
    shutil.copy(DP_ACT, known)
    shutil.copy(DP_ACT, alias)
    shutil.copy(SAMPLE_CORPUS / "consumer-protection-act.md", new)
    shutil.copy(SAMPLE_CORPUS / "employment-standards-act.md", moved)
    odd.write_text("x")
    fingerprint, moved_fingerprint = (file_fingerprint(p, OPTIONS) for p in (known, moved))
    manifest = Manifest(
        documents={"law/1": entry(str(known), fingerprint, chunks=3), "law/2": entry(str(gone), moved_fingerprint)}
    )
    ticks: list[tuple[str, int, int | None]] = []
    found = await scan([known, new, alias, moved, odd], manifest, OPTIONS, lambda *tick: ticks.append(tick))
    assert found.to_parse == {new: file_fingerprint(new, OPTIONS)}
    assert [(d.source, d.status, d.doc_key, d.chunks, d.message) for d in found.reports] == [
        (str(known), "unchanged", "law/1", 3, ""),
        (str(alias), "skipped", "law/1", 3, f"the same file as {known}, indexed once"),  # the same bytes: once
        (str(moved), "unchanged", "law/2", 1, f"moved from {gone}"),
        (str(odd), "skipped", "", 0, "unsupported file type '.xyz'"),  # not a failure
    ]
    assert manifest.documents["law/2"].origin == str(moved) and manifest.documents["law/1"].origin == str(known)
    assert found.seen == {"law/1", "law/2"} and ticks == [("files", 1, None)] * 4  # the file to parse ticks later


async def test_scan_reports_an_unreadable_file_and_goes_on(tmp_path: Path) -> None:
    unreadable, fine = tmp_path / "a.md", tmp_path / "b.md"
    unreadable.mkdir()  # gone or replaced between discovery and reading: the read fails
    shutil.copy(DP_ACT, fine)
    found = await scan([unreadable, fine], Manifest(), OPTIONS, no_progress)
    assert list(found.to_parse) == [fine]
    assert [(d.status, d.message) for d in found.reports] == [("failed", "cannot read a.md: Is a directory")]


def test_a_fingerprint_changes_with_the_bytes_the_ocr_engine_and_the_tenant(tmp_path: Path) -> None:
    text, pdf = tmp_path / "a.md", tmp_path / "a.pdf"
    text.write_text("one")
    pdf.write_text("one")
    first = source_fingerprint(text, digest(text, LIMIT), OPTIONS)
    text.write_text("two")
    assert source_fingerprint(text, digest(text, LIMIT), OPTIONS) != first
    assert source_fingerprint(text, digest(text, LIMIT), OPTIONS) == source_fingerprint(
        text, digest(text, LIMIT), OPTIONS
    )
    assert source_fingerprint(pdf, digest(pdf, LIMIT), OPTIONS) != source_fingerprint(text, digest(pdf, LIMIT), OPTIONS)
    public = file_fingerprint(text, OPTIONS)
    assert public == source_fingerprint(text, digest(text, LIMIT), OPTIONS)  # manifests written before stay valid
    assert file_fingerprint(text, OPTIONS, "acme") not in (public, file_fingerprint(text, OPTIONS, "other"))


def test_a_file_is_unchanged_only_when_every_document_it_gave_has_its_fingerprint() -> None:
    manifest = Manifest(documents={"a": entry("/c/x.jsonl", "f1"), "b": entry("/c/x.jsonl", "f1", chunks=2)})
    reports = unchanged_reports("/c/x.jsonl", "f1", manifest)
    assert reports is not None and [(r.doc_key, r.chunks) for r in reports] == [("a", 1), ("b", 2)]
    assert unchanged_reports("/c/x.jsonl", "f2", manifest) is None
    assert unchanged_reports("/c/other.jsonl", "f1", manifest) is None
    manifest.documents["b"].source_fingerprint = ""  # a document of the file failed last time
    assert unchanged_reports("/c/x.jsonl", "f1", manifest) is None


def test_vanished_documents_are_those_under_the_root_not_seen_and_not_failed() -> None:
    manifest = Manifest(
        documents={
            "seen": entry("/c/src/a.md"),
            "gone": entry("/c/src/sub/b.md"),
            "failed": entry("/c/src/c.md"),
            "sibling": entry("/c/src2/d.md"),  # a folder whose name starts like the root's is not under it
            "elsewhere": entry("/d/e.md"),
        }
    )
    assert vanished(manifest, Path("/c/src"), {"seen"}, {"/c/src/c.md"}) == ["gone"]
    assert vanished(manifest, Path("/c/src/a.md"), set(), set()) == ["seen"]  # a single file as the root


# the parse pool


def parse_or_die(path: Path, options: ParseOptions) -> Parsed:
    """A parse function whose worker process dies on a file named die.md, as one killed for memory would."""
    if path.name == "die.md":
        os._exit(1)
    return parse_file(path, options)


def test_parse_file_returns_failures_as_messages(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_bytes(b"")
    assert parse_file(tmp_path / "empty.md", OPTIONS).error == "empty.md is empty"
    assert parse_file(tmp_path / "missing.md", OPTIONS).error.startswith("cannot read missing.md")
    parsed = parse_file(DP_ACT, OPTIONS)
    assert not parsed.error and [d.doc_key for d in parsed.documents] == ["sample/act/2021/5"]


async def test_the_pool_yields_parses_in_the_order_given() -> None:
    paths = sorted(SAMPLE_CORPUS.glob("*.md"), reverse=True)
    got = [(path, parsed) async for path, parsed in parse_in_order(paths, OPTIONS, workers=2)]
    assert [p for p, _ in got] == paths
    assert all(not parsed.error and len(parsed.documents) == 1 for _, parsed in got)
    alone = [path async for path, _ in parse_in_order(paths[:1], OPTIONS, workers=4)]  # one file: in a thread
    assert alone == paths[:1]


async def test_a_dead_parser_process_fails_its_file_and_the_rest_are_parsed(tmp_path: Path) -> None:
    paths = []
    for name in ("a.md", "die.md", "b.md", "c.md", "d.md"):
        shutil.copy(DP_ACT, tmp_path / name)
        paths.append(tmp_path / name)
    got = {path.name: parsed async for path, parsed in parse_in_order(paths, OPTIONS, 2, parse_or_die)}
    assert list(got) == ["a.md", "die.md", "b.md", "c.md", "d.md"]
    assert got["die.md"].error == "the parser process died reading die.md (out of memory?)"
    assert all(len(got[name].documents) == 1 for name in ("b.md", "c.md", "d.md"))


# staging and commit


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    with ThreadPoolExecutor(2) as pool:
        yield build_embedder(EmbeddingSettings(), pool)


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[LocalObjectStore, MilvusVectorStore]]:
    store = LocalObjectStore(tmp_path / "objects")
    vectors = MilvusVectorStore(str(tmp_path / "milvus.db"), "gweta_chunks", 384)
    try:
        yield store, vectors
    finally:
        await vectors.close()


async def test_a_document_enters_the_manifest_only_after_its_vectors(
    embedder: Embedder, stores: tuple[LocalObjectStore, MilvusVectorStore]
) -> None:
    store, vectors = stores
    writer = DocumentWriter(store, embedder, vectors, StageClock())
    manifest = Manifest()
    document = sample_document()
    report = document_report(document, str(DP_ACT))
    chunks = await writer.prepare(document, no_progress)
    # Staged: the objects are stored, but nothing is searchable or owned yet.
    assert await get_json(store, chunks_object_key(document.doc_key)) == [c.model_dump() for c in chunks]
    assert await get_json(store, doc_object_key(document.doc_key)) is not None
    assert await vectors.ids() == set() and manifest.documents == {}
    await writer.commit([Staged(document, chunks, report, "fp")], manifest, no_progress)
    held = manifest.documents[document.doc_key]
    assert set(held.chunk_ids) == await vectors.ids() == {c.chunk_id for c in chunks}
    assert (held.origin, held.source_fingerprint, report.chunks) == (str(DP_ACT), "fp", len(chunks))
    assert set(writer.clock.seconds) == {"chunk", "store_objects", "embed", "store_vectors"}


async def test_a_changed_document_loses_its_stale_vectors_and_a_removed_one_everything(
    embedder: Embedder, stores: tuple[LocalObjectStore, MilvusVectorStore]
) -> None:
    store, vectors = stores
    writer = DocumentWriter(store, embedder, vectors, StageClock())
    manifest = Manifest()
    document = sample_document()
    first = await writer.prepare(document, no_progress)
    await writer.commit([Staged(document, first, document_report(document, "a"), "f1")], manifest, no_progress)
    shorter = document.model_copy(update={"sections": document.sections[:2], "content_hash": "changed"})
    second = await writer.prepare(shorter, no_progress)
    await writer.commit([Staged(shorter, second, document_report(shorter, "a"), "f2")], manifest, no_progress)
    assert await vectors.ids() == {c.chunk_id for c in second} and len(second) < len(first)
    removed = await writer.remove(document.doc_key, manifest)
    assert (removed.status, removed.doc_key, removed.source) == ("removed", document.doc_key, "a")
    assert await vectors.ids() == set() and manifest.documents == {}
    assert await store.list_keys("docs/") == await store.list_keys("chunks/") == []
    assert await get_json(store, MANIFEST_KEY) == Manifest().model_dump()


async def test_writing_a_file_twice_records_its_documents_unchanged(
    embedder: Embedder, stores: tuple[LocalObjectStore, MilvusVectorStore]
) -> None:
    store, vectors = stores
    writer = DocumentWriter(store, embedder, vectors, StageClock())
    manifest = Manifest()
    parsed = parse_file(DP_ACT, OPTIONS)
    first = await writer.write_file(DP_ACT, "f1", parsed, manifest, set(), no_progress)
    assert [(r.status, r.doc_key) for r in first] == [("ingested", "sample/act/2021/5")] and first[0].chunks > 0
    again = await writer.write_file(DP_ACT, "f2", parsed, manifest, set(), no_progress)
    assert [(r.status, r.chunks) for r in again] == [("unchanged", first[0].chunks)]
    assert manifest.documents["sample/act/2021/5"].source_fingerprint == "f2"
    failed = await writer.write_file(DP_ACT, "f3", Parsed(error="broken"), manifest, set(), no_progress)
    assert [(r.status, r.message) for r in failed] == [("failed", "broken")]


def test_a_document_is_placed_by_its_id_and_content_not_its_path() -> None:
    document = sample_document()
    other = document.model_copy(update={"content_hash": "another version"})
    manifest = Manifest(documents={document.doc_key: entry("/a/dp.md")})
    manifest.documents[document.doc_key].content_hash = document.content_hash
    assert placement(document, manifest, set(), held_elsewhere=False) == "here"  # unchanged, or moved from /a
    assert placement(other, manifest, set(), held_elsewhere=False) == "here"  # changed (its old file is gone)
    assert placement(document, manifest, set(), held_elsewhere=True) == "indexed_elsewhere"  # a second path
    assert placement(document, manifest, {document.doc_key}, held_elsewhere=False) == "indexed_elsewhere"
    assert placement(other, manifest, set(), held_elsewhere=True) == "kept_apart"  # another version of the law
    assert placement(other, manifest, {document.doc_key}, held_elsewhere=False) == "kept_apart"


def test_a_tenants_copy_has_its_own_content_hash() -> None:
    document = sample_document()
    assert owned_by(document, "") is document
    owned = owned_by(document, "acme")
    assert owned.tenant == "acme" and owned.content_hash not in ("", document.content_hash)
    assert owned_by(document, "other").content_hash != owned.content_hash


# the index rebuild and reconcile


async def test_a_run_marker_left_behind_means_the_last_run_was_killed(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    assert await indexes.begin_run(store) is False
    assert await indexes.begin_run(store) is True  # never ended: killed
    await indexes.end_run(store)
    assert await indexes.begin_run(store) is False


async def test_reconcile_drops_what_no_manifest_entry_owns_and_the_lexical_index_what_it_owns(
    embedder: Embedder, stores: tuple[LocalObjectStore, MilvusVectorStore]
) -> None:
    store, vectors = stores
    writer = DocumentWriter(store, embedder, vectors, StageClock())
    manifest = Manifest()
    kept, stray = sample_document(), sample_document("consumer-protection-act.md")
    for document in (kept, stray):
        chunks = await writer.prepare(document, no_progress)
        await writer.commit([Staged(document, chunks, document_report(document, "x"), "f")], manifest, no_progress)
    owned = set(manifest.documents.pop(stray.doc_key).chunk_ids)  # as if killed before its manifest entry
    chunks = await indexes.load_chunks(store, manifest)
    assert await indexes.rebuild_lexical_index(store, chunks) == len(manifest.documents[kept.doc_key].chunk_ids)
    lexical = await read_lexical_artifact(store)
    assert lexical is not None and set(lexical[0]) == set(manifest.documents[kept.doc_key].chunk_ids)
    removed = await indexes.reconcile(store, vectors, manifest)
    assert removed == len(owned) + 2  # its vectors, its document and its chunks objects
    assert await vectors.ids() == set(manifest.documents[kept.doc_key].chunk_ids)
    assert await store.list_keys("docs/") == [doc_object_key(kept.doc_key)]
    assert await indexes.reconcile(store, vectors, manifest) == 0
    await put_json(store, chunks_object_key("ghost"), [])
    assert await indexes.reconcile(store, vectors, manifest) == 1


async def test_every_quotable_sentence_is_embedded_once_and_kept_for_the_model_that_embedded_it(
    embedder: Embedder, stores: tuple[LocalObjectStore, MilvusVectorStore]
) -> None:
    store, vectors = stores
    writer = DocumentWriter(store, embedder, vectors, StageClock())
    manifest = Manifest()

    async def add(document: Document) -> list[Chunk]:
        chunks = await writer.prepare(document, no_progress)
        await writer.commit([Staged(document, chunks, document_report(document, "x"), "f")], manifest, no_progress)
        return await indexes.load_chunks(store, manifest)

    chunks = await add(sample_document())
    first = sorted({unit for chunk in chunks for unit in embedded_texts(chunk)})
    # The provisions' headings (with the law's title) are kept too: the search ranks them by meaning.
    headings = {heading_text(chunk) for chunk in chunks} - {""}
    assert headings and headings <= set(first) and set(first) - headings
    seen: list[tuple[str, int, int | None]] = []
    assert await rebuild_sentence_vectors(store, chunks, embedder, lambda *a: seen.append(a)) == (
        len(first),
        len(first),
    )
    assert seen[0] == ("sentences", 0, len(first)) and sum(a for _, a, _ in seen) == len(first)
    label = f"{embedder.name}:{embedder.dimensions}"
    stored = await load_sentence_vectors(store, label)
    assert stored is not None and len(stored) == len(first)
    # The vectors an answer would have computed itself.
    assert np.allclose(np.stack(stored.find(first)), await embedder.embed_documents(first), atol=1e-5)
    assert stored.find(["A sentence no document holds."]) == [None]
    # Nothing new: nothing embedded or written; a new document: its sentences only.
    assert await rebuild_sentence_vectors(store, chunks, embedder, no_progress) == (len(first), 0)
    chunks = await add(sample_document("consumer-protection-act.md"))
    both = {unit for chunk in chunks for unit in embedded_texts(chunk)}
    assert await rebuild_sentence_vectors(store, chunks, embedder, no_progress) == (
        len(both),
        len(both - set(first)),
    )
    # Another model's vectors are not these.
    assert await load_sentence_vectors(store, f"other:{embedder.dimensions}") is None


# the report


def test_the_clock_sums_each_stage_and_the_report_counts_statuses() -> None:
    clock = StageClock()
    clock.add("parse", 0.25)
    clock.add("parse", 0.5)
    with clock.timed("embed"):
        pass
    assert clock.seconds["parse"] == 0.75 and 0 <= clock.seconds["embed"] < 1
    report = IngestReport(
        documents=[DocumentReport("a", "ingested"), DocumentReport("b", "failed"), DocumentReport("b", "failed")]
    )
    assert (report.count("ingested"), report.count("unchanged"), report.failures) == (1, 0, 2)
    assert report.failed_sources() == {"b"}
