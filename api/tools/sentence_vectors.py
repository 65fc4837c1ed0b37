"""The vectors of the corpus's quotable sentences, computed at ingestion and read by every process that answers.

The quote-only answer weighs each sentence of the provisions it retrieved by its meaning (the embedding cosine to the
question, ``api.composer.extractive``). Embedded on demand, a provision's sentences cost their model time the first
time a process quotes from it: a question that reaches provisions no earlier question reached cost 95 ms of CPU
against 18 ms (150 such questions over the 385 Acts, one at a time), and under load every graph worker paid it
again for itself, and again after each restart. So ingestion embeds every quotable sentence once, with the model that
embeds the questions, and writes the vectors beside the lexical index (``artifact_key``); a process that answers
finds a sentence by a digest of its text and embeds only what the artifact lacks.

A vector is a function of the text and the model alone, so an artifact behind the corpus is never wrong, only used
less; one written by another model (another label, ``name:dimensions`` as the manifest records it) is not read.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import numpy.typing as npt

from api.schemas.documents import Chunk
from api.text.units import heading_text, quotable_units
from api.tools.embeddings import Embedder, Vectors, model_label
from api.tools.object_store import ObjectStore, local_path
from api.tools.token_arrays import ArtifactFormatError, map_npz

log = logging.getLogger(__name__)

ARTIFACT_VERSION = 1
BATCH = 512  # sentences embedded per call at ingestion (the model sorts each call's texts by length)
Progress = Callable[[str, int, int | None], None]
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def artifact_key(label: str) -> str:
    """Where the sentence vectors of the embeddings model ``label`` are kept (one artifact per model)."""
    return f"indexes/sentences-{_UNSAFE.sub('_', label)}.npz"


def text_key(text: str) -> int:
    """A sentence's 64-bit digest: its key in the artifact (a collision among 10^5 sentences: about 1 in 10^9)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def text_keys(texts: Sequence[str]) -> npt.NDArray[np.uint64]:
    return np.fromiter((text_key(t) for t in texts), dtype=np.uint64, count=len(texts))


@dataclass(frozen=True, slots=True)
class SentenceVectors:
    """Unit vectors of sentences, found by ``text_key``; ``keys`` sorted, ``vectors`` in the same order."""

    label: str
    keys: npt.NDArray[np.uint64]
    vectors: Vectors

    @classmethod
    def build(cls, label: str, texts: Sequence[str], vectors: Vectors) -> SentenceVectors:
        keys = text_keys(texts)
        order = np.argsort(keys, kind="stable")
        return cls(label, keys[order], np.ascontiguousarray(vectors[order], dtype=np.float32))

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, texts: Sequence[str]) -> list[Vectors | None]:
        """Each text's vector, None where the artifact lacks it."""
        if not len(self.keys) or not texts:
            return [None] * len(texts)
        wanted = text_keys(texts)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        found = self.keys[at] == wanted
        return [self.vectors[i] if hit else None for i, hit in zip(at.tolist(), found.tolist(), strict=True)]

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        meta = json.dumps({"version": ARTIFACT_VERSION, "label": self.label})
        np.savez(out, meta=np.frombuffer(meta.encode(), dtype=np.uint8), keys=self.keys, vectors=self.vectors)
        return out.getvalue()

    @classmethod
    def from_file(cls, file: IO[bytes]) -> SentenceVectors | None:
        """The artifact in ``file``, its arrays memory-mapped (read in place, never copied into the process), or None
        when it is of another format version."""
        view, _ = map_npz(file)
        meta = json.loads(view("meta").tobytes())
        if meta.get("version") != ARTIFACT_VERSION:
            return None
        keys, vectors = view("keys"), view("vectors")
        if keys.dtype != np.uint64 or vectors.dtype != np.float32 or vectors.ndim != 2 or len(vectors) != len(keys):
            raise ArtifactFormatError("arrays of the wrong type or shape")
        return cls(str(meta["label"]), keys, vectors)


async def save_sentence_vectors(store: ObjectStore, sentences: SentenceVectors) -> None:
    await store.put_bytes(artifact_key(sentences.label), await asyncio.to_thread(sentences.to_bytes))


