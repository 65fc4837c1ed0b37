"""Chunks' tokens as arrays: one vocabulary and each chunk's token ids, stored in one file and memory-mapped.

A Python string per token costs about 60 bytes and a list slot; an id costs 4. The lexical index keeps its tokens
here, so a replica's resident memory grows with the vocabulary (tens of thousands of words) rather than with every
token of the corpus (tens of millions at a million chunks).

File format: an uncompressed ``.npz`` (as ``numpy.savez`` writes, with a fixed date so equal tokens give equal bytes)
with

    meta      uint8, UTF-8 JSON: {"version", "chunk_ids": [...], "vocabulary": [...]}
    ids       int32, every chunk's token ids, chunk after chunk
    offsets   int64, len(chunk_ids) + 1: chunk i's ids are ids[offsets[i]:offsets[i + 1]]
    fields    int32, (len(chunk_ids), 2): how many of a chunk's tokens are its title's, then its number and heading's

Each member is stored, not deflated, so ``map_arrays`` reads the arrays in place through one ``mmap``; ``np.load``
reads the same file anywhere else.
"""

from __future__ import annotations

import array
import ctypes
import io
import json
import mmap
import struct
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int32] | npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

FORMAT_VERSION = 2
# Chunks whose tokens are counted together in one step: bounds the temporary arrays to tens of MiB whatever
# the corpus size, so the peak while building stays near the memory the result keeps.
BLOCK_TOKENS = 1_000_000


class ArtifactFormatError(ValueError):
    """The file is not a token-array artifact this code reads (another format or version, or damaged)."""


