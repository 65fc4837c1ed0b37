"""Every API call carries a JWT once auth is on: who may stream, who may look inside, and whose documents."""

import base64
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from api.auth import Caller, verify_token
from api.errors import UnauthorizedError
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


# --- Claim shapes, boot validation and the JWT attack list, against verify_token itself -------------------------

HS = AuthSettings(enabled=True, jwt_secret=SECRET)


def rsa_keys() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ({"jwt_public_key": "not a key at all"}, "must be an RSA public key in PEM form"),
        ({"jwt_public_key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}, "RSA public key"),
        ({"jwt_secret": "x"}, "at least 32 bytes"),
        ({"jwt_secret": "s" * 31}, "GWETA_AUTH__JWT_SECRET"),
    ],
)
def test_keys_that_cannot_work_stop_the_boot(auth: dict[str, str], expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        Settings(auth=AuthSettings(enabled=True, **auth))  # type: ignore[arg-type]


def test_keys_that_work_boot() -> None:
    Settings(auth=AuthSettings(enabled=True, jwt_public_key=rsa_keys()[1]))
    Settings(auth=AuthSettings(enabled=True, jwt_secret="s" * 32))
    Settings(auth=AuthSettings(enabled=False, jwt_secret="x"))  # unused while auth is off


@pytest.mark.parametrize(
    ("claims", "problem"),
    [
        ({"roles": {"admin": True}}, "roles claim"),
        ({"roles": "admin"}, "roles claim"),
        ({"roles": [["admin"]]}, "roles claim"),
        ({"roles": ["admin", 1]}, "roles claim"),
        ({"tenant": "acme/../other"}, "tenant claim"),
        ({"tenant": "a/b"}, "tenant claim"),
        ({"tenant": ["acme"]}, "tenant claim"),
        ({"tenant": "x" * 129}, "tenant claim"),
        ({"sub": 42}, "not valid"),
        ({"sub": ""}, "sub claim"),
        ({"sub": "user-\ud800"}, "sub claim"),  # a lone surrogate, as JSON's escapes can carry
    ],
)
def test_claims_of_the_wrong_shape_are_refused(claims: dict[str, Any], problem: str) -> None:
    with pytest.raises(UnauthorizedError, match=problem):
        verify_token(token(**claims), HS)


def test_a_dict_of_roles_is_never_admin_and_a_list_is_read_as_given() -> None:
    caller = verify_token(token(roles=["admin", "reader"], tenant="acme.co_1"), HS)
    assert caller.is_admin and caller.roles == {"admin", "reader"} and caller.tenant == "acme.co_1"


def test_session_keys_cannot_collide_across_issuers_tenants_or_subjects() -> None:
    callers = [
        Caller("b/c", tenant="a"),
        Caller("c", tenant="a/b"),  # (tenants with '/' are refused at the door too)
        Caller("alice", tenant="acme"),
        Caller("alice", tenant="other"),
        Caller("alice", tenant=""),
        Caller("alice", tenant="acme", issuer="https://issuer-a"),
        Caller("alice|acme", tenant=""),
        Caller("acme|alice", tenant=""),
    ]
    keys = [c.session_key("s1") for c in callers]
    assert len(set(keys)) == len(keys)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def rs256(claims: dict[str, Any], private: str) -> str:
    return jwt.encode(claims, private, algorithm="RS256")


def test_jwt_attacks_are_refused_in_our_words() -> None:
    now = int(time.time())
    claims = {"sub": "mallory", "aud": "gweta", "exp": now + 300, "roles": ["admin"]}
    private, public = rsa_keys()
    rs = AuthSettings(enabled=True, jwt_public_key=public, issuer="https://issuer.example")
    good_rs = jwt.encode({**claims, "iss": "https://issuer.example"}, private, algorithm="RS256")
    assert verify_token(good_rs, rs).is_admin  # the control: a genuine token passes
    header, payload, signature = good_rs.split(".")
    none_header = _b64(b'{"alg":"none","typ":"JWT"}')
    hs_header = _b64(b'{"alg":"HS256","typ":"JWT"}')
    confused = hmac.new(public.encode(), f"{hs_header}.{payload}".encode(), "sha256").digest()
    other_subject = _b64(json.dumps({**claims, "sub": "root", "iss": "https://issuer.example"}).encode())
    attacks = {
        "alg none": f"{none_header}.{payload}.",  # no signature at all
        "hs/rs key confusion": f"{hs_header}.{payload}.{_b64(confused)}",  # the public key used as an HS secret
        "tampered payload": f"{header}.{other_subject}.{signature}",  # another subject, the original signature
        "wrong audience": rs256({**claims, "aud": "elsewhere", "iss": "https://issuer.example"}, private),
        "wrong issuer": rs256({**claims, "iss": "https://evil.example"}, private),
        "expired": rs256({**claims, "iss": "https://issuer.example", "exp": now - 3600}, private),
        "no exp": rs256({"sub": "m", "aud": "gweta", "iss": "https://issuer.example"}, private),
    }
    ours = {
        "the access token is not valid", "the access token has expired; sign in again",
        "the access token was issued for another service",
        "the access token was issued by an issuer this service does not trust",
        "the access token lacks a required claim (exp)",
    }  # fmt: skip
    for name, forged in attacks.items():
        with pytest.raises(UnauthorizedError) as refused:
            verify_token(forged, rs)
        assert refused.value.message in ours, name
    with pytest.raises(UnauthorizedError, match="not valid"):
        verify_token(jwt.encode(claims, SECRET, algorithm="HS256"), rs)  # an HS token where RS is configured
    with pytest.raises(UnauthorizedError, match="not valid"):
        verify_token(good_rs, HS)  # and the other way round
