"""The lexical index stored as token arrays and memory-mapped ranks exactly as the in-memory index of token lists did.

The reference is bm25s itself, indexing each chunk's analyzed terms as Python lists (how the service built it
before the artifact held arrays), with the same top-k selection; scores are compared bit for bit.
"""

import json
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest

from api.errors import ConfigError
from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.text.words import stem, tokenize
from api.tools.bm25 import (
    BM25_KEY,
    Bm25sIndex,
    analyze,
    lexical_tokens,
    load_lexical_index,
    save_lexical_artifact,
    weigh_fields,
)
from api.tools.object_store import LocalObjectStore, S3ObjectStore
from api.tools.vector_store import Hit
from tests.servers import moto_s3, s3_bucket

CONFIGS = [
    BM25Settings(),
    BM25Settings(k1=1.2, b=0.5),
    BM25Settings(stem=True),
    BM25Settings(title_weight=2, heading_weight=3),
    BM25Settings(stem=True, title_weight=0, heading_weight=2),
    BM25Settings(bigrams=True),
    BM25Settings(stem=True, bigrams=True, title_weight=2, heading_weight=0),
]


@pytest.fixture(scope="module")
def obliqa(shared_data: Path) -> tuple[list[Chunk], list[str]]:
    """ObliQA's 13,012 passages as chunks (document title, passage number and heading, text) and 120 questions."""
    chunks = []
    with (shared_data / "obliqa/corpus.jsonl").open() as lines:
        for line in lines:
            row = json.loads(line)
            chunks.append(Chunk(chunk_id=row["id"], doc_key=str(row["document_id"]), section_id=row["id"],
                                section_number=row["passage_id"], section_heading=row["title"],
                                title=row["document_title"], text=row["text"], ordinal=0))  # fmt: skip
    with (shared_data / "obliqa/questions.jsonl").open() as lines:
        questions = [json.loads(line)["question"] for _, line in zip(range(120), lines, strict=False)]
    return chunks, questions


class Reference:
    """The index as the service held it before token arrays: every chunk's terms as Python strings, in bm25s."""

    def __init__(self, ids: list[str], tokens: list[list[str]], fields: list[tuple[int, int]], cfg: BM25Settings):
        self.ids, self.cfg = ids, cfg
        weighted = [weigh_fields(t, f, cfg) for t, f in zip(tokens, fields, strict=True)]
        terms = [analyze(t, cfg) for t in weighted] if cfg.stem or cfg.bigrams else weighted
        self.bm25 = bm25s.BM25(k1=cfg.k1, b=cfg.b, method="robertson")
        self.bm25.index(terms, show_progress=False)
        self.vocab = set(self.bm25.vocab_dict)

    def scores(self, query: str, mask: np.ndarray | None = None) -> np.ndarray | None:
        terms = [t for t in analyze(tokenize(query), self.cfg) if t in self.vocab]
        if not terms:
            return None
        weights = None if mask is None else mask.astype(np.float32)
        return np.asarray(self.bm25.get_scores(terms, weight_mask=weights))

    def search(self, query: str, limit: int, mask: np.ndarray | None = None) -> list[Hit]:
        scores = self.scores(query, mask)
        if scores is None:
            return []
        limit = min(limit, len(scores))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.lexsort((top, -scores[top]))]
        return [Hit(self.ids[i], float(scores[i])) for i in top if scores[i] > 0]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"k1={c.k1},b={c.b},stem={c.stem},bigrams={c.bigrams},"
                         f"weights={c.title_weight}/{c.heading_weight}")  # fmt: skip