@dataclass(eq=False)
class TokenArrays:
    """Each chunk's tokens as ids into ``vocabulary``; ``tokens[i]`` gives chunk i's tokens back as strings."""

    vocabulary: list[str]
    ids: npt.NDArray[np.int32]
    offsets: npt.NDArray[np.int64]
    fields: npt.NDArray[np.int32] | None = None
    """Per chunk (title tokens, number-and-heading tokens); None where the source did not record them."""
    mapping: mmap.mmap | None = field(default=None, repr=False)
    """The file the arrays are views of, when memory-mapped."""

    @classmethod
    def of_lists(cls, tokens: Iterable[Sequence[str]], fields: Sequence[tuple[int, int]] | None = None) -> TokenArrays:
        """The arrays of token lists (ids in order of first appearance), read one list at a time: an iterator of
        lists made on the fly is never held whole."""
        index: dict[str, int] = {}
        ids, lengths = array.array("i"), array.array("q", [0])
        for doc in tokens:
            ids.extend(index.setdefault(t, len(index)) for t in doc)
            lengths.append(len(doc))
        offsets = np.cumsum(np.frombuffer(lengths, dtype=np.int64))
        field_array = None if fields is None else np.asarray(fields, dtype=np.int32).reshape(len(offsets) - 1, 2)
        return cls(list(index), np.frombuffer(ids, dtype=np.int32).copy(), offsets, field_array)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, position: int) -> list[str]:
        vocabulary = self.vocabulary
        return [vocabulary[i] for i in self.ids[self.offsets[position] : self.offsets[position + 1]].tolist()]

    def __iter__(self) -> Iterator[list[str]]:
        return (self[i] for i in range(len(self)))

    def ids_of(self, position: int) -> npt.NDArray[np.int32]:
        return self.ids[self.offsets[position] : self.offsets[position + 1]]

    def field_of(self, position: int) -> tuple[int, int] | None:
        if self.fields is None:
            return None
        title, heading = self.fields[position].tolist()
        return int(title), int(heading)

    def blocks(self, size: int = BLOCK_TOKENS) -> Iterator[tuple[int, int]]:
        """(first chunk, end chunk) ranges of about ``size`` tokens each, in order, covering every chunk."""
        start, n = 0, len(self)
        while start < n:
            end = int(np.searchsorted(self.offsets, self.offsets[start] + size, side="right")) - 1
            end = min(n, max(end, start + 1))
            yield start, end
            start = end

    def release(self) -> None:
        """Drop the mapped file's pages from this process's resident memory: they stay in the page cache, and a
        later read maps them back. Called once an index has read them all while building."""
        if self.mapping is not None:
            self.mapping.madvise(mmap.MADV_DONTNEED)

    def to_bytes(self, chunk_ids: Sequence[str]) -> bytes:
        """The artifact file's bytes."""
        meta = json.dumps({"version": FORMAT_VERSION, "chunk_ids": list(chunk_ids), "vocabulary": self.vocabulary},
                          ensure_ascii=False).encode()  # fmt: skip
        fields = self.fields if self.fields is not None else np.zeros((0, 2), dtype=np.int32)
        arrays = {"meta": np.frombuffer(meta, dtype=np.uint8), "ids": self.ids, "offsets": self.offsets,
                  "fields": fields}  # fmt: skip
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
            for name, array in arrays.items():
                # A fixed date (``np.savez`` stamps the time): the same tokens give the same bytes.
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                with archive.open(info, "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
        return out.getvalue()


def return_freed_memory() -> None:
    """Hand the C heap's free pages back to the system. glibc keeps the pages of freed temporary arrays in the heap
    of the thread that freed them (an index is built in a worker thread), where they would stay resident for the
    life of the process; elsewhere a no-op."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _members(file: IO[bytes]) -> dict[str, tuple[int, np.dtype[Any], tuple[int, ...], bool]]:
    """Where each array of an ``.npz`` starts in the file (after its ``.npy`` header), its dtype, shape and order."""
    found = {}
    with zipfile.ZipFile(file) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ArtifactFormatError(f"member {info.filename!r} is compressed or not an array")
            file.seek(info.header_offset)
            local = file.read(30)
            if local[:4] != b"PK\x03\x04":
                raise ArtifactFormatError("damaged zip header")
            name_length, extra_length = struct.unpack("<HH", local[26:30])
            file.seek(info.header_offset + 30 + name_length + extra_length)
            version = np.lib.format.read_magic(file)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
            if dtype.hasobject:
                raise ArtifactFormatError(f"member {info.filename!r} holds Python objects")
            found[info.filename[: -len(".npy")]] = (file.tell(), dtype, shape, fortran)
    return found


def map_npz(file: IO[bytes]) -> tuple[Callable[[str], npt.NDArray[Any]], mmap.mmap]:
    """The arrays of an uncompressed ``.npz`` file read in place (memory-mapped, read-only): a function from a
    member's name to its array, and the mapping they are views of. Pages are read from the file as they are
    touched and count as the page cache's, not the process's own memory."""
    try:
        members = _members(file)
        mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (zipfile.BadZipFile, OSError, struct.error, ValueError) as exc:
        raise ArtifactFormatError(f"not an uncompressed array file ({type(exc).__name__})") from exc

    def view(name: str) -> npt.NDArray[Any]:
        if name not in members:
            raise ArtifactFormatError(f"no {name!r} array")
        start, dtype, shape, fortran = members[name]
        count = int(np.prod(shape))
        if start + count * dtype.itemsize > len(mapping):
            raise ArtifactFormatError(f"the {name!r} array runs past the end of the file")
        array = np.frombuffer(mapping, dtype=dtype, count=count, offset=start) if count else np.empty(0, dtype)
        return array.reshape(shape, order="F" if fortran else "C")

    return view, mapping


def map_arrays(file: IO[bytes]) -> tuple[list[str], TokenArrays]:
    """The chunk ids and token arrays of an artifact file, the arrays read in place (memory-mapped, read-only)."""
    view, mapping = map_npz(file)
    try:
        meta = json.loads(view("meta").tobytes())
    except ValueError as exc:
        raise ArtifactFormatError("unreadable metadata") from exc
    if not isinstance(meta, dict) or meta.get("version") != FORMAT_VERSION:
        raise ArtifactFormatError(f"format version {meta.get('version') if isinstance(meta, dict) else None}")
    chunk_ids, vocabulary = list(meta["chunk_ids"]), list(meta["vocabulary"])
    ids, offsets, fields = view("ids"), view("offsets"), view("fields")
    if ids.dtype != np.int32 or offsets.dtype != np.int64 or len(offsets) != len(chunk_ids) + 1:
        raise ArtifactFormatError("arrays of the wrong type or length")
    return chunk_ids, TokenArrays(vocabulary, ids, offsets, fields if len(fields) else None, mapping)


def doc_counts(tokens: TokenArrays, term_of: npt.NDArray[np.int32] | None, n_terms: int) -> npt.NDArray[np.int64]:
    """How many chunks hold each term, where a token's term is ``term_of[token id]`` (the token itself if None)."""
    counts = np.zeros(n_terms, dtype=np.int64)
    for start, end in tokens.blocks():
        terms, docs = _block_terms(tokens, start, end, term_of)
        keys = np.unique(terms.astype(np.int64) * (end - start) + docs)
        counts += np.bincount(keys // (end - start), minlength=n_terms)
    return counts


def _block_terms(
    tokens: TokenArrays, start: int, end: int, term_of: npt.NDArray[np.int32] | None
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """A block's terms, token by token, and the chunk (counted from ``start``) each belongs to."""
    lo, hi = int(tokens.offsets[start]), int(tokens.offsets[end])
    ids = np.asarray(tokens.ids[lo:hi])
    terms = ids if term_of is None else term_of[ids]
    docs = np.repeat(np.arange(end - start, dtype=np.int64), np.diff(tokens.offsets[start : end + 1]))
    return terms, docs


@dataclass
class ScoreMatrix:
    """BM25 (Robertson) scores as bm25s lays them out: a column per term (CSC), each chunk's score for it."""

    data: FloatArray
    indices: npt.NDArray[np.int32]
    indptr: npt.NDArray[np.int64]
    n_docs: int

    def scores(self, term_ids: Sequence[int]) -> FloatArray:
        """Each chunk's score for the query's terms (one column added per term, repeats included)."""
        ids = np.asarray(term_ids, dtype=np.int32)
        starts, ends = self.indptr[ids], self.indptr[ids + 1]
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for i in range(len(ids)):  # as bm25s adds them: column after column, in the query's order
            np.add.at(scores, self.indices[starts[i] : ends[i]], self.data[starts[i] : ends[i]])
        return scores


def robertson_idf(df: int, n_docs: int) -> float:
    """bm25s's Robertson idf, floored at 0 for a term in most chunks."""
    import math

    return math.log(max(1.0, (n_docs - df + 0.5) / (df + 0.5)))


def score_matrix(
    tokens: TokenArrays, term_of: npt.NDArray[np.int32] | None, n_terms: int, k1: float, b: float,
    weight_of: Callable[[int, int], npt.NDArray[np.int64]] | None = None,
) -> ScoreMatrix:  # fmt: skip
    """The score matrix bm25s builds for these chunks, value for value, built block by block from the ids (no
    Python object per token). A token's term is ``term_of[token id]``; ``weight_of(start, end)`` gives how many
    times each token of chunks start..end counts (a field's weight; 0 leaves it out), else once."""
    n_docs = len(tokens)
    lengths = np.zeros(n_docs, dtype=np.int64)
    for start, end in tokens.blocks():
        if weight_of is None:
            lengths[start:end] = np.diff(tokens.offsets[start : end + 1])
        else:
            weights = weight_of(start, end)
            _, docs = _block_terms(tokens, start, end, None)
            lengths[start:end] = np.bincount(docs, weights=weights, minlength=end - start).astype(np.int64)
    average = lengths.mean() if n_docs else np.float64(0.0)

    def counted(start: int, end: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The block's (term, chunk) pairs as one key each (term-major, so sorted by term then chunk), and how
        many times each occurs."""
        terms, docs = _block_terms(tokens, start, end, term_of)
        keys = terms.astype(np.int64) * (end - start) + docs
        if weight_of is None:
            unique, counts = np.unique(keys, return_counts=True)
            return unique, counts.astype(np.float64)
        weights = weight_of(start, end)
        kept = weights > 0
        unique, inverse = np.unique(keys[kept], return_inverse=True)
        sums = np.bincount(inverse, weights=weights[kept].astype(np.float64), minlength=len(unique))
        return unique, sums.astype(np.float64)

    df = np.zeros(n_terms, dtype=np.int64)
    for start, end in tokens.blocks():
        keys, _ = counted(start, end)
        df += np.bincount(keys // (end - start), minlength=n_terms)
    values, inverse = np.unique(df, return_inverse=True)  # each distinct count's idf computed once, in Python
    idf = np.array([robertson_idf(v, n_docs) if v else 0.0 for v in values.tolist()], dtype=np.float32)[inverse]

    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    cursor = indptr[:-1].copy()
    for start, end in tokens.blocks():
        keys, tf = counted(start, end)
        terms, docs = keys // (end - start), keys % (end - start)
        # The same arithmetic bm25s does per chunk: tf / (k1 * ((1 - b) + b * len / avg) + tf) in float64 (its
        # length and average are float64 scalars), times the float32 idf, stored as float32.
        norm = k1 * ((1 - b) + b * lengths[start:end].astype(np.float64) / average)
        tfc = tf.astype(np.float32).astype(np.float64)
        values = (idf[terms].astype(np.float64) * (tfc / (norm[docs] + tfc))).astype(np.float32)
        first = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        sizes = np.diff(np.r_[first, len(terms)])
        rank = np.arange(len(terms)) - np.repeat(first, sizes)
        column = terms[first]
        at = np.repeat(cursor[column], sizes) + rank
        data[at] = values
        indices[at] = (docs + start).astype(np.int32)
        cursor[column] += sizes
    return ScoreMatrix(data, indices, indptr, n_docs)


def artifact_chunk_ids(data: bytes) -> list[str]:
    """The chunk ids of an artifact's bytes, read without mapping it (``np.load`` reads the format anywhere)."""
    with np.load(io.BytesIO(data)) as arrays:
        return list(json.loads(arrays["meta"].tobytes())["chunk_ids"])
