"""The audit record of every question: who asked, for which tenant, when, what was cited, by which model, how long
each stage took, and whether the answer verified.

``AuditLog`` is the protocol; ``SqliteAuditLog`` (``<data_dir>/audit.sqlite``) is the embedded default and
``FirestoreAuditLog`` (``<prefix>audit``) the production one, so every replica writes to one place. The question
itself is kept only when ``audit.store_question=text``; by default the record holds its salted SHA-256, which still
lets an operator find every record of a question they are shown, without keeping what callers typed.

``AuditTrail`` watches a query's event stream (``meta`` … ``final``/``error``) and writes one record per question
in the background: a slow or failing audit store delays no answer, and a failure is logged, never sent to the caller.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from api.errors import ConfigError
from api.schemas.events import ErrorEvent, FinalEvent, MetaEvent, StreamEvent
from api.settings import AuditSettings, Settings

if TYPE_CHECKING:
    from google.cloud.firestore import AsyncClient

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One question, as the audit log keeps it."""

    id: str
    at: float
    """Seconds since the epoch (UTC) when the question was received."""
    caller: str
    tenant: str
    session_id: str
    question_sha256: str
    question: str
    """The text, or '' when the privacy setting keeps only the hash."""
    route: str
    model: str
    """The LLM that wrote the answer, or 'extractive' when none is configured."""
    outcome: str
    """'answered', 'abstained', 'cached' or 'error:<code>'."""
    verified: bool
    sources: list[str] = field(default_factory=list)
    """Provision ids cited, in citation order."""
    timings: dict[str, float] = field(default_factory=dict)
    """Milliseconds per stage, and 'total'."""
    trace_id: str = ""
    corpus_version: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditRecord:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class AuditLog(Protocol):
    """Where audit records go; ``recent`` reads them back newest first (for operators and tests)."""

    async def record(self, entry: AuditRecord) -> None: ...

    async def recent(self, *, tenant: str | None = None, limit: int = 50) -> list[AuditRecord]: ...

    async def close(self) -> None: ...


def question_hash(question: str, salt: str) -> str:
    """The salted SHA-256 of the question as asked, whitespace and case folded."""
    normal = " ".join(question.split()).casefold()
    return hashlib.sha256(f"{salt}\x00{normal}".encode()).hexdigest()


