"""One contract for QA memory backends: this process's, and Firestore's (on the emulator) that replicas share.

Vectors come from the real packaged embedding model, so "near-identical" means what it means in the service.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from api.settings import AuditSettings, CheckpointerSettings, EmbeddingSettings, LLMSettings, MemorySettings, Settings
from api.tools.embeddings import Embedder, build_embedder
from api.tools.firestore import close_firestore, open_firestore
from api.tools.firestore_memory import FirestoreQaMemory
from api.tools.memory import AnswerMemory, QaMemory
from tests.firestore_emulator import emulator_settings
from tests.servers import LiveServer
from tests.sse import collect

CITES = [{"index": 1, "doc_key": "a", "section_id": "a#s3", "quote": "two months"}]


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    with ThreadPoolExecutor(1) as pool:
        yield build_embedder(EmbeddingSettings(), pool)


MemoryFactory = Callable[[float], AnswerMemory]


@pytest.fixture(params=["process", "firestore"])
async def make_memory(request: pytest.FixtureRequest) -> AsyncIterator[MemoryFactory]:
    """Builds a memory with a given TTL; Firestore memories built by one test share one store (two replicas)."""
    if request.param == "process":

        def process(ttl_s: float) -> AnswerMemory:
            return QaMemory(0.92, ttl_s)

        yield process
        return
    cfg = emulator_settings(request.getfixturevalue("firestore_host"))
    clients = []

    def firestore(ttl_s: float) -> AnswerMemory:
        clients.append(open_firestore(cfg))
        return FirestoreQaMemory(clients[-1], 0.92, ttl_s, cfg.collection_prefix)

    yield firestore
    for client in clients:
        await close_firestore(client)


async def test_a_near_identical_question_is_recalled_under_the_same_key_only(
    make_memory: MemoryFactory, embedder: Embedder
) -> None:
    memory = make_memory(3600.0)
    key = ("v1", (("law_id", "x"),), "acme")
    question = "How much deposit can a landlord ask for?"
    await memory.aremember(key, await embedder.embed_query(question), question, "Two months' rent [1].", CITES)
    near = await memory.arecall(key, await embedder.embed_query("How much deposit can a landlord ask for"))
    assert near is not None and near.answer == "Two months' rent [1]." and near.citations == CITES
    assert near.question == question and 0.92 <= near.similarity <= 1.0
    assert await memory.arecall(key, await embedder.embed_query("What is the minimum age of marriage?")) is None
    for other in (("v2", key[1], "acme"), ("v1", (), "acme"), ("v1", key[1], "")):  # corpus, filters, tenant
        assert await memory.arecall(other, await embedder.embed_query(question)) is None


async def test_answers_expire(make_memory: MemoryFactory, embedder: Embedder) -> None:
    memory = make_memory(2.0)  # long enough that a busy machine still recalls it before it expires
    vector = await embedder.embed_query("Can my landlord cut off the electricity?")
    await memory.aremember("k", vector, "Can my landlord cut off the electricity?", "No [1].", CITES)
    assert await memory.arecall("k", vector) is not None
    await asyncio.sleep(2.2)
    assert await memory.arecall("k", vector) is None


async def test_a_long_answer_is_kept_whole(make_memory: MemoryFactory, embedder: Embedder) -> None:
    memory = make_memory(3600.0)
    vector = await embedder.embed_query("Summarise the whole Act")
    long_answer = "The Act says " + "a great deal. " * 120_000  # 1.7 MB: past Firestore's 1 MiB document limit
    await memory.aremember("k", vector, "Summarise the whole Act", long_answer, CITES * 3)
    found = await memory.arecall("k", vector)
    assert found is not None and found.answer == long_answer and found.citations == CITES * 3


async def test_firestore_memory_is_shared_by_replicas(firestore_host: str, embedder: Embedder) -> None:
    cfg = emulator_settings(firestore_host)
    one, two = open_firestore(cfg), open_firestore(cfg)
    try:
        question = "What notice is needed for a rent increase?"
        vector = await embedder.embed_query(question)
        await FirestoreQaMemory(one, prefix=cfg.collection_prefix).aremember("k", vector, question, "Three months [1].",
                                                                             CITES)  # fmt: skip
        found = await FirestoreQaMemory(two, prefix=cfg.collection_prefix).arecall("k", vector)
        assert found is not None and found.answer == "Three months [1]."
    finally:
        await close_firestore(one)
        await close_firestore(two)


async def test_two_replicas_on_firestore_share_sessions_memory_and_audit(
    sample_data_dir: Path, tmp_path: Path, firestore_host: str
) -> None:
    """Two app instances (each with its own copy of the index) and one Firestore: a session begun on one goes on
    on the other, an answer verified by one is served from memory by the other, and both write one audit log."""
    import shutil

    firestore = emulator_settings(firestore_host)
    apps = []
    for name in ("a", "b"):
        data_dir = tmp_path / name
        shutil.copytree(sample_data_dir, data_dir, ignore=shutil.ignore_patterns("LOCK"))
        apps.append(create_app(Settings(
            data_dir=data_dir, firestore=firestore, checkpointer=CheckpointerSettings(backend="firestore"),
            audit=AuditSettings(backend="firestore"), memory=MemorySettings(backend="firestore"), llm=LLMSettings(),
        )))  # fmt: skip
    question = "How much deposit can a landlord ask for?"
    with LiveServer(apps[0]) as one, LiveServer(apps[1]) as two:
        async with httpx.AsyncClient(timeout=60) as client:
            first = await collect(client, "GET", f"{one.url}/api/v1/query/stream",
                                  params={"q": question, "session_id": "shared"})  # fmt: skip
            again = await collect(client, "GET", f"{two.url}/api/v1/query/stream",
                                  params={"q": question, "session_id": "other"})  # fmt: skip
            follow = await collect(client, "GET", f"{two.url}/api/v1/query/stream",
                                   params={"q": "and what about interest on it?", "session_id": "shared"})  # fmt: skip
    assert first[-1].event == "final" and not first[-1].json()["cached"] and first[-1].json()["verified"]
    assert again[-1].json()["cached"] and again[-1].json()["answer"] == first[-1].json()["answer"]
    client_ = open_firestore(firestore)
    try:
        from api.tools.firestore_checkpoints import FirestoreSaver

        saver = FirestoreSaver(client_, firestore.collection_prefix)
        state = await saver.aget_tuple({"configurable": {"thread_id": "shared"}})
        assert state is not None
        turns = state.checkpoint["channel_values"]["turns"]
        assert len(turns) == 2 and follow[-1].event == "final"  # the follow-up continued the session begun on "a"
        from api.tools.audit import FirestoreAuditLog

        records = await FirestoreAuditLog(client_, firestore.collection_prefix).recent()
        assert sorted(r.outcome for r in records) == ["answered", "answered", "cached"]
    finally:
        await close_firestore(client_)
