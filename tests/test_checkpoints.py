"""One contract for every checkpointer: the SQLite default and Firestore (against the emulator on loopback).

Both are opened through ``open_checkpointer`` exactly as the service opens them, and driven both directly
(put/get/list, pending writes) and through a real LangGraph graph (resume, concurrent sessions, a state past 1 MiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.graph import END, START, StateGraph

from api.settings import CheckpointerSettings, Settings
from api.tools.checkpoints import open_checkpointer
from api.tools.firestore import close_firestore, open_firestore
from api.tools.firestore_checkpoints import FirestoreSaver
from tests.firestore_emulator import emulator_settings

Opener = Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[str]]]


@pytest.fixture(params=["sqlite", "firestore"])
def open_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the backend's saver over one store; each call is a fresh connection (a restarted replica)."""
    if request.param == "sqlite":
        settings = Settings(data_dir=tmp_path)
    else:
        host = request.getfixturevalue("firestore_host")
        settings = Settings(
            data_dir=tmp_path, checkpointer=CheckpointerSettings(backend="firestore"), firestore=emulator_settings(host)
        )

    @asynccontextmanager
    async def opened() -> AsyncIterator[BaseCheckpointSaver[str]]:
        client = open_firestore(settings.firestore_settings) if settings.checkpointer.backend == "firestore" else None
        try:
            async with open_checkpointer(settings, client) as saver:
                yield saver
        finally:
            if client is not None:
                await close_firestore(client)

    return opened


def checkpoint(n: int, **values: Any) -> Any:
    cp = empty_checkpoint()
    cp["id"] = f"1ef{n:05d}-0000-6000-8000-000000000000"  # ids sort by time, as LangGraph's uuid6 ids do
    cp["channel_values"] = values
    return cp


def conf(thread: str, checkpoint_id: str | None = None, ns: str = "") -> Any:
    c: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


async def test_put_get_list_and_pending_writes(open_saver: Opener) -> None:
    async with open_saver() as saver:
        parent = None
        for n in range(1, 4):
            stored = await saver.aput(conf("tenant/alice/s1", parent), checkpoint(n, turn=n), {"step": n}, {})
            parent = stored["configurable"]["checkpoint_id"]
        await saver.aput(conf("bob/s1"), checkpoint(9, turn=9), {"step": 1}, {})
        await saver.aput_writes(conf("tenant/alice/s1", parent), [("a", 1), ("b", "two")], task_id="t2", task_path="~1")
        await saver.aput_writes(conf("tenant/alice/s1", parent), [("c", [3])], task_id="t1", task_path="~0")
        await saver.aput_writes(conf("tenant/alice/s1", parent), [("a", "ignored")], task_id="t2", task_path="~1")

        latest = await saver.aget_tuple(conf("tenant/alice/s1"))
        assert latest is not None
        assert latest.checkpoint["channel_values"] == {"turn": 3}
        assert latest.metadata["step"] == 3
        assert latest.config["configurable"]["checkpoint_id"] == checkpoint(3)["id"]
        assert latest.parent_config is not None
        assert latest.parent_config["configurable"]["checkpoint_id"] == checkpoint(2)["id"]
        # Writes come back in the order LangGraph replays them (task path, task, index); a repeat is ignored.
        assert latest.pending_writes == [("t1", "c", [3]), ("t2", "a", 1), ("t2", "b", "two")]

        first = await saver.aget_tuple(conf("tenant/alice/s1", checkpoint(1)["id"]))
        assert first is not None and first.checkpoint["channel_values"] == {"turn": 1} and first.parent_config is None
        assert await saver.aget_tuple(conf("tenant/alice/s1", checkpoint(7)["id"])) is None
        assert await saver.aget_tuple(conf("nobody")) is None

        history = [t.checkpoint["channel_values"]["turn"] async for t in saver.alist(conf("tenant/alice/s1"))]
        assert history == [3, 2, 1]
        before = [t.metadata["step"] async for t in saver.alist(conf("tenant/alice/s1"), before=conf("x", parent))]
        assert before == [2, 1]
        assert [t.metadata["step"] async for t in saver.alist(conf("tenant/alice/s1"), limit=1)] == [3]
        assert [t.metadata["step"] async for t in saver.alist(conf("tenant/alice/s1"), filter={"step": 2})] == [2]
        everyone = [t.config["configurable"]["thread_id"] async for t in saver.alist(None)]
        assert sorted(everyone) == sorted(["tenant/alice/s1"] * 3 + ["bob/s1"])

        await saver.adelete_thread("tenant/alice/s1")
        assert await saver.aget_tuple(conf("tenant/alice/s1")) is None
        assert [t async for t in saver.alist(conf("tenant/alice/s1"))] == []
        assert await saver.aget_tuple(conf("bob/s1")) is not None


