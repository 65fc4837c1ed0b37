"""Lexical (BM25) search over chunk texts, persisted to the object store as one JSON artifact."""

from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, Self

import numpy as np
import numpy.typing as npt

from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.tools.object_store import ObjectStore, get_json, put_json
from api.tools.vector_store import Hit

log = logging.getLogger(__name__)

BM25_KEY = "indexes/bm25.json"
ARTIFACT_VERSION = 1

# Function words only: legal words such as "shall", "may", "not", "any" carry meaning and stay.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or so that the their then there these "
    "this those to was what when where which who whom why with do does did can my me we you your".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word and number tokens, without function words; "12A" stays one token ("12a")."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


# Consonants a suffix doubles ("transferred", "committing", "programme"), undone in the stem; not l, s, f or z,
# which many words' own forms end with ("called", "passed", "staffed", "buzzed"), nor digits ("2022").
_UNDOUBLED = frozenset("bdgkmnprtv")
# (suffix, what replaces it, the shortest word it is taken from); the first that fits is taken. "-ees" loses only its
# "s": "employees" is the plural of "employee", not a form of "employ".
_SUFFIXES = (
    ("ies", "y", 7), ("ied", "y", 7), ("ees", "ee", 4), ("sses", "ss", 8), ("ing", "", 7), ("ed", "", 6),
    ("es", "", 6), ("s", "", 5),
)  # fmt: skip


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A deliberately small stemmer that puts a word's family under one key: 'deposits'~'deposit',
    'increase'~'increased'~'increases', 'reported'~'report', 'specify'~'specified'~'specifies',
    'employee'~'employees', 'transfer'~'transferred'~'transferring' (a final "e" is folded, as the suffixes remove
    it)."""
    for suffix, repl, shortest in _SUFFIXES:
        if len(word) >= shortest and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + repl
            break
    if len(word) > 3 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] and word[-1] in _UNDOUBLED else word


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
    tokens: list[list[str]]  # each chunk's tokens as ingestion stored them, in ``chunk_ids``' order

    async def search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        """Best chunks for the query; ``mask`` (one flag per chunk id, in order) restricts scoring to allowed ones."""
        ...

    def expansion_terms(self, feedback_ids: Sequence[str], query: str, count: int = 8) -> list[str]:
        """Terms the feedback chunks share that the query lacks, best first (pseudo-relevance feedback)."""
        ...

    def document_frequency(self, term: str) -> int:
        """How many chunks contain the (tokenized) term."""
        ...

    def family_frequency(self, term: str) -> int:
        """How many chunks contain a word of the term's family (same ``stem``): 'increased' counts 'increase'."""
        ...

    def __len__(self) -> int: ...


class _TokenIndex(abc.ABC):
    """What both backends share: chunk ids and their tokens in one order, and an async search off the loop."""

    def __init__(
        self, chunk_ids: Sequence[str], tokens: Sequence[list[str]], cfg: BM25Settings,
        fields: Sequence[Fields] | None = None,
    ) -> None:  # fmt: skip
        self.chunk_ids = list(chunk_ids)
        self.tokens = [list(t) for t in tokens]
        self.cfg = cfg
        # What the backend indexes; ``tokens`` stay as tokenized for the frequencies and the feedback terms.
        weighted = self.tokens if fields is None else [
            weigh_fields(t, f, cfg) for t, f in zip(self.tokens, fields, strict=True)
        ]  # fmt: skip
        self.terms = [analyze(t, cfg) for t in weighted] if cfg.stem or cfg.bigrams else weighted

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
    def _positions(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.chunk_ids)}

    @functools.cached_property
    def _document_frequency(self) -> Counter[str]:
        return Counter(token for tokens in self.tokens for token in set(tokens))

    def document_frequency(self, term: str) -> int:
        return self._document_frequency[term]

    @functools.cached_property
    def _family_frequency(self) -> Counter[str]:
        return Counter(family for tokens in self.tokens for family in {stem(token) for token in tokens})

    def family_frequency(self, term: str) -> int:
        return self._family_frequency[stem(term)]

    def expansion_terms(self, feedback_ids: Sequence[str], query: str, count: int = 8) -> list[str]:
        """RM3-style: weight each term by its share of each feedback chunk times its idf, summed over chunks; keep
        terms in at least two feedback chunks (one chunk's quirks are not the topic) and not in most chunks."""
        asked = set(tokenize(query))
        df, total = self._document_frequency, max(1, len(self.tokens))
        weights: dict[str, float] = {}
        present: Counter[str] = Counter()
        for cid in feedback_ids:
            position = self._positions.get(cid)
            if position is None or not self.tokens[position]:
                continue
            tokens = self.tokens[position]
            for term, tf in Counter(tokens).items():
                if term in asked or len(term) < 3 or df[term] > total * 0.1:
                    continue
                weights[term] = weights.get(term, 0.0) + tf / len(tokens) * math.log(total / df[term])
                present[term] += 1
        ranked = sorted(weights, key=lambda term: (-weights[term], term))
        return [term for term in ranked if present[term] >= 2][:count]


