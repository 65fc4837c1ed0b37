"""Lexical (BM25) search over chunk texts, persisted to the object store as one artifact of token arrays."""

from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import logging
import math
import tempfile
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, Self

import numpy as np
import numpy.typing as npt

from api.errors import ConfigError
from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.text.words import stem, tokenize
from api.tools.object_store import ObjectStore, get_json, local_path
from api.tools.token_arrays import (
    ArtifactFormatError,
    TokenArrays,
    doc_counts,
    map_arrays,
    return_freed_memory,
    score_matrix,
)
from api.tools.vector_store import Hit

log = logging.getLogger(__name__)

BM25_KEY = "indexes/bm25.npz"
LEGACY_BM25_KEY = "indexes/bm25.json"  # every token a JSON string: still read, with a warning to ingest again
LEGACY_VERSION = 1


def analyze(tokens: Sequence[str], cfg: BM25Settings) -> list[str]:
    """The terms BM25 scores for ``tokenize``'s tokens: each stemmed when ``cfg.stem`` ("resources" and "resource"
    one term), plus each adjacent pair as one term when ``cfg.bigrams`` ("capital_resourc"), so a phrase the question
    shares with a provision counts for more than its words scattered apart."""
    terms = [stem(t) for t in tokens] if cfg.stem else list(tokens)
    if cfg.bigrams:
        terms += [f"{a}_{b}" for a, b in itertools.pairwise(terms)]
    return terms


def lexical_text(chunk: Chunk) -> str:
    """What BM25 indexes for a chunk: its words plus where it sits, so "Marriages Act section 3" finds it."""
    return f"{chunk.title} {chunk.section_number} {chunk.section_heading} {chunk.text}"


Fields = tuple[int, int]  # how many of a chunk's tokens are its title's, then its number's and heading's


def lexical_fields(chunk: Chunk) -> Fields:
    """Where ``tokenize(lexical_text(chunk))`` changes field: the title's token count, then the number and heading's."""
    return len(tokenize(chunk.title)), len(tokenize(f"{chunk.section_number} {chunk.section_heading}"))


def lexical_tokens(chunks: Sequence[Chunk]) -> tuple[list[list[str]], list[Fields]]:
    """What the BM25 index holds for ``chunks``, as ingestion stores it: each one's lexical text tokenized, and where
    its fields meet."""
    return [tokenize(lexical_text(c)) for c in chunks], [lexical_fields(c) for c in chunks]


def weigh_fields(tokens: list[str], fields: Fields | None, cfg: BM25Settings) -> list[str]:
    """The tokens with the title counted ``cfg.title_weight`` times and the number and heading ``cfg.heading_weight``
    times (the text once): field weights by repetition, as BM25F's term frequencies are a weighted sum over fields.
    Unchanged at the default weights or where the field boundaries are unknown."""
    if fields is None or (cfg.title_weight, cfg.heading_weight) == (1, 1):
        return tokens
    title, heading = fields
    return (tokens[:title] * cfg.title_weight + tokens[title : title + heading] * cfg.heading_weight
            + tokens[title + heading :])  # fmt: skip


Mask = npt.NDArray[np.bool_]


class LexicalIndex(Protocol):
    chunk_ids: list[str]
    tokens: TokenArrays  # each chunk's tokens as ingestion stored them, in ``chunk_ids``' order

    async def search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        """Best chunks for the query; ``mask`` (one flag per chunk id, in order) restricts scoring to allowed ones."""
        ...

    def expansion_terms(self, feedback_ids: Sequence[str], query: str, count: int = 8) -> list[str]:
        """Terms the feedback chunks share that the query lacks, best first (pseudo-relevance feedback)."""
        ...

    def document_frequency(self, term: str) -> int:
        """How many chunks contain the (tokenized) term."""
        ...

    @property
    def positions(self) -> dict[str, int]:
        """Each chunk id's position in ``chunk_ids``."""
        ...

    def family_frequency(self, term: str) -> int:
        """How many chunks contain a word of the term's family (same ``stem``): 'increased' counts 'increase'."""
        ...

    def __len__(self) -> int: ...


