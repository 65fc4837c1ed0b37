"""The vector-store contract (tests/vector_store_contract.py) on Milvus Lite, on Milvus Lite served by its in-memory
exact index, and on a real Milvus server started inside a private network namespace together with its client; and
the exact index against Lite's own search."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent import futures
from pathlib import Path

import grpc
import numpy as np
import pytest

from api.errors import BackendError
from api.tools.embeddings import Vectors
from api.tools.vector_store import NO_FILTERS, Hit, MilvusVectorStore, SearchFilters
from tests.milvus_server import NAMESPACE_COMMAND
from tests.vector_store_contract import CONTRACT, DIM, Check, chunk, unit

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
async def lite(tmp_path: Path) -> AsyncIterator[MilvusVectorStore]:
    store = MilvusVectorStore(str(tmp_path / "milvus.db"), "contract", DIM)
    yield store
    await store.close()


@pytest.mark.parametrize("check", CONTRACT, ids=lambda c: c.__name__)
async def test_contract_on_milvus_lite(lite: MilvusVectorStore, check: Check) -> None:
    await check(lite)


class SettledStore(MilvusVectorStore):
    """Milvus Lite whose every search waits until the exact index holds what was written, so the contract runs on
    the index alone (the service searches Lite meanwhile)."""

    searches = served_exact = 0

    async def search(self, vector: Vectors, limit: int, filters: SearchFilters = NO_FILTERS) -> list[Hit]:
        self.searches += 1
        if await self.exact_ready():
            self.served_exact += 1
        return await super().search(vector, limit, filters)


@pytest.mark.parametrize("check", CONTRACT, ids=lambda c: c.__name__)
async def test_contract_on_the_exact_index(tmp_path: Path, check: Check) -> None:
    store = SettledStore(str(tmp_path / "milvus.db"), "contract", DIM, exact_max_rows=10_000)
    try:
        await check(store)
        assert store.served_exact == store.searches
    finally:
        await store.close()


async def test_the_exact_index_finds_what_lite_finds_and_is_rebuilt_after_writes(tmp_path: Path) -> None:
    store = MilvusVectorStore(str(tmp_path / "milvus.db"), "exact", DIM, exact_max_rows=10_000)
    try:
        rng = np.random.default_rng(7)
        vectors = unit(rng.normal(size=(300, DIM)))
        chunks = [chunk(i, f"zw/act/2020/{i % 5}", jurisdiction="ZW" if i % 3 else "ZA") for i in range(300)]
        await store.upsert(chunks, vectors)
        await store.flush()
        queries = unit(rng.normal(size=(20, DIM)))
        filters = [NO_FILTERS, SearchFilters(jurisdiction="ZA"), SearchFilters(doc_keys=("zw/act/2020/1",))]
        lite = [[await store.search(q, 10, f) for f in filters] for q in queries]  # no index yet: Lite answers
        assert await store.exact_ready() and store.exact is not None and len(store.exact) == 300
        for q, expected in zip(queries, lite, strict=True):
            for f, hits in zip(filters, expected, strict=True):
                exact = await store.search(q, 10, f)
                assert [h.chunk_id for h in exact] == [h.chunk_id for h in hits]
                assert [h.score for h in exact] == pytest.approx([h.score for h in hits], abs=1e-5)
        # A write drops the index at once; the next one holds the new row.
        await store.upsert([chunk(999, "zw/act/2020/9")], unit(-vectors[:1]))
        assert store.exact is None
        assert (await store.search(-vectors[0], 1))[0].chunk_id == "zw/act/2020/9#s999:0"  # Lite, meanwhile
        assert await store.exact_ready() and len(store.exact) == 301
        assert (await store.search(-vectors[0], 1))[0].chunk_id == "zw/act/2020/9#s999:0"
        await store.delete_document("zw/act/2020/9")
        assert await store.exact_ready() and len(store.exact) == 300
    finally:
        await store.close()


async def test_too_many_vectors_for_memory_are_searched_in_lite(tmp_path: Path) -> None:
    store = MilvusVectorStore(str(tmp_path / "milvus.db"), "big", DIM, exact_max_rows=50)
    try:
        vectors = unit(np.random.default_rng(3).normal(size=(60, DIM)))
        await store.upsert([chunk(i, "zw/act/2020/1") for i in range(60)], vectors)
        await store.flush()
        assert not await store.exact_ready() and store.exact is None
        assert (await store.search(vectors[5], 1))[0].chunk_id == "zw/act/2020/1#s5:0"
    finally:
        await store.close()


def test_contract_on_a_milvus_server() -> None:
    """Milvus 2.3.5 from PyPI, by URI, in `unshare -n` with loopback up (it binds every interface)."""
    assert shutil.which("unshare"), "this test needs util-linux's unshare (and the right to make a network namespace)"
    command = NAMESPACE_COMMAND.format(python=sys.executable, args="contract")
    run = subprocess.run(["unshare", "-n", "sh", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = run.stdout + run.stderr[-3000:]
    assert run.returncode == 0, report
    for check in CONTRACT:
        assert f"ok {check.__name__}" in run.stdout, report


class RefusingSearches(grpc.GenericRpcHandler):
    """A loopback gRPC proxy in front of a Milvus Lite engine: every call passes through as bytes, but searches are
    refused with a code pymilvus does not retry (it re-raises those as they are, not as its own exception)."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = details.method
        forward = self.channel.unary_unary(method)

        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            if method.endswith("/Search"):
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "search took too long")
            try:
                return bytes(forward(request, metadata=context.invocation_metadata()))
            except grpc.RpcError as exc:  # the engine's own refusals pass through unchanged
                context.abort(exc.code(), exc.details() or "")

        return grpc.unary_unary_rpc_method_handler(handle)


async def test_a_refused_call_after_connecting_is_a_backend_error(tmp_path: Path) -> None:
    """A Milvus server that fails a search with a gRPC error is the service's ``BackendError`` (a clear 503 and error
    event), never an unexpected exception answered as ``internal_error``."""
    from milvus_lite.adapter.grpc.server import start_server_in_thread

    engine, db, port = start_server_in_thread(data_dir=str(tmp_path / "lite"), host="127.0.0.1", port=0)
    refusing = RefusingSearches(f"127.0.0.1:{port}")
    proxy = grpc.server(futures.ThreadPoolExecutor(4), handlers=[refusing])
    proxy_port = proxy.add_insecure_port("127.0.0.1:0")
    proxy.start()
    try:
        store = MilvusVectorStore(f"http://127.0.0.1:{proxy_port}", "refused", DIM)
        try:
            await store.upsert([chunk(1, "a")], unit(np.ones((1, DIM))))
            with pytest.raises(BackendError, match="DEADLINE_EXCEEDED.*search took too long"):
                await store.search(unit(np.ones((1, DIM)))[0], 5)
        finally:
            await store.close()
    finally:
        proxy.stop(0)
        refusing.channel.close()
        engine.stop(0)
        db.close()
