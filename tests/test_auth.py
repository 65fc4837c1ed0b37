"""Every API call carries a JWT once auth is on: who may stream, who may look inside, and whose documents."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from api.main import create_app
from api.settings import AuthSettings, IngestionSettings, Settings
from tests.conftest import ingest_into
from tests.servers import LiveServer
from tests.sse import collect

SECRET = "test-secret-that-is-long-enough-for-hs256"
PRIVATE_ACT = """<!-- id: acme/policy/2025/1; jurisdiction: SAMPLE -->
# Acme Staff Deposit Policy, 2025

1. Staff housing deposit
Acme Ltd pays the housing deposit of any employee who relocates, up to one month of rent, from the relocation fund.
"""
QUESTION = "Who pays the housing deposit when an employee relocates?"


def token(sub: str = "user-1", secret: str = SECRET, **claims: Any) -> str:
    payload = {"sub": sub, "aud": "gweta", "exp": int(time.time()) + 300, **claims}
    return jwt.encode(payload, secret, algorithm="HS256")


@pytest.fixture
async def secured(private_data_dir: Path, tmp_path: Path) -> Iterator[LiveServer]:
    """The sample corpus plus one document private to tenant acme, served with auth on."""
    private = tmp_path / "acme"
    private.mkdir()
    (private / "policy.md").write_text(PRIVATE_ACT)
    settings = Settings(data_dir=private_data_dir, auth=AuthSettings(enabled=True, jwt_secret=SECRET))
    owned = settings.model_copy(update={"ingestion": IngestionSettings(tenant="acme")})
    assert (await ingest_into(owned, private)).count("ingested") == 1
    with LiveServer(create_app(settings)) as server:
        yield server


async def test_calls_without_a_valid_token_are_refused(secured: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
        bare = await client.get("/api/v1/query/stream", params={"q": "deposit"})
        assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer"
        assert bare.json()["error"]["code"] == "unauthorized"
        for bad in (token(secret="another-secret-entirely-for-signing-x"), token(exp=int(time.time()) - 600),
                    token(aud="someone-else"), "not-a-jwt"):  # fmt: skip
            response = await client.get(
                "/api/v1/query/stream", params={"q": "deposit"}, headers={"Authorization": f"Bearer {bad}"}
            )
            assert response.status_code == 401, bad
        expired = await client.get(
            "/api/v1/debug/retrieval", params={"q": "deposit", "access_token": token(exp=int(time.time()) - 600)}
        )
        assert expired.status_code == 401 and "expired" in expired.json()["error"]["message"]
        assert (await client.get("/healthz")).status_code == 200  # probes need no token


async def test_debug_is_for_administrators(secured: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
        params = {"q": "deposit"}
        user = await client.get(
            "/api/v1/debug/retrieval", params=params, headers={"Authorization": f"Bearer {token()}"}
        )
        assert user.status_code == 403 and user.json()["error"]["code"] == "forbidden"
        admin = await client.get(
            "/api/v1/debug/retrieval", params=params, headers={"Authorization": f"Bearer {token(roles=['admin'])}"}
        )
        assert admin.status_code == 200 and admin.json()["hits"]


async def test_a_tenant_reads_its_own_documents_and_no_one_elses(secured: LiveServer) -> None:
    async def cited(bearer: str) -> set[str]:
        async with httpx.AsyncClient(base_url=secured.url, timeout=60) as client:
            # EventSource cannot set headers, so GET also takes the token in the query string.
            events = await collect(
                client, "GET", "/api/v1/query/stream", params={"q": QUESTION, "access_token": bearer}
            )
        final = events[-1].json()
        assert events[-1].event == "final"
        return {c["doc_key"] for c in final["citations"]}

    assert "acme/policy/2025/1" in await cited(token("u-acme", tenant="acme"))
    assert "acme/policy/2025/1" not in await cited(token("u-other", tenant="other"))
    assert "acme/policy/2025/1" not in await cited(token("u-public"))
    admin_elsewhere = token("root", tenant="other", roles=["admin"])
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
        body = (
            await client.get("/api/v1/debug/retrieval", params={"q": QUESTION, "access_token": admin_elsewhere})
        ).json()
    seen = {c["chunk_id"] for stage in body["stages"].values() for c in stage}
    assert not any(cid.startswith("acme/") for cid in seen)  # admin of another tenant still sees only its own


def test_auth_on_needs_a_key() -> None:
    with pytest.raises(ValueError, match="auth.enabled needs"):
        Settings(auth=AuthSettings(enabled=True))


async def test_two_callers_never_share_a_session(secured: LiveServer) -> None:
    async def ask(bearer: str, question: str) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=secured.url, timeout=60) as client:
            params = {"q": question, "session_id": "shared-name", "access_token": bearer}
            events = await collect(client, "GET", "/api/v1/query/stream", params=params)
        return events[-1].json()  # type: ignore[no-any-return]

    alice, bob = token("alice"), token("bob")
    await ask(alice, "How much deposit can a landlord ask for?")
    follow_up = "And when must it be given back?"
    assert "fourteen days" in (await ask(alice, follow_up))["answer"]  # her earlier turn gives "it" its meaning
    assert "fourteen days" not in (await ask(bob, follow_up))["answer"]  # the same session id is not her session
