"""One contract for every lexical backend, and parity between them."""

import logging
from pathlib import Path

import pytest

from api.schemas.documents import Chunk
from api.settings import BM25Settings
from api.text.words import stem, tokenize
from api.tools.bm25 import (
    BACKENDS,
    BM25_KEY,
    LEGACY_BM25_KEY,
    analyze,
    lexical_fields,
    lexical_text,
    load_lexical_index,
    save_lexical_artifact,
)
from api.tools.object_store import LocalObjectStore, put_json

DOCS = {
    "tenancy#s3": "A landlord shall not require a deposit that exceeds the rent payable for two months.",
    "tenancy#s4": "A landlord shall not increase the rent more than once in any period of twelve months.",
    "work#s3": "No employer shall require an employee to work more than forty-five ordinary hours in any week.",
    "work#s5": "A female employee is entitled to maternity leave of ninety-eight days on full pay.",
    "data#s5": "The data controller shall notify the Authority within seventy-two hours of a breach.",
    "marriage#s3": "No person under the age of eighteen years may contract a marriage. Section 12(3)(a) applies.",
}


def build(backend: str):  # type: ignore[no-untyped-def]
    return BACKENDS[backend](list(DOCS), [tokenize(t) for t in DOCS.values()], BM25Settings(backend=backend))  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize(
    ("query", "first"),
    [("deposit two months rent", "tenancy#s3"), ("maternity leave days", "work#s5"),
     ("minimum age of marriage eighteen", "marriage#s3"), ("section 12", "marriage#s3")],
)  # fmt: skip
async def test_the_matching_chunk_ranks_first(backend: str, query: str, first: str) -> None:
    hits = await build(backend).search(query, 3)
    assert hits[0].chunk_id == first and hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_no_terms_or_no_corpus_means_no_hits(backend: str) -> None:
    assert await build(backend).search("zebra quantum", 5) == []
    assert await build(backend).search("the of and", 5) == []  # function words only
    empty = BACKENDS[backend]([], [], BM25Settings(backend=backend))  # type: ignore[arg-type]
    assert await empty.search("deposit", 5) == [] and len(empty) == 0


async def test_backends_rank_alike() -> None:
    for query in ("landlord rent months", "employee hours week", "notify breach hours"):
        ranked = [[h.chunk_id for h in await build(b).search(query, 4)] for b in sorted(BACKENDS)]
        assert ranked[0] == ranked[1]


@pytest.mark.parametrize(
    "family",
    [("increase", "increased", "increases", "increasing"), ("report", "reported", "reports"), ("shop", "shops"),
     ("notice", "notices"), ("party", "parties"), ("wage", "wages"), ("sale", "sales"),
     ("specify", "specified", "specifies"), ("marry", "married", "marries", "marrying"),
     ("employee", "employees"), ("committee", "committees"), ("trustee", "trustees"), ("fee", "fees"),
     ("transfer", "transferred", "transferring", "transfers"), ("commit", "committed", "committing"),
     ("programme", "programmes", "programmed"), ("rob", "robbed")],
)  # fmt: skip
def test_a_words_family_shares_one_stem(family: tuple[str, ...]) -> None:
    assert len({stem(word) for word in family}) == 1, {word: stem(word) for word in family}


def test_different_words_keep_different_stems() -> None:
    stems = [stem(w) for w in ("lease", "least", "leave", "lessor", "business", "fee", "free", "use")]
    assert len(set(stems)) == len(stems), stems
    # A plural of a person is not a form of the verb; a doubled l, s, f or z and a number's digits stay as written.
    for apart in (("employees", "employ"), ("trustees", "trust"), ("committees", "commit"), ("call", "cal"),
                  ("staff", "staf"), ("pass", "pas"), ("2022", "202"), ("add", "ad")):  # fmt: skip
        assert stem(apart[0]) != stem(apart[1]), apart


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_family_frequency_counts_every_inflection(backend: str) -> None:
    index = build(backend)
    assert index.document_frequency("increased") == 0 and index.family_frequency("increased") == 1
    assert index.family_frequency("notify") == index.document_frequency("notify") == 1
    assert index.family_frequency("bitcoin") == 0


def build_with(backend: str, docs: dict[str, str], **analyzer: bool):  # type: ignore[no-untyped-def]
    """An index of ``docs`` beside the six above (so a word in one or two texts has a positive idf)."""
    cfg = BM25Settings(backend=backend, **analyzer)  # type: ignore[arg-type]
    docs = DOCS | docs
    return BACKENDS[backend](list(docs), [tokenize(t) for t in docs.values()], cfg)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_stemming_finds_a_word_in_another_form(backend: str) -> None:
    docs = {"refund": "Landlords shall refund deposits within fourteen days."}
    plain = await build_with(backend, docs).search("landlord refunded", 3)
    assert "refund" not in [h.chunk_id for h in plain]  # exact words: neither form matches it
    hits = await build_with(backend, docs, stem=True).search("landlord refunded", 3)
    assert hits[0].chunk_id == "refund"


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_adjacent_word_pairs_rank_a_shared_phrase_first(backend: str) -> None:
    docs = {  # the same words, as one phrase or scattered, in texts of one length
        "scattered": "capital held by the firm and resources of the parent",
        "phrase": "capital resources held by the firm and of the parent",
    }
    plain = await build_with(backend, docs).search("capital resources", 2)
    assert plain[0].score == plain[1].score  # words alone cannot tell them apart
    paired = await build_with(backend, docs, bigrams=True).search("capital resources", 2)
    assert paired[0].chunk_id == "phrase" and paired[0].score > paired[1].score