async def test_an_index_loaded_from_arrays_ranks_as_the_in_memory_one(
    obliqa: tuple[list[Chunk], list[str]], cfg: BM25Settings, tmp_path: Path
) -> None:
    chunks, questions = obliqa
    ids = [c.chunk_id for c in chunks]
    tokens, fields = lexical_tokens(chunks)
    store = LocalObjectStore(tmp_path)
    await save_lexical_artifact(store, ids, tokens, fields)
    index = await load_lexical_index(store, cfg)
    assert isinstance(index, Bm25sIndex) and index.tokens.mapping is not None  # read in place, not into memory
    assert not index.tokens.ids.flags.writeable
    reference = Reference(ids, tokens, fields, cfg)
    mask = np.arange(len(ids)) % 3 != 0
    searched = 0
    for question in [*questions, "zebra quantum", "the of and", "AML 1.1 jurisdiction"]:
        expected = reference.scores(question)
        if expected is not None:
            assert np.array_equal(
                index._matrix.scores([index._vocab[t] for t in analyze(tokenize(question), cfg) if t in index._vocab]),
                expected,
            )
            searched += 1
        assert await index.search(question, 30) == reference.search(question, 30)
        assert await index.search(question, 10, mask) == reference.search(question, 10, mask)
    assert searched >= 120


async def test_the_arrays_give_back_every_token_and_the_same_frequencies(
    obliqa: tuple[list[Chunk], list[str]], tmp_path: Path
) -> None:
    chunks, questions = obliqa
    tokens, fields = lexical_tokens(chunks)
    store = LocalObjectStore(tmp_path)
    await save_lexical_artifact(store, [c.chunk_id for c in chunks], tokens, fields)
    index = await load_lexical_index(store, BM25Settings())
    assert len(index) == len(index.tokens) == len(tokens)
    assert all(index.tokens[i] == tokens[i] for i in range(len(tokens)))
    df = Counter(t for doc in tokens for t in set(doc))
    family = Counter(f for doc in tokens for f in {stem(t) for t in doc})
    assert all(index.document_frequency(t) == n for t, n in df.items())
    assert all(index.family_frequency(t) == family[stem(t)] for t in df)
    assert index.document_frequency("bitcoinzz") == index.family_frequency("bitcoinzz") == 0
    top = [h.chunk_id for h in await index.search(questions[0], 10)]
    assert index.expansion_terms(top, questions[0])  # the feedback chunks share terms the question lacks


async def test_the_artifact_goes_through_a_remote_object_store(
    obliqa: tuple[list[Chunk], list[str]], tmp_path: Path
) -> None:
    chunks, questions = obliqa
    chunks = chunks[:3000]
    ids = [c.chunk_id for c in chunks]
    tokens, fields = lexical_tokens(chunks)
    cfg = BM25Settings(stem=True, title_weight=2)
    local = LocalObjectStore(tmp_path)
    await save_lexical_artifact(local, ids, tokens, fields)
    here = await load_lexical_index(local, cfg)
    with moto_s3() as endpoint:
        remote = S3ObjectStore(s3_bucket(endpoint, "gweta"))
        await save_lexical_artifact(remote, ids, tokens, fields)
        assert await remote.get_bytes(BM25_KEY) == await local.get_bytes(BM25_KEY)
        there = await load_lexical_index(remote, cfg)
    assert there.tokens.mapping is not None and there.chunk_ids == ids  # mapped from a temporary file
    for question in questions[:40]:
        assert await there.search(question, 20) == await here.search(question, 20)


async def test_a_damaged_artifact_stops_the_load_with_a_clear_error(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    await store.put_bytes(BM25_KEY, b"PK\x03\x04 not an archive")
    with pytest.raises(ConfigError, match="run 'gweta ingest' again"):
        await load_lexical_index(store, BM25Settings())
    await save_lexical_artifact(store, ["a"], [["deposit"]], [(0, 0)])
    data = bytearray((await store.get_bytes(BM25_KEY)) or b"")
    data[data.index(b'"version": 2') : data.index(b'"version": 2') + 12] = b'"version": 9'
    await store.put_bytes(BM25_KEY, bytes(data))
    with pytest.raises(ConfigError, match="format version 9"):
        await load_lexical_index(store, BM25Settings())
