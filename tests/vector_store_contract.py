"""What every vector store must do, as plain async checks: run on Milvus Lite by pytest directly, and on a real
Milvus server by ``tests/milvus_server.py`` inside a private network namespace (see test_vector_store.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import numpy as np

from api.schemas.documents import Chunk
from api.tools.vector_store import MilvusVectorStore, SearchFilters

DIM = 16


def chunk(i: int, doc: str, **fields: str) -> Chunk:
    return Chunk(
        chunk_id=f"{doc}#s{i}:0", doc_key=doc, section_id=f"{doc}#s{i}", section_number=str(i),
        section_heading="", title=doc, text=f"text {i}", ordinal=0, **fields,
    )  # fmt: skip


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


async def check_nearest_first_and_upsert_replaces(store: MilvusVectorStore) -> None:
    rng = np.random.default_rng(1)
    vectors = unit(rng.normal(size=(40, DIM)))
    chunks = [chunk(i, f"zw/act/2020/{i % 4}") for i in range(40)]
    await store.upsert(chunks, vectors)
    await store.flush()
    assert await store.count() == 40
    hits = await store.search(vectors[7], 5)
    assert hits[0].chunk_id == chunks[7].chunk_id and hits[0].score > 0.99
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    await store.upsert([chunks[7]], unit(-vectors[7:8]))  # the same id again: replaced, not duplicated
    await store.flush()
    assert await store.count() == 40
    assert (await store.search(vectors[7], 1))[0].chunk_id != chunks[7].chunk_id


async def check_filters_apply_inside_the_search(store: MilvusVectorStore) -> None:
    rng = np.random.default_rng(2)
    chunks = [
        chunk(1, "zw/act/2019/1", jurisdiction="ZW", doc_type="act", date="2019-05-01"),
        chunk(2, "zw/act/2021/2", jurisdiction="ZW", doc_type="act", date="2021-01-10"),
        chunk(3, "za/judgment/2022/3", jurisdiction="ZA", doc_type="judgment", date="2022-03-03"),
        chunk(4, "acme/policy/2023/1", jurisdiction="ZW", doc_type="policy", date="", tenant="acme"),
    ]
    vectors = unit(rng.normal(size=(4, DIM)))
    await store.upsert(chunks, vectors)
    await store.flush()
    query = vectors.mean(axis=0)

    async def found(filters: SearchFilters) -> set[str]:
        return {h.chunk_id.split("#")[0] for h in await store.search(query, 10, filters)}

    assert await found(SearchFilters(jurisdiction="ZW")) == {"zw/act/2019/1", "zw/act/2021/2", "acme/policy/2023/1"}
    assert await found(SearchFilters(doc_type="judgment")) == {"za/judgment/2022/3"}
    assert await found(SearchFilters(doc_keys=("zw/act/2021/2", "nope"))) == {"zw/act/2021/2"}
    assert await found(SearchFilters(date_from="2020", date_to="2021-12")) == {"zw/act/2021/2"}
    assert await found(SearchFilters(tenants=("",))) == {"zw/act/2019/1", "zw/act/2021/2", "za/judgment/2022/3"}
    assert "acme/policy/2023/1" in await found(SearchFilters(tenants=("", "acme")))
    assert await found(SearchFilters(jurisdiction='ZW" or jurisdiction != "')) == set()  # quoted, not injected
    # Documents left out (those not in force on a question's day): every other one is found, with the other filters.
    left_out = SearchFilters(excluded=("zw/act/2019/1", "nope"))
    assert await found(left_out) == {"zw/act/2021/2", "za/judgment/2022/3", "acme/policy/2023/1"}
    assert await found(SearchFilters(jurisdiction="ZW", tenants=("",), excluded=("zw/act/2021/2",))) == {
        "zw/act/2019/1"
    }
    assert len(await found(SearchFilters(excluded=('x"] or doc_key in ["zw/act/2019/1',)))) == 4  # quoted


async def check_deletes_by_document_and_by_id(store: MilvusVectorStore) -> None:
    rng = np.random.default_rng(3)
    chunks = [chunk(i, f"d{i % 3}") for i in range(9)]
    await store.upsert(chunks, unit(rng.normal(size=(9, DIM))))
    await store.flush()
    await store.delete_document("d0")
    await store.delete_ids([chunks[1].chunk_id])
    await store.flush()
    assert await store.ids() == {c.chunk_id for c in chunks if c.doc_key != "d0"} - {chunks[1].chunk_id}
    assert await store.count() == 5


async def check_ids_pages_past_one_query(store: MilvusVectorStore) -> None:
    n = 17_000  # more than one Milvus query may return (16,384)
    rng = np.random.default_rng(4)
    chunks = [chunk(i, f"big/{i // 100}") for i in range(n)]
    for start in range(0, n, 4000):
        await store.upsert(
            chunks[start : start + 4000], unit(rng.normal(size=(len(chunks[start : start + 4000]), DIM)))
        )
    await store.flush()
    assert len(await store.ids()) == n and await store.count() == n


Check = Callable[[MilvusVectorStore], Awaitable[None]]
CONTRACT: list[Check] = [
    check_nearest_first_and_upsert_replaces,
    check_filters_apply_inside_the_search,
    check_deletes_by_document_and_by_id,
    check_ids_pages_past_one_query,
]
