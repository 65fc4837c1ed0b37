"""The corpus's chunks by id, kept on disk: a serving process reads a chunk when an answer needs it.

A chunk parsed into a Python object costs about 3 KiB of memory (its text and a dozen short strings, each an object
of its own), so a national corpus of a million chunks would hold about 3 GiB in every replica only to read the few
dozen an answer cites. The table writes the chunks once, at load, to an SQLite file in the temporary folder (read
only after that, opened ``immutable`` so reads take no locks) and keeps in memory only the most recently read few
thousand, each id's hash (8 bytes, so an id not held costs no read) and one line of facets per document (its owner,
type, date and jurisdiction: what tenant views, listings and search filters read for every document). A read is by
the id's unique index, tens of microseconds.

It is a read-only ``Mapping`` from chunk id to ``Chunk``, in the order the chunks were given (their documents' order,
each document's chunks in order), so code that read the old dict reads this unchanged. The file is deleted when the
table is dropped (a corpus version that is replaced); a process that dies leaves it in the temporary folder, which
the operating system clears.
"""

from __future__ import annotations

import array
import os
import sqlite3
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from api.schemas.documents import Chunk

CACHED_CHUNKS = 4096
"""Chunks kept parsed after a read: an answer reads its hits and their neighbours several times over its steps."""
INSERT_BATCH = 2048
READ_BATCH = 900  # ids per ``IN (...)`` query: under SQLite's default limit of 999 bound parameters

COLUMNS = (
    "chunk_id", "doc_key", "section_id", "section_number", "section_heading", "section_label", "title",
    "jurisdiction", "text", "ordinal", "provision_id", "source_id", "doc_type", "date", "tenant",
)  # fmt: skip
_TYPES = ", ".join(f"{c} {'INTEGER' if c == 'ordinal' else 'TEXT'}" for c in COLUMNS)
_SCHEMA = f"""
CREATE TABLE chunks (row INTEGER PRIMARY KEY, {_TYPES});
CREATE UNIQUE INDEX chunk_ids ON chunks (chunk_id);
"""


@dataclass(frozen=True, slots=True)
class DocumentFacets:
    """What search filters, tenant views and listings read of a document, from its first chunk."""

    tenant: str
    doc_type: str
    date: str
    jurisdiction: str
    chunks: int


class ChunkTable(Mapping[str, Chunk]):
    """A read-only mapping from chunk id to ``Chunk``, stored in an SQLite file (see the module's docstring)."""

    def __init__(
        self, path: Path, count: int, documents: dict[str, DocumentFacets], hashes: npt.NDArray[np.int64]
    ) -> None:
        self.path = path
        self._count = count
        self._hashes = np.sort(hashes)
        """Each id's hash, sorted (8 bytes a chunk): an id that is not held (a section's next chunk, looked for when a
        context is widened) is answered without a read of the file."""
        self.documents = documents
        """Each document's facets, by doc key, in the order its chunks were given."""
        self._local = threading.local()
        self._cache: OrderedDict[str, Chunk] = OrderedDict()
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _remove, path)

    @classmethod
    def build(cls, chunks: Iterable[Chunk], directory: Path | None = None) -> ChunkTable:
        """Write ``chunks`` to a new file in ``directory`` (the temporary folder by default)."""
        writer = ChunkWriter(directory)
        try:
            writer.add(chunks)
        except BaseException:
            writer.abort()
            raise
        return writer.finish()

    def close(self) -> None:
        """Delete the file now (reads after this fail); otherwise it goes when the table is dropped."""
        self._finalizer()

    def _db(self) -> sqlite3.Connection:
        """This thread's connection (SQLite connections are not shared between threads)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
            self._local.db = db
        return db

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        for (chunk_id,) in self._db().execute("SELECT chunk_id FROM chunks ORDER BY row"):
            yield chunk_id

    def __contains__(self, chunk_id: object) -> bool:
        if not isinstance(chunk_id, str):
            return False
        if chunk_id in self._cache:
            return True
        if not self._may_hold(chunk_id):
            return False
        return self._db().execute("SELECT 1 FROM chunks WHERE chunk_id = ?", (chunk_id,)).fetchone() is not None

    def __getitem__(self, chunk_id: str) -> Chunk:
        chunk = self.get(chunk_id)
        if chunk is None:
            raise KeyError(chunk_id)
        return chunk

    def get(self, chunk_id: str, default: Chunk | None = None) -> Chunk | None:  # type: ignore[override]
        with self._lock:
            chunk = self._cache.get(chunk_id)
            if chunk is not None:
                self._cache.move_to_end(chunk_id)
                return chunk
        if not self._may_hold(chunk_id):
            return default
        row = self._db().execute(f"SELECT {', '.join(COLUMNS)} FROM chunks WHERE chunk_id = ?", (chunk_id,)).fetchone()
        if row is None:
            return default
        chunk = _chunk(row)
        self._remember(chunk)
        return chunk

    def many(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """The chunks of ``chunk_ids`` that the table holds, read in a few queries rather than one each."""
        found: dict[str, Chunk] = {}
        missing = []
        with self._lock:
            for chunk_id in chunk_ids:
                if (chunk := self._cache.get(chunk_id)) is not None:
                    found[chunk_id] = chunk
                else:
                    missing.append(chunk_id)
        for start in range(0, len(missing), READ_BATCH):
            part = missing[start : start + READ_BATCH]
            query = f"SELECT {', '.join(COLUMNS)} FROM chunks WHERE chunk_id IN ({', '.join('?' * len(part))})"
            for row in self._db().execute(query, part):
                found[row[0]] = chunk = _chunk(row)
                self._remember(chunk)
        return found

    def _may_hold(self, chunk_id: str) -> bool:
        """False when no held id has ``chunk_id``'s hash (so it is not held); True means a read must tell."""
        key = hash(chunk_id)
        at = int(np.searchsorted(self._hashes, key))
        return at < len(self._hashes) and int(self._hashes[at]) == key

    def _remember(self, chunk: Chunk) -> None:
        with self._lock:
            self._cache[chunk.chunk_id] = chunk
            if len(self._cache) > CACHED_CHUNKS:
                self._cache.popitem(last=False)

    def values(self) -> ValuesView[Chunk]:
        """Every chunk in order, read from the file as the iteration goes (none is kept)."""
        return _Values(self)

    def holds_exactly(self, chunk_ids: Sequence[str]) -> bool:
        """Whether the table holds these chunk ids and no others (the lexical index is of this corpus version)."""
        wanted = set(chunk_ids)
        return len(wanted) == self._count and all(chunk_id in wanted for chunk_id in self)

    def neighbours(self, chunk_id: str, offsets: Sequence[int]) -> list[str | None]:
        """The ids of the chunks ``offsets`` places before or after ``chunk_id`` in the table's order, None where
        that is outside its document."""
        db = self._db()
        found = db.execute("SELECT row, doc_key FROM chunks WHERE chunk_id = ?", (chunk_id,)).fetchone()
        if found is None:
            raise KeyError(chunk_id)
        row, doc_key = found
        rows = [row + d for d in offsets]
        near = {
            r: cid for r, cid, doc in
            db.execute(f"SELECT row, chunk_id, doc_key FROM chunks WHERE row IN ({', '.join('?' * len(rows))})", rows)
            if doc == doc_key
        }  # fmt: skip
        return [near.get(r) for r in rows]

    def headings(self) -> Iterator[tuple[str, str, str, str]]:
        """Each chunk's id, section id, law title and section heading, in order, without reading its text."""
        yield from self._db().execute("SELECT chunk_id, section_id, title, section_heading FROM chunks ORDER BY row")

    def doc_keys(self) -> Iterator[tuple[str, str]]:
        """Each chunk's id and its document's key, in order, without parsing the chunks."""
        yield from self._db().execute("SELECT chunk_id, doc_key FROM chunks ORDER BY row")