class _TokenIndex(abc.ABC):
    """What both backends share: chunk ids and their tokens (as ids into one vocabulary) in one order, and an async
    search off the loop."""

    def __init__(
        self, chunk_ids: Sequence[str], tokens: TokenArrays | Sequence[Sequence[str]], cfg: BM25Settings,
        fields: Sequence[Fields] | None = None,
    ) -> None:  # fmt: skip
        self.chunk_ids = list(chunk_ids)
        # ``fields`` go with token lists; arrays carry their own.
        self.tokens = tokens if isinstance(tokens, TokenArrays) else TokenArrays.of_lists(tokens, fields)
        self.cfg = cfg
        self._token_id = {token: i for i, token in enumerate(self.tokens.vocabulary)}

    def _weighted_fields(self) -> bool:
        return self.tokens.fields is not None and (self.cfg.title_weight, self.cfg.heading_weight) != (1, 1)

    def _terms(self, position: int) -> list[str]:
        """What the backend indexes for one chunk: its tokens with the field weights applied, then analyzed."""
        fields = self.tokens.field_of(position) if self._weighted_fields() else None
        weighted = weigh_fields(self.tokens[position], fields, self.cfg)
        return analyze(weighted, self.cfg) if self.cfg.stem or self.cfg.bigrams else weighted

    @classmethod
    def of_chunks(cls, chunks: Sequence[Chunk], cfg: BM25Settings) -> Self:
        """An index of ``chunks`` as ingestion stores them: their lexical text, tokenized, with its field boundaries."""
        tokens, fields = lexical_tokens(chunks)
        return cls([c.chunk_id for c in chunks], tokens, cfg, fields)

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @abc.abstractmethod
    def _search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        """Score and rank synchronously; each backend does it its own way."""

    async def search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        return await asyncio.to_thread(self._search, query, limit, mask)

    @functools.cached_property
    def positions(self) -> dict[str, int]:
        """Each chunk id's position in ``chunk_ids``."""
        return {cid: i for i, cid in enumerate(self.chunk_ids)}

    @functools.cached_property
    def _document_frequency(self) -> npt.NDArray[np.int64]:
        """Per token id, how many chunks hold it."""
        return doc_counts(self.tokens, None, len(self.tokens.vocabulary))

    def document_frequency(self, term: str) -> int:
        token = self._token_id.get(term)
        return 0 if token is None else int(self._document_frequency[token])

    @functools.cached_property
    def _family_frequency(self) -> dict[str, int]:
        families: dict[str, int] = {}
        family_of = np.fromiter(
            (families.setdefault(stem(t), len(families)) for t in self.tokens.vocabulary), dtype=np.int32,
            count=len(self.tokens.vocabulary),
        )  # fmt: skip
        counts = doc_counts(self.tokens, family_of, len(families)).tolist()
        return {family: int(counts[i]) for family, i in families.items()}

    def family_frequency(self, term: str) -> int:
        return self._family_frequency.get(stem(term), 0)

    def expansion_terms(self, feedback_ids: Sequence[str], query: str, count: int = 8) -> list[str]:
        """RM3-style: weight each term by its share of each feedback chunk times its idf, summed over chunks; keep
        terms in at least two feedback chunks (one chunk's quirks are not the topic) and not in most chunks."""
        asked = set(tokenize(query))
        df, total = self._document_frequency, max(1, len(self.tokens))
        vocabulary = self.tokens.vocabulary
        weights: dict[str, float] = {}
        present: Counter[str] = Counter()
        for cid in feedback_ids:
            position = self.positions.get(cid)
            if position is None:
                continue
            ids = self.tokens.ids_of(position).tolist()
            if not ids:
                continue
            for token, tf in Counter(ids).items():
                term, frequency = vocabulary[token], int(df[token])
                if term in asked or len(term) < 3 or frequency > total * 0.1:
                    continue
                weights[term] = weights.get(term, 0.0) + tf / len(ids) * math.log(total / frequency)
                present[term] += 1
        ranked = sorted(weights, key=lambda term: (-weights[term], term))
        return [term for term in ranked if present[term] >= 2][:count]


