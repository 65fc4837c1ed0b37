import json
import shutil
from pathlib import Path

from api.settings import Settings
from api.tools.bm25 import BM25_KEY, LEGACY_BM25_KEY, read_lexical_artifact
from api.tools.corpus import MANIFEST_KEY, Corpus
from api.tools.object_store import LocalObjectStore, put_json
from api.tools.token_arrays import artifact_chunk_ids
from api.tools.vector_store import MilvusVectorStore
from ingestion.pipeline import discover, fetch_store_sources
from tests.conftest import SAMPLE_CORPUS, ingest_into


async def snapshot(data_dir: Path) -> tuple[set[str], int, bytes, dict[str, object]]:
    store = LocalObjectStore(data_dir / "objects")
    vectors = MilvusVectorStore(str(data_dir / "milvus.db"), "gweta_chunks", 384)
    try:
        ids, count = await vectors.ids(), await vectors.count()
    finally:
        await vectors.close()
    manifest = json.loads((await store.get_bytes(MANIFEST_KEY)) or b"{}")
    return ids, count, (await store.get_bytes(BM25_KEY)) or b"", manifest


async def test_sample_corpus_ingests_into_every_store(tmp_path: Path) -> None:
    report = await ingest_into(Settings(data_dir=tmp_path), SAMPLE_CORPUS)
    assert report.count("ingested") == 5 and report.failures == 0
    assert report.parsed_files == 5 and report.parse_workers >= 2  # parsed in worker processes
    ids, count, bm25, manifest = await snapshot(tmp_path)
    corpus = await Corpus.load(LocalObjectStore(tmp_path / "objects"))
    assert count == len(ids) == len(corpus) == report.total_chunks > 20
    assert ids == set(corpus.chunks)
    assert set(artifact_chunk_ids(bm25)) == ids
    doc = await corpus.document("sample/act/2024/3")
    assert doc is not None and doc.section("sample/act/2024/3#s6") is not None
    for chunk in corpus.chunks.values():
        parent = await corpus.document(chunk.doc_key)
        assert parent is not None
        section = parent.section(chunk.section_id)
        assert section is not None and chunk.text in section.text