class SqliteAuditLog:
    """Audit records in one SQLite file; calls run in a thread so the event loop never waits on the disk."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS audit (id TEXT PRIMARY KEY, at REAL NOT NULL, tenant TEXT NOT NULL,"
            " record TEXT NOT NULL)"
        )
        self._conn.execute("CREATE INDEX IF NOT EXISTS audit_tenant_at ON audit (tenant, at)")
        self._lock = asyncio.Lock()

    async def record(self, entry: AuditRecord) -> None:
        row = (entry.id, entry.at, entry.tenant, json.dumps(entry.to_dict(), ensure_ascii=False))
        async with self._lock:
            await asyncio.to_thread(self._conn.execute, "INSERT OR REPLACE INTO audit VALUES (?, ?, ?, ?)", row)

    async def recent(self, *, tenant: str | None = None, limit: int = 50) -> list[AuditRecord]:
        where, params = ("WHERE tenant = ?", (tenant,)) if tenant is not None else ("", ())

        def read() -> list[Any]:
            sql = f"SELECT record FROM audit {where} ORDER BY at DESC, id DESC LIMIT ?"
            return self._conn.execute(sql, (*params, limit)).fetchall()

        async with self._lock:
            rows = await asyncio.to_thread(read)
        return [AuditRecord.from_dict(json.loads(r[0])) for r in rows]

    async def close(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self._conn.close)


class FirestoreAuditLog:
    """Audit records as documents in ``<prefix>audit``, one per question, keyed by its record id.

    ``recent`` for one tenant queries ``tenant ==`` ordered by ``at``: Firestore serves that from the composite
    index declared in ``tools/firestore.indexes.json``.
    """

    def __init__(self, client: AsyncClient, prefix: str = "gweta_", timeout_s: float = 10.0) -> None:
        self._records = client.collection(f"{prefix}audit")
        self._timeout_s = timeout_s

    async def record(self, entry: AuditRecord) -> None:
        from api.tools.firestore import call

        await call(self._records.document(entry.id).set(entry.to_dict()), "write an audit record", self._timeout_s)

    async def recent(self, *, tenant: str | None = None, limit: int = 50) -> list[AuditRecord]:
        from google.cloud.firestore import Query
        from google.cloud.firestore_v1.base_query import FieldFilter

        from api.tools.firestore import call

        query: Any = self._records.order_by("at", direction=Query.DESCENDING)
        if tenant is not None:
            query = query.where(filter=FieldFilter("tenant", "==", tenant))
        query = query.limit(limit)

        async def read() -> list[AuditRecord]:
            return [AuditRecord.from_dict(snap.to_dict() or {}) async for snap in query.stream()]

        return await call(read(), "read audit records", self._timeout_s)

    async def close(self) -> None:
        return None


class NoAuditLog:
    """``audit.backend=off``: nothing is kept."""

    async def record(self, entry: AuditRecord) -> None:
        return None

    async def recent(self, *, tenant: str | None = None, limit: int = 50) -> list[AuditRecord]:
        return []

    async def close(self) -> None:
        return None


def build_audit_log(settings: Settings, firestore: AsyncClient | None = None) -> AuditLog:
    match settings.audit.backend:
        case "sqlite":
            return SqliteAuditLog(settings.data_dir / "audit.sqlite")
        case "firestore":
            if firestore is None:
                raise ConfigError("audit.backend=firestore needs the service's Firestore client")
            cfg = settings.firestore_settings
            return FirestoreAuditLog(firestore, cfg.collection_prefix, cfg.timeout_s)
        case "off":
            return NoAuditLog()


class AuditTrail:
    """Turns a question's event stream into one audit record, written in the background."""

    def __init__(self, log_: AuditLog, cfg: AuditSettings, model: str) -> None:
        self.log = log_
        self.cfg = cfg
        self.model = model
        self._pending: set[asyncio.Task[None]] = set()

    async def watch(
        self, events: AsyncIterator[StreamEvent], *, question: str, caller: str, tenant: str, session_id: str
    ) -> AsyncIterator[StreamEvent]:
        """Pass every event through unchanged; when ``final`` or ``error`` goes by, record the question."""
        at, meta = time.time(), None
        async for event in events:
            if isinstance(event, MetaEvent):
                meta = event
            elif isinstance(event, FinalEvent | ErrorEvent):
                self._write(self._entry(event, meta, at, question, caller, tenant, session_id))
            yield event

    def _entry(
        self,
        event: FinalEvent | ErrorEvent,
        meta: MetaEvent | None,
        at: float,
        question: str,
        caller: str,
        tenant: str,
        session_id: str,
    ) -> AuditRecord:
        if isinstance(event, ErrorEvent):
            outcome, verified, sources, timings = f"error:{event.code}", False, [], {}
        else:
            outcome = "cached" if event.cached else "abstained" if event.abstained else "answered"
            verified, timings = event.verified, dict(event.timings)
            sources = [c.provision_id or c.section_id for c in event.citations]
        return AuditRecord(
            id=uuid.uuid4().hex, at=at, caller=caller, tenant=tenant, session_id=session_id,
            question_sha256=question_hash(question, self.cfg.hash_salt.get_secret_value()),
            question=question if self.cfg.store_question == "text" else "",
            route=meta.route if meta else "unknown", model=self.model, outcome=outcome, verified=verified,
            sources=sources, timings=timings, trace_id=meta.trace_id if meta else "",
            corpus_version=meta.corpus_version if meta else "",
        )  # fmt: skip

    def _write(self, entry: AuditRecord) -> None:
        async def write() -> None:
            try:
                await self.log.record(entry)
            except Exception:  # an audit store outage must not break answers; it is logged loudly instead
                log.exception("could not write the audit record of trace %s", entry.trace_id)

        task = asyncio.create_task(write())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        """Wait for the records still being written (at shutdown, and in tests)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def close(self) -> None:
        await self.flush()
        await self.log.close()