async def load_sentence_vectors(store: ObjectStore, label: str) -> SentenceVectors | None:
    """The sentence vectors the model ``label`` made here, or None (not ingested since, or unreadable: the answers
    then embed their sentences themselves)."""
    path = local_path(store, artifact_key(label))
    data = None if path is not None else await store.get_bytes(artifact_key(label))
    if path is None and data is None:
        return None
    try:  # off the event loop: a serving process reads it again at every corpus swap
        sentences = await asyncio.to_thread(_open_artifact, path, data)
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, OSError) as exc:
        log.warning("the sentence vectors at %s could not be read (%s); sentences are embedded as needed", label, exc)
        return None
    return sentences if sentences is not None and sentences.label == label else None


def _open_artifact(path: Path | None, data: bytes | None) -> SentenceVectors | None:
    """The artifact memory-mapped: in place where the store is a folder on this machine, else from an unnamed
    temporary file holding the fetched bytes (gone from the disk when the vectors are dropped). At a million chunks
    the vectors are gigabytes: mapped, a replica reads only the pages of the sentences its answers quote."""
    if path is not None:
        with path.open("rb") as file:
            return SentenceVectors.from_file(file)
    assert data is not None
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.flush()
        return SentenceVectors.from_file(file)


def embedded_texts(chunk: Chunk) -> list[str]:
    """What the artifact keeps for ``chunk``: its quotable sentences, and its provision's heading (with the law's
    title), which the search ranks by meaning (``api.tools.retrieval``)."""
    heading = heading_text(chunk)
    return [*quotable_units(chunk), heading] if heading else quotable_units(chunk)


async def rebuild_sentence_vectors(
    store: ObjectStore, chunks: Sequence[Chunk], embedder: Embedder, progress: Progress | None = None
) -> tuple[int, int]:
    """Write the vectors of every quotable sentence and provision heading of ``chunks`` (all the manifest owns,
    ``embedded_texts``), embedding only those the model's last artifact lacks; returns (texts kept, texts embedded
    now)."""
    label = model_label(embedder.name, embedder.dimensions)
    texts = await asyncio.to_thread(lambda: list(dict.fromkeys(u for c in chunks for u in embedded_texts(c))))
    before = await load_sentence_vectors(store, label)
    # Digesting every sentence (74k over the 385 Acts) is CPU work: off the event loop, as the stacking below.
    found = await asyncio.to_thread(before.find, texts) if before is not None else [None] * len(texts)
    missing = [text for text, vector in zip(texts, found, strict=True) if vector is None]
    if not missing and before is not None and len(before) == len(texts):
        return len(texts), 0  # the same sentences as the last run: nothing to write
    if progress:
        progress("sentences", 0, len(missing))
    computed: dict[str, Vectors] = {}
    for at in range(0, len(missing), BATCH):
        part = missing[at : at + BATCH]
        computed.update(zip(part, await embedder.embed_documents(part), strict=True))
        if progress:
            progress("sentences", len(part), None)

    def built() -> SentenceVectors:
        vectors = [vector if vector is not None else computed[text] for text, vector in zip(texts, found, strict=True)]
        matrix = np.stack(vectors) if vectors else np.zeros((0, embedder.dimensions), dtype=np.float32)
        return SentenceVectors.build(label, texts, matrix)

    await save_sentence_vectors(store, await asyncio.to_thread(built))
    return len(texts), len(missing)


class StoredSentences:
    """``inner`` (the query path's embedder) with the ingested sentence vectors read first: ``embed_documents``
    embeds only the texts ``stored`` lacks; questions are ``inner``'s as before."""

    def __init__(self, inner: Embedder, stored: SentenceVectors | None) -> None:
        self.inner, self.stored = inner, stored
        self.name, self.dimensions = inner.name, inner.dimensions
        self.found = self.embedded = 0

    async def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.stored is None or not texts:
            self.embedded += len(texts)
            return await self.inner.embed_documents(texts)
        found = self.stored.find(texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        self.found += len(texts) - sum(v is None for v in found)
        self.embedded += len(missing)
        computed = dict(zip(missing, await self.inner.embed_documents(missing), strict=True)) if missing else {}
        return np.stack([v if v is not None else computed[t] for t, v in zip(texts, found, strict=True)])

    async def embed_query(self, text: str) -> Vectors:
        return await self.inner.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)