async def test_ingesting_the_same_folder_twice_leaves_the_same_index(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    await ingest_into(settings, SAMPLE_CORPUS)
    before = await snapshot(tmp_path)
    again = await ingest_into(settings, SAMPLE_CORPUS)
    assert again.count("unchanged") == 5 and again.count("ingested") == 0
    assert again.parsed_files == 0  # known fingerprints: not even parsed
    assert await snapshot(tmp_path) == before

    # A data dir with the older JSON artifact (every token a string): the next run writes the same arrays, byte for
    # byte, and removes the JSON, re-embedding nothing.
    store = LocalObjectStore(tmp_path / "objects")
    opened = await read_lexical_artifact(store)
    assert opened is not None
    await store.delete(BM25_KEY)
    await put_json(store, LEGACY_BM25_KEY, {"version": 1, "chunk_ids": opened[0], "tokens": list(opened[1])})
    converted = await ingest_into(settings, SAMPLE_CORPUS)
    assert converted.count("unchanged") == 5 and converted.parsed_files == 0
    assert await snapshot(tmp_path) == before and await store.get_bytes(LEGACY_BM25_KEY) is None


async def test_a_changed_document_is_replaced_without_leftovers(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "src"
    shutil.copytree(SAMPLE_CORPUS, corpus_dir)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, corpus_dir)
    act = corpus_dir / "residential-tenancies-act.md"
    text = act.read_text()
    act.write_text(text[: text.index("## Part III")])  # drop sections 5 and 6
    report = await ingest_into(settings, corpus_dir)
    assert report.count("ingested") == 1 and report.count("unchanged") == 4 and report.parsed_files == 1
    ids, count, bm25, _ = await snapshot(tmp_path / "data")
    assert count == len(ids) == len(artifact_chunk_ids(bm25))
    assert not any(i.startswith(("sample/act/2024/3#s5", "sample/act/2024/3#s6")) for i in ids)
    assert any(i.startswith("sample/act/2024/3#s4") for i in ids)


async def test_bad_files_are_reported_and_the_rest_still_ingest(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "src"
    corpus_dir.mkdir()
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", corpus_dir)
    (corpus_dir / "empty.md").write_bytes(b"")
    (corpus_dir / "latin1.txt").write_bytes("Caf\xe9 law".encode("latin-1"))
    (corpus_dir / "scan.tiff").write_bytes(b"II*\x00")
    report = await ingest_into(Settings(data_dir=tmp_path / "data"), corpus_dir)
    status = {Path(d.source).name: (d.status, d.message) for d in report.documents}
    assert status["data-protection-act.md"][0] == "ingested"
    assert status["empty.md"] == ("failed", "empty.md is empty")
    assert "not UTF-8" in status["latin1.txt"][1]
    assert status["scan.tiff"] == ("skipped", "unsupported file type '.tiff'")  # not a failure
    assert report.failures == 2 and report.count("skipped") == 1 and report.total_chunks > 0


def test_discovery_skips_hidden_files_but_not_a_dotted_path_to_the_folder(tmp_path: Path) -> None:
    (tmp_path / "corpus" / ".git").mkdir(parents=True)
    (tmp_path / "corpus" / "sub").mkdir()
    for name in ("a.md", ".hidden.md", ".git/config", "sub/b.txt"):
        (tmp_path / "corpus" / name).write_text("x")
    dotted = tmp_path / "corpus" / "sub" / ".." / "."
    assert [p.name for p in discover(dotted)] == ["a.md", "b.txt"]


async def test_a_source_removed_from_the_folder_is_removed_from_every_index(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "src"
    shutil.copytree(SAMPLE_CORPUS, corpus_dir)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, corpus_dir)
    (corpus_dir / "consumer-protection-act.md").unlink()
    report = await ingest_into(settings, corpus_dir)
    assert [(d.status, d.doc_key) for d in report.documents if d.status != "unchanged"] == [
        ("removed", "sample/act/2022/11")
    ]
    ids, count, bm25, manifest = await snapshot(tmp_path / "data")
    assert "sample/act/2022/11" not in manifest["documents"]  # type: ignore[operator]
    assert not any(i.startswith("sample/act/2022/11") for i in ids) and count == len(ids)
    assert not any(i.startswith("sample/act/2022/11") for i in artifact_chunk_ids(bm25))
    store = LocalObjectStore(tmp_path / "data" / "objects")
    assert len(await store.list_keys("docs/")) == len(await store.list_keys("chunks/")) == 4


async def test_ingesting_another_folder_leaves_the_first_alone(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", one)
    shutil.copy(SAMPLE_CORPUS / "consumer-protection-act.md", two)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, one)
    report = await ingest_into(settings, two)
    assert report.count("removed") == 0
    _, _, _, manifest = await snapshot(tmp_path / "data")
    assert set(manifest["documents"]) == {"sample/act/2021/5", "sample/act/2022/11"}  # type: ignore[arg-type]


async def test_jsonl_corpora_ingest_many_documents_and_keep_source_ids(tmp_path: Path) -> None:
    rows = [
        {"id": "x/act/1", "title": "Water Act", "sections": [
            {"ref": "s1", "section": "1", "heading": "Permits", "text": "1. Permits A permit is needed to draw water."},
            {"ref": "s2", "section": "2", "heading": "Fees", "text": "2. Fees The fee for a permit is ten dollars."},
        ]},
        {"id": "p-9", "title": "Rule 9", "text": "Every firm must keep records for six years.", "document_id": 7,
         "document_title": "Record Rules", "passage_id": "9"},
    ]  # fmt: skip
    source = tmp_path / "src" / "corpus.jsonl"
    source.parent.mkdir()
    source.write_text("\n".join(json.dumps(r) for r in rows))
    report = await ingest_into(Settings(data_dir=tmp_path / "data"), source.parent)
    assert sorted(d.doc_key for d in report.documents) == ["src/corpus/7", "x/act/1"]
    corpus = await Corpus.load(LocalObjectStore(tmp_path / "data" / "objects"))
    by_section = {c.section_id: c for c in corpus.chunks.values()}
    assert by_section["src/corpus/7#9"].source_id == "p-9"
    assert by_section["x/act/1#s2"].provision_id == "x/act/1#s2"


async def test_an_oversized_or_corrupt_file_fails_alone(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "src"
    corpus_dir.mkdir()
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", corpus_dir)
    with (corpus_dir / "huge.txt").open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: 200 MB on paper, nothing on disk
    (corpus_dir / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    report = await ingest_into(Settings(data_dir=tmp_path / "data"), corpus_dir)
    status = {Path(d.source).name: (d.status, d.message) for d in report.documents}
    assert status["huge.txt"] == (
        "failed",
        "huge.txt is 200 MiB, over the 128 MiB limit (GWETA_INGESTION__MAX_FILE_MB); split it",
    )
    assert status["broken.pdf"][0] == "failed" and "not a readable PDF" in status["broken.pdf"][1]
    assert status["data-protection-act.md"][0] == "ingested" and report.failures == 2


async def test_sources_in_the_object_store_ingest_like_a_folder(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    store = LocalObjectStore(settings.data_dir / "objects")
    for name in ("data-protection-act.md", "consumer-protection-act.md"):
        await store.put_bytes(f"corpus/sources/acts/{name}", (SAMPLE_CORPUS / name).read_bytes())
    mirror = tmp_path / "data" / "store-sources"
    first = await ingest_into(settings, await fetch_store_sources(store, mirror))
    assert first.count("ingested") == 2
    await store.delete("corpus/sources/acts/consumer-protection-act.md")
    second = await ingest_into(settings, await fetch_store_sources(store, mirror))
    assert [(d.status, d.doc_key) for d in second.documents] == [
        ("unchanged", "sample/act/2021/5"),
        ("removed", "sample/act/2022/11"),
    ]


async def test_the_same_law_from_two_sources_is_kept_apart(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    shutil.copy(SAMPLE_CORPUS / "data-protection-act.md", one / "dp.md")
    text = (SAMPLE_CORPUS / "data-protection-act.md").read_text()
    (two / "dp-copy.txt").write_text(text.replace("may be cited as", "is cited as"))  # another version of it
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, one)
    second = await ingest_into(settings, two)
    assert [d.doc_key for d in second.documents] == ["sample/act/2021/5@dp-copy"]
    again = await ingest_into(settings, two)
    assert [d.status for d in again.documents] == ["unchanged"]
    _, _, _, manifest = await snapshot(tmp_path / "data")
    assert set(manifest["documents"]) == {"sample/act/2021/5", "sample/act/2021/5@dp-copy"}  # type: ignore[arg-type]


async def test_a_following_parts_heading_run_onto_a_section_is_not_its_text(tmp_path: Path) -> None:
    """Sources that run the next part's heading onto the end of a part's last section ("… to either party. Part
    VII – Execution of judgment") are read without it: it is a heading, not words of the provision."""
    rows = [
        {"id": "x/act/2", "title": "Small Claims Act", "sections": [
            {"ref": "s27", "section": "27", "heading": "Costs", "part": "Part VI",
             "text": "27. Costs A court may award costs to either party. Part VII – Execution of judgment"},
            {"ref": "s28", "section": "28", "heading": "Orders", "part": "Part VII",
             "text": "28. Orders A judgment creditor may apply for an order. Sub-Part C—Rights of affected persons"},
        ]},
    ]  # fmt: skip
    source = tmp_path / "src" / "acts.jsonl"
    source.parent.mkdir()
    source.write_text("\n".join(json.dumps(r) for r in rows))
    await ingest_into(Settings(data_dir=tmp_path / "data"), source.parent)
    corpus = await Corpus.load(LocalObjectStore(tmp_path / "data" / "objects"))
    texts = {c.section_id: c.text for c in corpus.chunks.values()}
    assert texts["x/act/2#s27"].endswith("to either party.") and "Execution" not in texts["x/act/2#s27"]
    assert texts["x/act/2#s28"].endswith("apply for an order.")
