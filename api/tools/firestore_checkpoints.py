"""A LangGraph checkpointer on Firestore (the async client): checkpoints, pending writes and per-session history.

Layout, one session per document so a session's reads never scan another's::

    <prefix>sessions/{thread}                                   thread_id, updated_at
        namespaces/{ns}                                         checkpoint_ns
            checkpoints/{checkpoint_id}                         ids, parent, type, checkpoint*, metadata*
                writes/{task_id|idx}                            task_id, task_path, idx, channel, type, value*
                chunks/{name-write-n}                           data: one piece of a value over the inline limit

Fields marked * are stored with :func:`api.tools.firestore.pack_blob`: inline up to 512 KiB, else split across chunk
documents (Firestore refuses documents over 1 MiB, and a long session's checkpoint outgrows that). Every read is a
get by known id or a query on a single collection ordered by one field, so Firestore's automatic single-field
indexes serve them all (no composite index to deploy), and nothing relies on ``list_documents``/``collections``.

PyPI's ``langgraph-checkpoint-firestore`` 0.4.0 was tried first against the emulator and left aside: a thread id
with a ``/`` (ours are ``tenant/subject/session``) makes it build an invalid document path and fail; it keeps each
checkpoint in one document, which real Firestore refuses past 1 MiB (the emulator does not enforce the limit, so
the contract test measures every stored document instead); it drives the synchronous client from the default
thread pool; and it finds sessions with ``list_documents``, which the emulator lacks.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from google.cloud.firestore import AsyncClient, AsyncCollectionReference, AsyncDocumentReference, Query
from google.cloud.firestore_v1.base_query import FieldFilter
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)

from api.tools.firestore import call, chunk_writes, commit_all, doc_id, pack_blob, read_blob

log = logging.getLogger(__name__)


class FirestoreSaver(BaseCheckpointSaver[str]):
    """Checkpoints per session in Firestore; async only (the graph is always run with ``astream``)."""

    def __init__(self, client: AsyncClient, prefix: str = "gweta_", timeout_s: float = 10.0) -> None:
        super().__init__()
        self.client = client
        self.sessions = client.collection(f"{prefix}sessions")
        self.timeout_s = timeout_s
        self._known_namespaces: set[tuple[str, str]] = set()

    # -- where things are --------------------------------------------------------------------------------------

    def _session(self, thread_id: str) -> AsyncDocumentReference:
        return self.sessions.document(doc_id(thread_id))

    def _namespace(self, thread_id: str, ns: str) -> AsyncDocumentReference:
        ref: AsyncDocumentReference = self._session(thread_id).collection("namespaces").document(doc_id(ns))
        return ref

    def _checkpoints(self, thread_id: str, ns: str) -> AsyncCollectionReference:
        ref: AsyncCollectionReference = self._namespace(thread_id, ns).collection("checkpoints")
        return ref

    def _checkpoint(self, thread_id: str, ns: str, checkpoint_id: str) -> AsyncDocumentReference:
        return self._checkpoints(thread_id, ns).document(doc_id(checkpoint_id))

    async def _query(self, query: Any, what: str) -> list[dict[str, Any]]:
        async def run() -> list[dict[str, Any]]:
            return [snap.to_dict() or {} async for snap in query.stream()]

        return await call(run(), what, self.timeout_s)

    # -- writing -----------------------------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (split into chunks when large), then record its session and namespace."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = str(config["configurable"].get("checkpoint_ns", ""))
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        packed_cp, packed_meta = pack_blob("checkpoint", blob), pack_blob("metadata", meta)
        head = self._checkpoint(thread_id, ns, checkpoint["id"])
        fields = {
            "thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id") or "", "type": type_,
            "written_at": time.time(), **packed_cp.fields, **packed_meta.fields,
        }  # fmt: skip
        writes = chunk_writes(head.collection("chunks"), (packed_cp, packed_meta))
        writes.append((head, fields))
        if (thread_id, ns) not in self._known_namespaces:
            writes.append((self._namespace(thread_id, ns), {"thread_id": thread_id, "checkpoint_ns": ns}))
        writes.append((self._session(thread_id), {"thread_id": thread_id, "updated_at": time.time()}))
        await commit_all(self.client, writes, self.timeout_s, "save a checkpoint")
        self._known_namespaces.add((thread_id, ns))
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a task's writes; like the SQLite saver, special channels replace and others are kept once."""
        conf = config["configurable"]
        head = self._checkpoint(str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), str(conf["checkpoint_id"]))
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        rows = []
        for idx, (channel, value) in enumerate(writes):
            index = WRITES_IDX_MAP.get(channel, idx)
            rows.append((head.collection("writes").document(doc_id(task_id, str(index))), index, channel, value))
        if not replace:
            existing: set[str] = set()

            async def fetch() -> None:
                async for snap in self.client.get_all([ref for ref, *_ in rows]):
                    if snap.exists:
                        existing.add(snap.id)

            await call(fetch(), "read pending writes", self.timeout_s)
            rows = [row for row in rows if row[0].id not in existing]
        ops: list[tuple[AsyncDocumentReference, dict[str, Any] | None]] = []
        for ref, index, channel, value in rows:
            type_, blob = self.serde.dumps_typed(value)
            packed = pack_blob("value", blob)
            ops += chunk_writes(head.collection("chunks"), [packed])
            ops.append((ref, {"task_id": task_id, "task_path": task_path, "idx": index, "channel": channel,
                              "type": type_, **packed.fields}))  # fmt: skip
        await commit_all(self.client, ops, self.timeout_s, "save pending writes")

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete a session: every namespace, checkpoint, pending write and chunk, found by query, not listing."""
        session = self._session(str(thread_id))
        ops: list[tuple[AsyncDocumentReference, dict[str, Any] | None]] = []
        for ns_doc in await self._query(session.collection("namespaces"), "list a session's namespaces"):
            ns = str(ns_doc.get("checkpoint_ns", ""))
            for cp in await self._query(self._checkpoints(thread_id, ns), "list a session's checkpoints"):
                head = self._checkpoint(thread_id, ns, str(cp["checkpoint_id"]))
                for sub in ("writes", "chunks"):
                    async for snap in head.collection(sub).stream():
                        ops.append((snap.reference, None))
                ops.append((head, None))
            ops.append((self._namespace(thread_id, ns), None))
            self._known_namespaces.discard((thread_id, ns))
        ops.append((session, None))
        await commit_all(self.client, ops, self.timeout_s, "delete a session")

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic channel versions with a random tail, as the SQLite saver makes them."""
        current_v = 0 if current is None else current if isinstance(current, int) else int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- reading -----------------------------------------------------------------------------------------------

    async def _tuple(self, head: dict[str, Any], ref: AsyncDocumentReference) -> CheckpointTuple:
        thread_id, ns, checkpoint_id = head["thread_id"], head["checkpoint_ns"], head["checkpoint_id"]
        chunks = ref.collection("chunks")
        checkpoint = self.serde.loads_typed((head["type"], await read_blob(head, "checkpoint", chunks, self.timeout_s)))
        metadata = json.loads(await read_blob(head, "metadata", chunks, self.timeout_s))
        rows = await self._query(ref.collection("writes"), "read pending writes")
        rows.sort(key=lambda r: writes_sort_key(str(r.get("task_path", "")), str(r["task_id"]), int(r["idx"])))
        pending: list[PendingWrite] = []
        for row in rows:
            value = self.serde.loads_typed((row["type"], await read_blob(row, "value", chunks, self.timeout_s)))
            pending.append((str(row["task_id"]), str(row["channel"]), value))
        parent = head.get("parent_checkpoint_id") or ""
        return CheckpointTuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}},
            checkpoint,
            cast(CheckpointMetadata, metadata),
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
            if parent
            else None,
            pending,
        )

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config``, or the session's latest in its namespace."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = str(config["configurable"].get("checkpoint_ns", ""))
        if checkpoint_id := get_checkpoint_id(config):
            ref = self._checkpoint(thread_id, ns, checkpoint_id)
            snap = await call(ref.get(), "read a checkpoint", self.timeout_s)
            if not snap.exists:
                return None
            return await self._tuple(snap.to_dict() or {}, ref)
        query = self._checkpoints(thread_id, ns).order_by("checkpoint_id", direction=Query.DESCENDING).limit(1)
        found = await self._query(query, "read the latest checkpoint")
        if not found:
            return None
        return await self._tuple(found[0], self._checkpoint(thread_id, ns, str(found[0]["checkpoint_id"])))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """A session's checkpoints (or every session's), newest first, like the SQLite saver's ``list``."""
        if config is not None:
            threads = [str(config["configurable"]["thread_id"])]
        else:
            threads = [str(s["thread_id"]) for s in await self._query(self.sessions, "list sessions")]
        wanted_ns = config["configurable"].get("checkpoint_ns") if config is not None else None
        wanted_id = get_checkpoint_id(config) if config is not None else None
        before_id = get_checkpoint_id(before) if before is not None else None
        heads: list[dict[str, Any]] = []
        for thread_id in threads:
            if wanted_ns is not None:
                namespaces = [str(wanted_ns)]
            else:
                found = await self._query(self._session(thread_id).collection("namespaces"), "list namespaces")
                namespaces = [str(n.get("checkpoint_ns", "")) for n in found]
            for ns in namespaces:
                query: Any = self._checkpoints(thread_id, ns).order_by("checkpoint_id", direction=Query.DESCENDING)
                if wanted_id:
                    query = query.where(filter=FieldFilter("checkpoint_id", "==", wanted_id))
                if before_id:
                    query = query.where(filter=FieldFilter("checkpoint_id", "<", before_id))
                if limit is not None and not filter:
                    query = query.limit(limit)
                heads += await self._query(query, "list checkpoints")
        heads.sort(key=lambda h: str(h["checkpoint_id"]), reverse=True)
        yielded = 0
        for head in heads:
            if limit is not None and yielded >= limit:
                return
            ref = self._checkpoint(str(head["thread_id"]), str(head["checkpoint_ns"]), str(head["checkpoint_id"]))
            item = await self._tuple(head, ref)
            if filter and any(item.metadata.get(k) != v for k, v in filter.items()):
                continue
            yielded += 1
            yield item
