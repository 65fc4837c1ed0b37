"""Sign-in as clients will do it: Firebase ID tokens and generic OIDC tokens, checked against keys published by a
loopback server that speaks both formats (Google's x509 certificate map and JWKS), with keys the tests generate,
Cache-Control caching, and rotation."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.auth import IdTokenVerifier
from api.errors import UnauthorizedError
from api.main import create_app
from api.settings import AuthSettings, IdentitySettings, Settings
from tests.servers import LiveServer
from tests.sse import collect

PROJECT = "gweta-test"


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))

    def certificate_pem(self) -> str:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "securetoken.system.gserviceaccount.com")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.private.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=1)).sign(self.private, hashes.SHA256())
        )  # fmt: skip
        return cert.public_bytes(serialization.Encoding.PEM).decode()

    def jwk(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid, **header})


class KeyServer:
    """Publishes the current keys at /certs (x509 map) and /jwks (JWK Set), with a Cache-Control max-age."""

    def __init__(self, keys: list[SigningKey], max_age: int = 3600) -> None:
        self.keys = keys
        self.max_age = max_age
        self.hits = 0
        self.app = Starlette(routes=[Route("/certs", self.certs), Route("/jwks", self.jwks)])

    def _reply(self, body: Any) -> JSONResponse:
        self.hits += 1
        headers = {"cache-control": f"public, max-age={self.max_age}, must-revalidate, no-transform"}
        return JSONResponse(body, headers=headers)

    async def certs(self, _: Request) -> JSONResponse:
        return self._reply({k.kid: k.certificate_pem() for k in self.keys})

    async def jwks(self, _: Request) -> JSONResponse:
        return self._reply({"keys": [k.jwk() for k in self.keys]})


@pytest.fixture
def key_server() -> Iterator[tuple[KeyServer, LiveServer]]:
    published = KeyServer([SigningKey("k1"), SigningKey("k2")])
    with LiveServer(published.app) as server:
        yield published, server


def firebase_claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": f"https://securetoken.google.com/{PROJECT}", "aud": PROJECT, "auth_time": now - 60, "iat": now - 10,
        "exp": now + 3600, "sub": "firebase-uid-1", "user_id": "firebase-uid-1",
        "firebase": {"sign_in_provider": "password", "tenant": "acme"}, "roles": ["admin"],
    }  # fmt: skip
    return {**claims, **overrides}


def firebase(url: str, **cfg: Any) -> IdentitySettings:
    return IdentitySettings(provider="firebase", project_id=PROJECT, certs_url=f"{url}/certs", **cfg)


async def refused(verifier: IdTokenVerifier, token: str, reason: str) -> None:
    with pytest.raises(UnauthorizedError, match=f"(?i){reason}"):
        await verifier.verify(token)


async def test_firebase_id_tokens_are_checked_claim_by_claim(key_server: tuple[KeyServer, LiveServer]) -> None:
    published, server = key_server
    key = published.keys[0]
    async with httpx.AsyncClient() as http:
        verifier = IdTokenVerifier(firebase(server.url), http)
        caller = await verifier.verify(key.sign(firebase_claims()))
        assert (caller.subject, caller.tenant, caller.is_admin) == ("firebase-uid-1", "acme", True)
        await refused(verifier, key.sign(firebase_claims(aud="another-project")), "another service")
        await refused(verifier, key.sign(firebase_claims(iss="https://securetoken.google.com/x")), "issuer")
        await refused(verifier, key.sign(firebase_claims(exp=int(time.time()) - 120)), "expired")
        await refused(verifier, key.sign(firebase_claims(iat=int(time.time()) + 600)), "not valid yet")
        await refused(verifier, key.sign(firebase_claims(auth_time=int(time.time()) + 600)), "auth_time")
        no_auth_time = firebase_claims()
        del no_auth_time["auth_time"]
        await refused(verifier, key.sign(no_auth_time), "auth_time")
        await refused(verifier, key.sign(firebase_claims(sub="")), "sub")
        forged = SigningKey("k1").sign(firebase_claims())  # the right kid, the wrong private key
        await refused(verifier, forged, "not valid")
        hs256 = jwt.encode(firebase_claims(), "a-shared-secret-that-is-long-enough!", headers={"kid": "k1"})
        await refused(verifier, hs256, "RS256")
        await refused(verifier, key.sign(firebase_claims(), kid=""), "kid")
        await refused(verifier, "not-a-jwt", "not valid")
        assert published.hits == 1  # every check above used the one cached fetch


async def test_keys_are_cached_per_max_age_and_refetched_after(key_server: tuple[KeyServer, LiveServer]) -> None:
    published, server = key_server
    published.max_age = 1
    async with httpx.AsyncClient() as http:
        verifier = IdTokenVerifier(firebase(server.url), http)
        token = published.keys[1].sign(firebase_claims())
        await asyncio.gather(*(verifier.verify(token) for _ in range(5)))
        assert published.hits == 1  # concurrent first requests share one fetch
        await asyncio.sleep(1.2)
        await verifier.verify(token)
        assert published.hits == 2


async def test_rotation_an_unknown_kid_refetches_once(key_server: tuple[KeyServer, LiveServer]) -> None:
    published, server = key_server
    async with httpx.AsyncClient() as http:
        verifier = IdTokenVerifier(firebase(server.url, min_refresh_s=0.5), http)
        old = published.keys[0]
        await verifier.verify(old.sign(firebase_claims()))
        new = SigningKey("k3")
        published.keys = [published.keys[1], new]  # Google rotates: k1 retired, k3 published
        await asyncio.sleep(0.6)
        assert (await verifier.verify(new.sign(firebase_claims()))).subject == "firebase-uid-1"
        assert published.hits == 2
        await refused(verifier, SigningKey("k9").sign(firebase_claims()), "does not publish")
        assert published.hits == 2  # a second unknown kid within min_refresh_s does not hammer the provider
        await asyncio.sleep(0.6)
        await refused(verifier, old.sign(firebase_claims()), "does not publish")  # k1 is gone after the refetch
        assert published.hits == 3


async def test_generic_oidc_with_a_jwks(key_server: tuple[KeyServer, LiveServer]) -> None:
    published, server = key_server
    cfg = IdentitySettings(provider="oidc", certs_url=f"{server.url}/jwks", audience="gweta-api",
                           issuer="https://id.example.org/")  # fmt: skip
    now = int(time.time())
    claims = {"iss": "https://id.example.org/", "aud": "gweta-api", "sub": "u-7", "iat": now, "exp": now + 60,
              "tenant": "beta", "roles": ["reader"]}  # fmt: skip
    async with httpx.AsyncClient() as http:
        verifier = IdTokenVerifier(cfg, http)
        caller = await verifier.verify(published.keys[1].sign(claims))
        assert (caller.subject, caller.tenant, caller.roles) == ("u-7", "beta", frozenset({"reader"}))
        await refused(verifier, published.keys[1].sign({**claims, "aud": "other"}), "another service")


def test_settings_name_what_a_provider_needs() -> None:
    with pytest.raises(ValueError, match="identity.project_id"):
        Settings(identity=IdentitySettings(provider="firebase"))
    with pytest.raises(ValueError, match="identity.certs_url, identity.audience and identity.issuer"):
        Settings(identity=IdentitySettings(provider="oidc"))
    ok = Settings(auth=AuthSettings(enabled=True), identity=IdentitySettings(provider="firebase", project_id="p"))
    assert ok.identity.keys_url.startswith("https://www.googleapis.com/robot/v1/metadata/x509/securetoken@")
    assert ok.identity.expected_issuer == "https://securetoken.google.com/p"


async def test_the_api_accepts_firebase_tokens(
    key_server: tuple[KeyServer, LiveServer], private_data_dir: Path
) -> None:
    published, server = key_server
    settings = Settings(data_dir=private_data_dir, auth=AuthSettings(enabled=True), identity=firebase(server.url))
    with LiveServer(create_app(settings)) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
            params = {"q": "How much deposit can a landlord ask for?", "session_id": "fb"}
            bare = await client.get("/api/v1/query/stream", params=params)
            assert bare.status_code == 401
            token = published.keys[0].sign(firebase_claims(firebase={"sign_in_provider": "password"}))
            events = await collect(client, "GET", "/api/v1/query/stream", params=params,
                                   headers={"authorization": f"Bearer {token}"})  # fmt: skip
            assert events[-1].event == "final" and events[-1].json()["citations"]
            expired = published.keys[0].sign(firebase_claims(exp=int(time.time()) - 600))
            late = await client.get("/api/v1/query/stream", params={**params, "access_token": expired})
            assert late.status_code == 401 and "expired" in late.json()["error"]["message"]
