"""The chunk table: the corpus's chunks on disk, read as a dict of them was read, over the sample corpus's chunks."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from api.schemas.documents import Chunk
from api.tools.chunk_table import ChunkTable, ChunkWriter
from api.tools.corpus import Corpus, Manifest, load_chunks
from api.tools.object_store import LocalObjectStore


@pytest.fixture
async def stored(sample_data_dir: Path) -> tuple[list[Chunk], LocalObjectStore]:
    store = LocalObjectStore(sample_data_dir / "objects")
    manifest = await Manifest.load(store)
    return await load_chunks(store, manifest.documents), store


def test_the_table_reads_as_the_dict_of_its_chunks(stored: tuple[list[Chunk], LocalObjectStore]) -> None:
    chunks, _ = stored
    as_dict = {c.chunk_id: c for c in chunks}
    table = ChunkTable.build(chunks)
    assert len(table) == len(as_dict) > 20
    assert list(table) == list(as_dict)
    assert list(table.values()) == list(as_dict.values())
    assert dict(table.items()) == as_dict
    for chunk_id, chunk in as_dict.items():
        assert chunk_id in table and table[chunk_id] == chunk and table.get(chunk_id) == chunk
    assert "nowhere#s1/c0" not in table and table.get("nowhere#s1/c0") is None and 7 not in table
    with pytest.raises(KeyError):
        table["nowhere#s1/c0"]
    wanted = [chunks[3].chunk_id, "nowhere#s1/c0", chunks[30].chunk_id]
    assert table.many(wanted) == {cid: as_dict[cid] for cid in wanted if cid in as_dict}
    assert table.holds_exactly(list(reversed(as_dict)))
    assert not table.holds_exactly(list(as_dict)[1:])
    assert not table.holds_exactly([*as_dict, "nowhere#s1/c0"])
    assert list(table.doc_keys()) == [(c.chunk_id, c.doc_key) for c in as_dict.values()]


def test_each_documents_facets_are_its_first_chunks_and_its_count(
    stored: tuple[list[Chunk], LocalObjectStore],
) -> None:
    chunks, _ = stored
    table = ChunkTable.build(chunks)
    keys = list(dict.fromkeys(c.doc_key for c in chunks))
    assert list(table.documents) == keys
    for key in keys:
        mine = [c for c in chunks if c.doc_key == key]
        facets = table.documents[key]
        assert (facets.tenant, facets.doc_type, facets.date, facets.jurisdiction, facets.chunks) == (
            mine[0].tenant, mine[0].doc_type, mine[0].date, mine[0].jurisdiction, len(mine),
        )  # fmt: skip


def test_neighbours_stay_within_their_document(stored: tuple[list[Chunk], LocalObjectStore]) -> None:
    chunks, _ = stored
    table = ChunkTable.build(chunks)
    offsets = (-2, -1, 1, 2)
    for i, chunk in enumerate(chunks):
        expected = [
            chunks[j].chunk_id if 0 <= j < len(chunks) and chunks[j].doc_key == chunk.doc_key else None
            for j in (i + d for d in offsets)
        ]
        assert table.neighbours(chunk.chunk_id, offsets) == expected
    with pytest.raises(KeyError):
        table.neighbours("nowhere#s1/c0", offsets)


def test_a_chunk_id_given_twice_keeps_its_last_chunk(stored: tuple[list[Chunk], LocalObjectStore]) -> None:
    chunks, _ = stored
    changed = chunks[0].model_copy(update={"text": "Replaced text."})
    table = ChunkTable.build([*chunks, changed])
    assert len(table) == len(chunks)
    assert table[changed.chunk_id].text == "Replaced text."
    assert table.documents[changed.doc_key].chunks == sum(c.doc_key == changed.doc_key for c in chunks)


def test_reads_from_many_threads_at_once_agree(stored: tuple[list[Chunk], LocalObjectStore]) -> None:
    chunks, _ = stored
    table = ChunkTable.build(chunks)
    failures: list[str] = []

    def read(offset: int) -> None:
        for chunk in chunks[offset:] + chunks[:offset]:
            if table[chunk.chunk_id] != chunk:
                failures.append(chunk.chunk_id)

    threads = [threading.Thread(target=read, args=(n * 7,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_the_file_goes_when_the_table_is_dropped_or_closed(
    stored: tuple[list[Chunk], LocalObjectStore], tmp_path: Path
) -> None:
    chunks, _ = stored
    table = ChunkTable.build(chunks, tmp_path)
    path = table.path
    assert path.parent == tmp_path and path.exists() and table[chunks[0].chunk_id] == chunks[0]
    del table
    gc.collect()
    assert not path.exists()
    table = ChunkTable.build(chunks, tmp_path)
    table.close()
    assert not table.path.exists() and list(tmp_path.iterdir()) == []


def test_a_write_that_fails_leaves_no_file(stored: tuple[list[Chunk], LocalObjectStore], tmp_path: Path) -> None:
    chunks, _ = stored

    def failing() -> list[Chunk]:
        return [*chunks[:10], "not a chunk"]  # type: ignore[list-item]

    with pytest.raises(AttributeError):
        ChunkTable.build(failing(), tmp_path)
    assert list(tmp_path.iterdir()) == []
    writer = ChunkWriter(tmp_path)
    writer.add(chunks[:5])
    writer.abort()
    assert list(tmp_path.iterdir()) == []


async def test_a_loaded_corpus_holds_what_is_stored_a_batch_of_documents_at_a_time(
    stored: tuple[list[Chunk], LocalObjectStore],
) -> None:
    chunks, store = stored
    corpus = await Corpus.load(store, batch=2)  # several batches over the sample's five documents
    assert isinstance(corpus.chunks, ChunkTable)
    assert list(corpus.chunks.values()) == chunks
    assert corpus.chunks.documents.keys() == corpus.manifest.documents.keys()
    view = corpus.view_for("")
    assert view.chunks == len(chunks) and view.documents == len(corpus.manifest.documents)
    assert view.jurisdictions == frozenset(c.jurisdiction for c in chunks if c.jurisdiction)