async def test_special_writes_replace_earlier_ones(open_saver: Opener) -> None:
    async with open_saver() as saver:
        stored = await saver.aput(conf("s"), checkpoint(1), {}, {})
        cid = stored["configurable"]["checkpoint_id"]
        await saver.aput_writes(conf("s", cid), [("__error__", "first failure")], task_id="t")
        await saver.aput_writes(conf("s", cid), [("__error__", "second failure")], task_id="t")
        got = await saver.aget_tuple(conf("s"))
        assert got is not None and got.pending_writes == [("t", "__error__", "second failure")]


class Turns(TypedDict):
    question: str
    turns: Annotated[list[str], operator.add]


def graph_with(saver: BaseCheckpointSaver[str], pause_s: float = 0.0) -> Any:
    async def answer(state: Turns) -> dict[str, Any]:
        await asyncio.sleep(pause_s)  # lets concurrent sessions interleave their writes
        return {"turns": [f"{state['question']} #{len(state['turns']) + 1}"]}

    builder = StateGraph(Turns)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


async def test_a_session_resumes_on_a_fresh_connection(open_saver: Opener) -> None:
    config = {"configurable": {"thread_id": "acme/carol/session-1"}}
    async with open_saver() as saver:
        await graph_with(saver).ainvoke({"question": "deposit?"}, config)
        await graph_with(saver).ainvoke({"question": "and interest?"}, config)
    async with open_saver() as saver:  # another replica, or the service after a restart
        state = await graph_with(saver).ainvoke({"question": "and notice?"}, config)
        assert state["turns"] == ["deposit? #1", "and interest? #2", "and notice? #3"]
        history = [t async for t in saver.alist(config)]
        assert [t.metadata["step"] for t in history] == list(range(7, -2, -1))  # 3 turns: input, answer each


async def test_concurrent_writers_to_two_sessions(open_saver: Opener) -> None:
    async with open_saver() as saver:
        graph = graph_with(saver, pause_s=0.01)

        async def session(name: str) -> None:
            for i in range(4):
                await graph.ainvoke({"question": f"{name}-{i}"}, {"configurable": {"thread_id": name}})

        await asyncio.gather(session("one"), session("two"))
        for name in ("one", "two"):
            state = await graph.aget_state({"configurable": {"thread_id": name}})
            assert state.values["turns"] == [f"{name}-{i} #{i + 1}" for i in range(4)]


# A graph worker: opens the data dir's checkpointer as the service does, waits for the common moment, then answers
# its session's first turn (a read and a write) at once with the others.
FIRST_TURN = """
import asyncio, sys, time
from pathlib import Path
from langgraph.checkpoint.base import empty_checkpoint
from api.settings import Settings
from api.tools.checkpoints import open_checkpointer

async def main(data_dir: str, at: float, thread: str) -> None:
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    async with open_checkpointer(Settings(data_dir=Path(data_dir))) as saver:
        await asyncio.sleep(at - time.time())
        await saver.aget_tuple(config)
        await saver.aput(config, {**empty_checkpoint(), "channel_values": {"turn": 1}}, {"step": 1}, {})

asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3]))
"""


