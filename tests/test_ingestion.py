import json
import shutil
from pathlib import Path

from api.settings import Settings
from api.tools.bm25 import BM25_KEY
from api.tools.corpus import MANIFEST_KEY, Corpus
from api.tools.object_store import LocalObjectStore
from api.tools.vector_store import MilvusVectorStore
from ingestion.pipeline import discover
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
    assert report.count("ingested") == 4 and report.failures == 0
    ids, count, bm25, manifest = await snapshot(tmp_path)
    corpus = await Corpus.load(LocalObjectStore(tmp_path / "objects"))
    assert count == len(ids) == len(corpus) == report.total_chunks > 20
    assert ids == set(corpus.chunks)
    assert set(json.loads(bm25)["chunk_ids"]) == ids
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
    assert again.count("unchanged") == 4 and again.count("ingested") == 0
    assert await snapshot(tmp_path) == before


async def test_a_changed_document_is_replaced_without_leftovers(tmp_path: Path) -> None:
    corpus_dir = tmp_path / "src"
    shutil.copytree(SAMPLE_CORPUS, corpus_dir)
    settings = Settings(data_dir=tmp_path / "data")
    await ingest_into(settings, corpus_dir)
    act = corpus_dir / "residential-tenancies-act.md"
    text = act.read_text()
    act.write_text(text[: text.index("## Part III")])  # drop sections 5 and 6
    report = await ingest_into(settings, corpus_dir)
    assert report.count("ingested") == 1 and report.count("unchanged") == 3
    ids, count, bm25, _ = await snapshot(tmp_path / "data")
    assert count == len(ids) == len(json.loads(bm25)["chunk_ids"])
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
    assert "unsupported file type '.tiff'" in status["scan.tiff"][1]
    assert report.failures == 3 and report.total_chunks > 0


def test_discovery_skips_hidden_files_but_not_a_dotted_path_to_the_folder(tmp_path: Path) -> None:
    (tmp_path / "corpus" / ".git").mkdir(parents=True)
    (tmp_path / "corpus" / "sub").mkdir()
    for name in ("a.md", ".hidden.md", ".git/config", "sub/b.txt"):
        (tmp_path / "corpus" / name).write_text("x")
    dotted = tmp_path / "corpus" / "sub" / ".." / "."
    assert [p.name for p in discover(dotted)] == ["a.md", "b.txt"]
