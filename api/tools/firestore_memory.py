"""QA memory in Firestore, so a verified answer given by one replica is served by all of them.

Each answer is one document in ``<prefix>qa_memory`` whose id is a hash of its key and question (answering the same
question again replaces it): the key's hash, the question, its unit vector as float32 bytes, the answer and its
citations (JSON, split into chunk documents past 512 KiB), and ``expires_at`` (a timestamp, as TTL policies need).
A lookup is one query, ``key ==`` and ``expires_at >`` now (the composite index is declared in
``tools/firestore.indexes.json``, with a TTL policy on ``expires_at`` so Firestore deletes what has expired), then
one matrix product over the vectors it returns.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from google.cloud.firestore import AsyncClient
from google.cloud.firestore_v1.base_query import FieldFilter

from api.tools.embeddings import Vectors
from api.tools.firestore import call, chunk_writes, commit_all, pack_blob, read_blob
from api.tools.memory import Remembered


def key_hash(key: Hashable) -> str:
    """A stable name for a memory key (corpus version, filters, tenant), the same in every process."""
    return hashlib.sha256(json.dumps(key, default=str, sort_keys=True).encode()).hexdigest()


def _unit(vector: Vectors) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).ravel()
    return v / (np.linalg.norm(v) or 1.0)


class FirestoreQaMemory:
    """Verified answers in Firestore, looked up by exact key and nearest question vector."""

    def __init__(
        self,
        client: AsyncClient,
        threshold: float = 0.92,
        ttl_s: float = 3600.0,
        prefix: str = "gweta_",
        scan_limit: int = 500,
        timeout_s: float = 10.0,
    ) -> None:
        self.client = client
        self.answers = client.collection(f"{prefix}qa_memory")
        self.threshold = threshold
        self.ttl_s = ttl_s
        self.scan_limit = scan_limit
        self.timeout_s = timeout_s

    async def arecall(self, key: Hashable, vector: Vectors) -> Remembered | None:
        query = (
            self.answers.where(filter=FieldFilter("key", "==", key_hash(key)))
            .where(filter=FieldFilter("expires_at", ">", datetime.now(UTC)))
            .limit(self.scan_limit)
        )

        async def read() -> list[tuple[Any, dict[str, Any]]]:
            return [(snap.reference, snap.to_dict() or {}) async for snap in query.stream()]

        found = await call(read(), "look up QA memory", self.timeout_s)
        if not found:
            return None
        vectors = np.stack([np.frombuffer(bytes(doc["vector"]), dtype=np.float32) for _, doc in found])
        similarities = vectors @ _unit(vector)
        best = int(np.argmax(similarities))
        if similarities[best] < self.threshold:
            return None
        ref, doc = found[best]
        payload = json.loads(await read_blob(doc, "payload", ref.collection("chunks"), self.timeout_s))
        return Remembered(doc["question"], payload["answer"], payload["citations"], round(float(similarities[best]), 4))

    async def aremember(
        self, key: Hashable, vector: Vectors, question: str, answer: str, citations: list[dict[str, Any]]
    ) -> None:
        hashed = key_hash(key)
        ref = self.answers.document(hashlib.sha256(f"{hashed}\x00{question}".encode()).hexdigest())
        packed = pack_blob("payload", json.dumps({"answer": answer, "citations": citations}).encode())
        now = datetime.now(UTC)
        head = {
            "key": hashed, "question": question, "vector": _unit(vector).tobytes(), "created_at": now,
            "expires_at": now + timedelta(seconds=self.ttl_s), **packed.fields,
        }  # fmt: skip
        await commit_all(self.client, [*chunk_writes(ref.collection("chunks"), [packed]), (ref, head)],
                         self.timeout_s, "remember an answer")  # fmt: skip