async def test_processes_sharing_a_fresh_sqlite_file_answer_their_first_turns_at_once(tmp_path: Path) -> None:
    """``gweta serve`` opens the checkpointer, then starts graph workers that each open the same file: the tables and
    WAL mode are made by the first opener, so workers answering their first questions at the same moment do not
    race to make them (one of them failed with "database is locked" when each made them lazily)."""
    settings = Settings(data_dir=tmp_path)
    async with open_checkpointer(settings):
        with contextlib.closing(sqlite3.connect(tmp_path / "checkpoints.sqlite")) as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            assert {"checkpoints", "writes"} <= tables
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        at = time.time() + 8  # past every worker's imports
        root, args = Path(__file__).parent.parent, [sys.executable, "-c", FIRST_TURN, str(tmp_path), str(at)]
        workers = [
            await asyncio.create_subprocess_exec(*args, f"worker-{n}", cwd=root, stderr=asyncio.subprocess.PIPE)
            for n in range(4)
        ]
        failures = [(await w.communicate())[1].decode()[-600:] for w in workers]
        assert [w.returncode for w in workers] == [0] * 4, failures
        async with open_checkpointer(settings) as saver:
            for n in range(4):
                stored = await saver.aget_tuple(conf(f"worker-{n}"))
                assert stored is not None and stored.checkpoint["channel_values"] == {"turn": 1}


async def test_a_session_past_firestores_one_mib_document_limit(open_saver: Opener) -> None:
    config = {"configurable": {"thread_id": "long/session"}}
    long_turn = [os.urandom(350_000).hex() for _ in range(4)]  # 700 kB of text a turn: incompressible
    async with open_saver() as saver:
        graph = graph_with(saver)
        for text in long_turn:
            await graph.ainvoke({"question": text}, config)
        stored = await saver.aget_tuple(config)
        assert stored is not None
        assert sum(len(t) for t in stored.checkpoint["channel_values"]["turns"]) > 2_800_000
        # A pending write past the limit as well.
        await saver.aput_writes(stored.config, [("big", long_turn[0])], task_id="t")
    async with open_saver() as saver:
        state = await graph_with(saver).aget_state(config)
        assert state.values["turns"] == [f"{text} #{i + 1}" for i, text in enumerate(long_turn)]
        again = await saver.aget_tuple(config)
        assert again is not None and again.pending_writes == [("t", "big", long_turn[0])]


def firestore_size(name: str, fields: dict[str, Any]) -> int:
    """A document's stored size by Firestore's published rules (name + each field's name and value)."""

    def value(v: Any) -> int:
        if isinstance(v, bytes | str):
            return len(v.encode() if isinstance(v, str) else v) + 1
        if isinstance(v, list):
            return sum(value(x) for x in v)
        if isinstance(v, dict):
            return sum(len(k) + 1 + value(x) for k, x in v.items())
        return 8

    return len(name) + 1 + 16 + sum(len(k) + 1 + value(v) for k, v in fields.items())


async def test_no_firestore_document_reaches_the_one_mib_limit(firestore_host: str) -> None:
    """The emulator accepts documents of any size, so measure what the saver stores as real Firestore would."""
    cfg = emulator_settings(firestore_host)
    client = open_firestore(cfg)
    try:
        saver = FirestoreSaver(client, cfg.collection_prefix)
        graph = graph_with(saver)
        config = {"configurable": {"thread_id": "acme/dave/long"}}
        for _ in range(3):
            await graph.ainvoke({"question": os.urandom(400_000).hex()}, config)
        stored = await saver.aget_tuple(config)
        assert stored is not None
        await saver.aput_writes(stored.config, [("big", os.urandom(700_000).hex())], task_id="t")
        sizes = []
        checkpoints = saver._checkpoints("acme/dave/long", "")
        async for head in checkpoints.stream():
            sizes.append(firestore_size(head.reference.path, head.to_dict() or {}))
            for sub in ("chunks", "writes"):
                async for doc in head.reference.collection(sub).stream():
                    sizes.append(firestore_size(doc.reference.path, doc.to_dict() or {}))
        assert len(sizes) > 10 and max(sizes) < 1_048_576
        assert sum(sizes) > 3 * 2_400_000  # the state really was that large: it went into chunks
    finally:
        await close_firestore(client)