class RankBM25Index(_TokenIndex):
    """BM25Okapi from rank-bm25 over pre-tokenized chunks (pure Python; the reference implementation). It holds every
    chunk's terms as Python strings: for checks and small corpora, not a replica at scale."""

    def __init__(
        self, chunk_ids: Sequence[str], tokens: TokenArrays | Sequence[Sequence[str]], cfg: BM25Settings,
        fields: Sequence[Fields] | None = None,
    ) -> None:  # fmt: skip
        from rank_bm25 import BM25Okapi

        super().__init__(chunk_ids, tokens, cfg, fields)
        terms = [self._terms(i) for i in range(len(self.tokens))]
        # rank-bm25 divides by zero on an empty corpus.
        self._bm25 = BM25Okapi(terms, k1=cfg.k1, b=cfg.b) if terms else None

    def _search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        terms = analyze(tokenize(query), self.cfg)
        if self._bm25 is None or not terms:
            return []
        scores = np.asarray(self._bm25.get_scores(terms))
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        top = np.argsort(-scores, kind="stable")[:limit]
        return [Hit(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]


class Bm25sIndex(_TokenIndex):
    """bm25s's BM25 (Robertson variant, as rank-bm25's Okapi): every chunk's score for every term precomputed into a
    sparse matrix, so a query costs a few array lookups instead of a Python loop over every document (see
    benchmarks/results). The matrix is bm25s's value for value, but built here block by block from the token ids,
    so no Python string or list per token is ever held (benchmarks/results/bm25_memory.md)."""

    def __init__(
        self, chunk_ids: Sequence[str], tokens: TokenArrays | Sequence[Sequence[str]], cfg: BM25Settings,
        fields: Sequence[Fields] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(chunk_ids, tokens, cfg, fields)
        self._vocab, term_of, source = self._term_ids()
        weight_of = self._field_weights if self._weighted_fields() and not cfg.bigrams else None
        self._matrix = score_matrix(source, term_of, len(self._vocab), cfg.k1, cfg.b, weight_of)
        if source is self.tokens and term_of is None and weight_of is None:
            # Each term is one token, counted once: a column's length is how many chunks hold that token.
            self.__dict__["_document_frequency"] = np.diff(self._matrix.indptr)

    def _term_ids(self) -> tuple[dict[str, int], npt.NDArray[np.int32] | None, TokenArrays]:
        """The indexed terms' ids, how a token maps to its term (None: the token is the term) and the arrays the
        matrix counts. Word pairs depend on each chunk's order of terms, so with ``bigrams`` each chunk's terms are
        listed (``_terms``) and kept as arrays of their own; otherwise a term is one token's (stemmed or not)."""
        vocabulary = self.tokens.vocabulary
        if self.cfg.bigrams:
            terms = TokenArrays.of_lists(self._terms(i) for i in range(len(self.tokens)))
            return {t: i for i, t in enumerate(terms.vocabulary)}, None, terms
        if not self.cfg.stem:
            return dict(self._token_id), None, self.tokens
        stems: dict[str, int] = {}
        term_of = np.fromiter((stems.setdefault(stem(t), len(stems)) for t in vocabulary), dtype=np.int32,
                              count=len(vocabulary))  # fmt: skip
        return stems, term_of, self.tokens

    def _field_weights(self, start: int, end: int) -> npt.NDArray[np.int64]:
        """How many times each token of chunks start..end counts: the title's ``title_weight``, the number and
        heading's ``heading_weight``, the text's once (``weigh_fields`` by counts, which is all BM25 reads)."""
        assert self.tokens.fields is not None
        offsets = self.tokens.offsets[start : end + 1]
        sizes = np.diff(offsets)
        at = np.arange(int(offsets[-1] - offsets[0]), dtype=np.int64) - np.repeat(offsets[:-1] - offsets[0], sizes)
        title = np.repeat(self.tokens.fields[start:end, 0].astype(np.int64), sizes)
        heading = title + np.repeat(self.tokens.fields[start:end, 1].astype(np.int64), sizes)
        return np.where(at < title, self.cfg.title_weight, np.where(at < heading, self.cfg.heading_weight, 1))

    def _search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        terms = [self._vocab[t] for t in analyze(tokenize(query), self.cfg) if t in self._vocab]
        if not terms or not len(self):
            return []
        scores = self._matrix.scores(terms)
        if mask is not None:
            scores *= mask.astype(np.float32)
        limit = min(limit, len(scores))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.lexsort((top, -scores[top]))]
        return [Hit(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]


BACKENDS: dict[str, type[RankBM25Index] | type[Bm25sIndex]] = {"rank_bm25": RankBM25Index, "bm25s": Bm25sIndex}


async def save_lexical_artifact(
    store: ObjectStore, chunk_ids: Sequence[str], tokens: Sequence[Sequence[str]], fields: Sequence[Fields]
) -> None:
    """The artifact is backend-neutral (ids, tokens and where each chunk's fields meet), so switching backends,
    analyzers or field weights needs no re-ingest. The tokens go as arrays (``api.tools.token_arrays``); an
    artifact of the older JSON format is removed, so no replica reads it after this one."""
    data = await asyncio.to_thread(lambda: TokenArrays.of_lists(tokens, fields).to_bytes(chunk_ids))
    await store.put_bytes(BM25_KEY, data)
    await store.delete(LEGACY_BM25_KEY)


def _open_artifact(store: ObjectStore, data: bytes | None) -> tuple[list[str], TokenArrays] | None:
    """The stored artifact, memory-mapped: in place where the store is a folder on this machine, else from an
    unnamed temporary file holding the fetched bytes (gone from the disk when the index is dropped)."""
    path = local_path(store, BM25_KEY)
    if path is not None:
        try:
            with path.open("rb") as file:
                return map_arrays(file)
        except FileNotFoundError:
            return None
    if data is None:
        return None
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.flush()
        return map_arrays(file)


async def read_lexical_artifact(
    store: ObjectStore, cfg: BM25Settings | None = None
) -> tuple[list[str], TokenArrays] | None:
    """The stored chunk ids and their token arrays (memory-mapped), or None when nothing was ingested. An artifact of
    the older JSON format (every token a string) still loads, into arrays, with a warning to ingest again; one that
    is unreadable stops with a ``ConfigError`` saying so."""
    fetched = None if local_path(store, BM25_KEY) is not None else await store.get_bytes(BM25_KEY)
    try:
        opened = await asyncio.to_thread(_open_artifact, store, fetched)
    except ArtifactFormatError as exc:
        raise ConfigError(f"the BM25 index {BM25_KEY} is unreadable ({exc}): run 'gweta ingest' again") from exc
    del fetched
    return opened if opened is not None else await _load_legacy(store, cfg or BM25Settings())


async def load_lexical_index(store: ObjectStore, cfg: BM25Settings) -> LexicalIndex:
    """The stored lexical index, its tokens memory-mapped (``read_lexical_artifact``); empty before any ingestion."""
    index_type = BACKENDS[cfg.backend]
    opened = await read_lexical_artifact(store, cfg)
    if opened is None:
        return index_type([], [], cfg)
    chunk_ids, tokens = opened
    index = await asyncio.to_thread(index_type, chunk_ids, tokens, cfg)
    # The word-family counts every answer's checks read (rarity), built here off the event loop: 0.4 s at 35k chunks.
    await asyncio.to_thread(index.family_frequency, "")
    await asyncio.to_thread(index.document_frequency, "")
    tokens.release()  # the build read every page of the tokens; answers read a few chunks' again
    await asyncio.to_thread(return_freed_memory)
    return index


async def _load_legacy(store: ObjectStore, cfg: BM25Settings) -> tuple[list[str], TokenArrays] | None:
    """An artifact of the JSON format (before token arrays), as arrays; None when there is none."""
    artifact = await get_json(store, LEGACY_BM25_KEY)
    if artifact is None or artifact.get("version") != LEGACY_VERSION:
        return None
    log.warning("the BM25 index is in the older JSON format, which holds every token as a string (several GiB at a "
                "million chunks): run 'gweta ingest' again to store it as arrays")  # fmt: skip
    fields = artifact.get("fields")  # absent in artifacts written before field weights
    if fields is None and (cfg.title_weight, cfg.heading_weight) != (1, 1):
        log.warning("the BM25 index predates field weights, so they are not applied: run 'gweta ingest' again")
    fields = None if fields is None else [(int(t), int(h)) for t, h in fields]
    tokens = await asyncio.to_thread(TokenArrays.of_lists, artifact["tokens"], fields)
    return list(artifact["chunk_ids"]), tokens