class _Values(ValuesView[Chunk]):
    def __init__(self, table: ChunkTable) -> None:
        super().__init__(table)
        self._table = table

    def __iter__(self) -> Iterator[Chunk]:
        for row in self._table._db().execute(f"SELECT {', '.join(COLUMNS)} FROM chunks ORDER BY row"):
            yield _chunk(row)


class ChunkWriter:
    """Writes a new chunk table a batch at a time (so a large corpus is never in memory at once); ``finish`` opens
    it for reading, ``abort`` deletes it."""

    def __init__(self, directory: Path | None = None) -> None:
        handle, name = tempfile.mkstemp(prefix="gweta-chunks-", suffix=".sqlite", dir=directory)
        os.close(handle)
        self.path = Path(name)
        self._first: dict[str, Chunk] = {}
        self._hashes = array.array("q")
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            # The file is rebuilt from the object store whenever it is lost: nothing is synced to disk as it is written.
            self._db.execute("PRAGMA journal_mode = OFF")
            self._db.execute("PRAGMA synchronous = OFF")
            self._db.executescript(_SCHEMA)
        except BaseException:
            _remove(self.path)
            raise

    def add(self, chunks: Iterable[Chunk]) -> None:
        """Append ``chunks``; a chunk id given again keeps its last chunk, as a dict built from them would."""
        insert = f"INSERT OR REPLACE INTO chunks ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        batch: list[tuple[object, ...]] = []
        for chunk in chunks:
            batch.append(tuple(getattr(chunk, c) for c in COLUMNS))
            self._first.setdefault(chunk.doc_key, chunk)
            self._hashes.append(hash(chunk.chunk_id))
            if len(batch) >= INSERT_BATCH:
                self._db.executemany(insert, batch)
                batch.clear()
        self._db.executemany(insert, batch)

    def finish(self) -> ChunkTable:
        try:
            self._db.commit()
            counts = dict(self._db.execute("SELECT doc_key, COUNT(*) FROM chunks GROUP BY doc_key").fetchall())
            self._db.close()
        except BaseException:
            self.abort()
            raise
        documents = {
            key: DocumentFacets(c.tenant, c.doc_type, c.date, c.jurisdiction, int(counts.get(key, 0)))
            for key, c in self._first.items()
        }
        hashes = np.frombuffer(self._hashes, dtype=np.int64)  # an id given twice is here twice: harmless to a lookup
        return ChunkTable(self.path, sum(d.chunks for d in documents.values()), documents, hashes)

    def abort(self) -> None:
        self._db.close()
        _remove(self.path)


def _chunk(row: Sequence[object]) -> Chunk:
    return Chunk.model_construct(**dict(zip(COLUMNS, row, strict=True)))  # type: ignore[arg-type]


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