def test_the_analyzer_keeps_tokens_and_adds_pairs_only_when_asked() -> None:
    tokens = tokenize("Deposits refunded by landlords")
    assert analyze(tokens, BM25Settings()) == tokens
    assert analyze(tokens, BM25Settings(stem=True)) == ["deposit", "refund", "landlord"]
    assert analyze(tokens, BM25Settings(stem=True, bigrams=True))[3:] == ["deposit_refund", "refund_landlord"]


# Two provisions: one names "maintenance of children" only in its heading, the other once in its shorter text.
FIELDED = [
    Chunk(chunk_id="heading", doc_key="m", section_id="m#s3", section_number="3",
          section_heading="Maintenance of children", title="Family Act",
          text="A court may order a parent to pay a monthly sum towards a child's upkeep.", ordinal=0),
    Chunk(chunk_id="text", doc_key="w", section_id="w#s9", section_number="9", section_heading="Deductions",
          title="Labour Act", text="An employer may deduct maintenance for children.", ordinal=0),
]  # fmt: skip


# Beside the six above, so a word in one or two texts has a positive idf.
CHUNKS = [Chunk(chunk_id=cid, doc_key=cid, section_id=cid, section_number="", section_heading="", title="", text=text,
                ordinal=0) for cid, text in DOCS.items()] + FIELDED  # fmt: skip


def build_fielded(backend: str, **weights: int):  # type: ignore[no-untyped-def]
    cfg = BM25Settings(backend=backend, **weights)  # type: ignore[arg-type]
    return BACKENDS[backend]([c.chunk_id for c in CHUNKS], [tokenize(lexical_text(c)) for c in CHUNKS], cfg,
                             [lexical_fields(c) for c in CHUNKS])  # fmt: skip


def test_the_fields_split_the_indexed_tokens_where_they_meet() -> None:
    chunk = FIELDED[0]
    title, heading = lexical_fields(chunk)
    tokens = tokenize(lexical_text(chunk))
    assert tokens[:title] == ["family", "act"]
    assert tokens[title : title + heading] == ["3", "maintenance", "children"]
    assert tokens[title + heading :] == tokenize(chunk.text)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_a_headings_weight_decides_whether_a_heading_match_outranks_a_text_match(backend: str) -> None:
    async def ranked(**weights: int) -> list[str]:
        return [h.chunk_id for h in await build_fielded(backend, **weights).search("maintenance children", 3)]

    assert await ranked(heading_weight=0) == ["text"]  # the heading is not indexed at all
    assert (await ranked())[:2] == ["text", "heading"]  # counted once, the shorter text's match wins
    assert (await ranked(heading_weight=2))[:2] == ["heading", "text"]
    assert [h.chunk_id for h in await build_fielded(backend, title_weight=0).search("labour", 3)] == []
    assert [h.chunk_id for h in await build_fielded(backend, title_weight=2).search("labour", 3)] == ["text"]


async def test_the_artifact_keeps_the_fields_and_an_older_one_loads_unweighted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = LocalObjectStore(tmp_path)
    ids, tokens = [c.chunk_id for c in CHUNKS], [tokenize(lexical_text(c)) for c in CHUNKS]
    await save_lexical_artifact(store, ids, tokens, [lexical_fields(c) for c in CHUNKS])
    index = await load_lexical_index(store, BM25Settings(heading_weight=0))
    assert [h.chunk_id for h in await index.search("maintenance children", 2)] == ["text"]

    # An artifact of the JSON format, written before field weights (and before token arrays): it still loads.
    await store.delete(BM25_KEY)
    await put_json(store, LEGACY_BM25_KEY, {"version": 1, "chunk_ids": ids, "tokens": tokens})
    with caplog.at_level(logging.WARNING, logger="api.tools.bm25"):
        older = await load_lexical_index(store, BM25Settings(heading_weight=0))
    assert sorted(h.chunk_id for h in await older.search("maintenance children", 2)) == ["heading", "text"]
    assert "predates field weights" in caplog.text and "run 'gweta ingest' again" in caplog.text
    assert older.tokens[0] == tokens[0] and older.document_frequency("landlord") == 2

    # Ingesting again writes the arrays and removes the JSON, so no replica reads the older one after.
    await save_lexical_artifact(store, ids, tokens, [lexical_fields(c) for c in CHUNKS])
    assert await store.get_bytes(LEGACY_BM25_KEY) is None
    again = await load_lexical_index(store, BM25Settings(heading_weight=0))
    assert [h.chunk_id for h in await again.search("maintenance children", 2)] == ["text"]