class RankBM25Index(_TokenIndex):
    """BM25Okapi from rank-bm25 over pre-tokenized chunks (pure Python; the reference implementation)."""

    def __init__(
        self, chunk_ids: Sequence[str], tokens: Sequence[list[str]], cfg: BM25Settings,
        fields: Sequence[Fields] | None = None,
    ) -> None:  # fmt: skip
        from rank_bm25 import BM25Okapi

        super().__init__(chunk_ids, tokens, cfg, fields)
        # rank-bm25 divides by zero on an empty corpus.
        self._bm25 = BM25Okapi(self.terms, k1=cfg.k1, b=cfg.b) if self.terms else None

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
    """bm25s: the same BM25 (Robertson variant, as rank-bm25's Okapi) precomputed into a sparse matrix, so a query
    costs a few array lookups instead of a Python loop over every document (see benchmarks/results)."""

    def __init__(
        self, chunk_ids: Sequence[str], tokens: Sequence[list[str]], cfg: BM25Settings,
        fields: Sequence[Fields] | None = None,
    ) -> None:  # fmt: skip
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG
        super().__init__(chunk_ids, tokens, cfg, fields)
        self._bm25 = bm25s.BM25(k1=cfg.k1, b=cfg.b, method="robertson") if self.terms else None
        if self._bm25 is not None:
            self._bm25.index(self.terms, show_progress=False)
            self._vocab = set(self._bm25.vocab_dict)

    def _search(self, query: str, limit: int, mask: Mask | None = None) -> list[Hit]:
        terms = [t for t in analyze(tokenize(query), self.cfg) if self._bm25 is not None and t in self._vocab]
        if self._bm25 is None or not terms:
            return []
        weights = None if mask is None else mask.astype(np.float32)
        scores = np.asarray(self._bm25.get_scores(terms, weight_mask=weights))
        limit = min(limit, len(scores))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.lexsort((top, -scores[top]))]
        return [Hit(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]


BACKENDS: dict[str, type[RankBM25Index] | type[Bm25sIndex]] = {"rank_bm25": RankBM25Index, "bm25s": Bm25sIndex}


async def save_lexical_artifact(
    store: ObjectStore, chunk_ids: Sequence[str], tokens: Sequence[list[str]], fields: Sequence[Fields]
) -> None:
    """The artifact is backend-neutral (ids, tokens and where each chunk's fields meet), so switching backends,
    analyzers or field weights needs no re-ingest."""
    await put_json(store, BM25_KEY, {"version": ARTIFACT_VERSION, "chunk_ids": list(chunk_ids),
                                     "tokens": [list(t) for t in tokens],
                                     "fields": [list(f) for f in fields]})  # fmt: skip


async def load_lexical_index(store: ObjectStore, cfg: BM25Settings) -> LexicalIndex:
    index_type = BACKENDS[cfg.backend]
    artifact = await get_json(store, BM25_KEY)
    if artifact is None or artifact.get("version") != ARTIFACT_VERSION:
        return index_type([], [], cfg)
    fields = artifact.get("fields")  # absent in artifacts written before field weights
    if fields is None and (cfg.title_weight, cfg.heading_weight) != (1, 1):
        log.warning("the BM25 index predates field weights, so they are not applied: run 'gweta ingest' again")
    fields = None if fields is None else [(int(t), int(h)) for t, h in fields]
    index = await asyncio.to_thread(index_type, artifact["chunk_ids"], artifact["tokens"], cfg, fields)
    # The word-family counts every answer's checks read (rarity), built here off the event loop: 0.4 s at 35k chunks.
    await asyncio.to_thread(index.family_frequency, "")
    return index
