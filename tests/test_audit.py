"""One contract for every audit log (SQLite, and Firestore on the emulator), and the record a real question leaves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from api.main import create_app
from api.schemas.events import Citation, ErrorEvent, FinalEvent, MetaEvent, TokenEvent
from api.settings import AuditSettings, FirestoreSettings, Settings
from api.tools.audit import AuditLog, AuditRecord, AuditTrail, FirestoreAuditLog, SqliteAuditLog, question_hash
from api.tools.firestore import close_firestore, open_firestore
from tests.firestore_emulator import emulator_settings
from tests.servers import LiveServer
from tests.sse import collect


@pytest.fixture(params=["sqlite", "firestore"])
async def audit_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AuditLog]:
    if request.param == "sqlite":
        log: AuditLog = SqliteAuditLog(tmp_path / "audit.sqlite")
        yield log
        await log.close()
    else:
        cfg = emulator_settings(request.getfixturevalue("firestore_host"))
        client = open_firestore(cfg)
        yield FirestoreAuditLog(client, cfg.collection_prefix)
        await close_firestore(client)


def entry(n: int, tenant: str = "", **fields: object) -> AuditRecord:
    base: dict[str, object] = {
        "id": f"r{n}", "at": 1_700_000_000.0 + n, "caller": f"user-{n}", "tenant": tenant, "session_id": "s",
        "question_sha256": question_hash(f"question {n}", "salt"), "question": "", "route": "legal",
        "model": "extractive", "outcome": "answered", "verified": True, "sources": [f"zw/act/2024/{n}#s3(1)"],
        "timings": {"total": 12.5 + n}, "trace_id": f"t{n}", "corpus_version": "v1",
    }  # fmt: skip
    return AuditRecord(**{**base, **fields})  # type: ignore[arg-type]


async def test_records_come_back_whole_newest_first_and_by_tenant(audit_log: AuditLog) -> None:
    for n in range(1, 6):
        await audit_log.record(entry(n, tenant="acme" if n % 2 else ""))
    recent = await audit_log.recent()
    assert [r.id for r in recent] == ["r5", "r4", "r3", "r2", "r1"]
    assert recent[0] == entry(5, tenant="acme")
    assert [r.id for r in await audit_log.recent(tenant="acme")] == ["r5", "r3", "r1"]
    assert [r.id for r in await audit_log.recent(tenant="")] == ["r4", "r2"]
    assert [r.id for r in await audit_log.recent(limit=2)] == ["r5", "r4"]
    await audit_log.record(entry(5, tenant="acme", verified=False))  # the same record again replaces it
    assert [r.verified for r in await audit_log.recent(tenant="acme", limit=1)] == [False]


async def events(*items: BaseModel) -> AsyncIterator[BaseModel]:
    for item in items:
        yield item


CITATION = Citation(index=1, doc_key="a", title="A", section_id="a#s3", provision_id="a#s3(1)", section="section 3",
                    chunk_id="a#s3:0", quote="q")  # fmt: skip


async def test_the_trail_records_each_question_per_the_privacy_setting(audit_log: AuditLog) -> None:
    meta = MetaEvent(trace_id="tr", session_id="s1", route="rag_qa", corpus_version="v9", budgets={})
    final = FinalEvent(answer="x [1]", citations=[CITATION], verified=False, timings={"total": 40.0})
    hashed = AuditTrail(audit_log, AuditSettings(hash_salt="pepper"), "gpt-x")
    passed = [e async for e in hashed.watch(events(meta, TokenEvent(text="x"), final), question="Deposit  limits?",
                                            caller="alice", tenant="acme", session_id="s1")]  # fmt: skip
    assert passed == [meta, TokenEvent(text="x"), final]
    texts = AuditTrail(audit_log, AuditSettings(store_question="text"), "extractive")
    async for _ in texts.watch(events(meta, ErrorEvent(code="backend_error", message="m")), question="Q?",
                               caller="bob", tenant="", session_id="s2"):  # fmt: skip
        pass
    await hashed.flush()
    await texts.flush()
    by_caller = {r.caller: r for r in await audit_log.recent()}
    alice, bob = by_caller["alice"], by_caller["bob"]
    assert alice.question == "" and alice.question_sha256 == question_hash("deposit limits?", "pepper")
    assert (alice.tenant, alice.session_id, alice.route, alice.model) == ("acme", "s1", "rag_qa", "gpt-x")
    assert (alice.sources, alice.verified, alice.outcome, alice.timings) == (["a#s3(1)"], False, "answered",
                                                                              {"total": 40.0})  # fmt: skip
    assert (alice.trace_id, alice.corpus_version) == ("tr", "v9")
    assert bob.question == "Q?" and bob.outcome == "error:backend_error" and not bob.verified


async def test_an_unreachable_audit_store_does_not_stop_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    dead = FirestoreSettings(project="p", emulator_host="127.0.0.1:9")  # nothing listens on the discard port
    client = open_firestore(dead)
    trail = AuditTrail(FirestoreAuditLog(client, timeout_s=1.0), AuditSettings(), "extractive")
    final = FinalEvent(answer="a", citations=[])
    passed = [e async for e in trail.watch(events(final), question="q", caller="c", tenant="", session_id="s")]
    assert passed == [final]
    await trail.flush()
    assert "could not write the audit record" in caplog.text
    await close_firestore(client)


async def test_a_question_asked_over_http_leaves_one_record(private_data_dir: Path) -> None:
    settings = Settings(data_dir=private_data_dir, audit=AuditSettings(store_question="text"))
    with LiveServer(create_app(settings)) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
            params = {"q": "How much deposit can a landlord ask for?", "session_id": "audit-1"}
            streamed = await collect(client, "GET", "/api/v1/query/stream", params=params)
    final = streamed[-1].json()
    log = SqliteAuditLog(private_data_dir / "audit.sqlite")
    (record,) = await log.recent()
    await log.close()
    assert record.question == params["q"] and record.session_id == "audit-1" and record.caller == "local"
    assert record.sources == [c["provision_id"] or c["section_id"] for c in final["citations"]] and record.sources
    assert record.verified == final["verified"] and record.outcome == "answered" and record.model == "extractive"
    assert record.trace_id == streamed[0].json()["trace_id"] and record.timings["total"] > 0
