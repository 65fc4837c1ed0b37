"""Nothing a caller sees depends on documents outside their tenant: every kind of question, asked by a caller of
another tenant, streams the same events whether or not tenant acme has ingested a private document; the greeting,
clarify and out-of-scope replies, abstentions and the unauthenticated readiness probe describe only what the caller
may read."""

import time
from pathlib import Path
from typing import Any

import httpx
import jwt

from api.main import create_app
from api.settings import AuthSettings, IngestionSettings, LimitsSettings, Settings
from tests.conftest import ingest_into
from tests.servers import LiveServer
from tests.sse import collect
from tests.test_hardening import data_copy

SECRET = "tenant-isolation-secret-long-enough-for-hs256"
# Its words overlap the questions' ("deposit", "landlord", "tenant"), and its jurisdiction is one the public corpus
# does not cover, so any reply that reads the whole corpus's titles, jurisdictions or counts shows it.
PRIVATE = """<!-- id: acme/policy/2024/7; jurisdiction: UK -->
# Acme Confidential Whistleblower Policy, 2024

1. Deposits held for staff housing
Acme Ltd holds the deposit a landlord asks of a relocating tenant employee, and repays it when the tenancy ends.

2. Reporting
A whistleblower reports to the compliance officer, who keeps the report confidential.
"""
TITLE = "Acme Confidential Whistleblower Policy, 2024"
STREAM = "/api/v1/query/stream"
# (kind, the turns of one session): every route a question can take, and a follow-up that leans on the turn before.
CONVERSATIONS = [
    ("greeting", ["hello"]),
    ("vague", ["I need help with a legal problem"]),
    ("no word to search for", ["123"]),
    ("out of scope", ["What does UK law say about tenancy deposits?"]),
    ("unanswerable", ["Can I mine bitcoin with rigs in my garage?"]),
    ("answerable", ["How much deposit can a landlord ask for?"]),
    ("follow-up", ["How much deposit can a landlord ask for?", "and when must they return it?"]),
]


def token(sub: str, tenant: str = "") -> str:
    claims = {"sub": sub, "aud": "gweta", "exp": int(time.time()) + 600, **({"tenant": tenant} if tenant else {})}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def seen(event: dict[str, Any]) -> dict[str, Any]:
    """An event as a caller reads it, less what differs between any two runs (trace id, session id, timings)."""
    out = {k: v for k, v in event.items() if k not in ("trace_id", "session_id", "timings")}
    return out


async def conversations(url: str, bearer: str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    asked: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    async with httpx.AsyncClient(base_url=url, timeout=120, headers={"Authorization": f"Bearer {bearer}"}) as client:
        for n, (kind, turns) in enumerate(CONVERSATIONS):
            for i, q in enumerate(turns):
                events = await collect(client, "POST", STREAM, json={"q": q, "session_id": f"s{n}"})
                asked[f"{kind} #{i + 1}"] = [(e.event, seen(e.json())) for e in events]
        ready = await client.get("/readyz")
        asked["readyz"] = [("readyz", {k: v for k, v in ready.json().items() if k != "corpus_version"})]
    return asked


async def test_every_reply_is_the_same_whatever_another_tenant_holds(sample_data_dir: Path, tmp_path: Path) -> None:
    public_only = data_copy(sample_data_dir, tmp_path / "public")
    with_private = data_copy(sample_data_dir, tmp_path / "private")
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "policy.md").write_text(PRIVATE)
    auth = AuthSettings(enabled=True, jwt_secret=SECRET)
    limits = LimitsSettings(requests_per_minute=0)
    owned = Settings(data_dir=with_private, ingestion=IngestionSettings(tenant="acme"))
    assert (await ingest_into(owned, tmp_path / "acme")).count("ingested") == 1

    with LiveServer(create_app(Settings(data_dir=with_private, auth=auth, limits=limits))) as server:
        other = await conversations(server.url, token("u-other", "other"))
        acme = await conversations(server.url, token("u-acme", "acme"))
    with LiveServer(create_app(Settings(data_dir=public_only, auth=auth, limits=limits))) as server:
        baseline = await conversations(server.url, token("u-other", "other"))

    assert set(other) == set(baseline)
    for kind, events in baseline.items():
        assert other[kind] == events, kind
    everything = repr(other)
    assert "Acme" not in everything and "acme" not in everything and "Whistleblower" not in everything
    # The test can fail: acme's own caller is shown its document where the others are not.
    greeting = acme["greeting #1"][-1][1]["answer"]
    assert TITLE in greeting and TITLE not in other["greeting #1"][-1][1]["answer"]
    assert other["out of scope #1"][0][1]["route"] == "out_of_scope"  # acme covers UK, the caller does not
    assert acme["greeting #1"][0][1]["corpus_version"] != other["greeting #1"][0][1]["corpus_version"]
    assert other["readyz"] == baseline["readyz"] and other["readyz"][0][1]["documents"] == 5
