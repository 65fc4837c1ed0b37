"""The documents endpoints behind the reader: by doc_key only, never a path; tenants and auth as the stream has them."""

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
import pytest
from fastapi import FastAPI

from api.main import create_app
from api.schemas.documents import Document, Section
from api.settings import AuthSettings, IngestionSettings, Settings
from api.tools.reader import section_for
from tests.conftest import ingest_into
from tests.servers import LiveServer
from tests.sse import collect

SECRET = "test-secret-that-is-long-enough-for-hs256"
PRIVATE_ACT = """<!-- id: acme/policy/2025/1; jurisdiction: SAMPLE -->
# Acme Staff Deposit Policy, 2025

1. Staff housing deposit
Acme Ltd pays the housing deposit of any employee who relocates, up to one month of rent, from the relocation fund.
"""
PLANTED = "TOP-SECRET-PLANTED-CONTENT"


def token(sub: str = "user-1", **claims: Any) -> str:
    return jwt.encode({"sub": sub, "aud": "gweta", "exp": int(time.time()) + 300, **claims}, SECRET, algorithm="HS256")


async def raw_get(url: str, target: str) -> tuple[int, bytes]:
    """Send ``target`` byte for byte (an HTTP client library would normalise the dots away)."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode("latin-1"))
    await writer.drain()
    response = await reader.read()
    writer.close()
    await writer.wait_closed()
    status = int(response.split(b" ", 2)[1])
    return status, response


@pytest.fixture
async def served(private_data_dir: Path) -> AsyncIterator[tuple[LiveServer, FastAPI]]:
    # Files a path trick would reach if a doc_key were ever used as a path.
    (private_data_dir / "secret.json").write_text(f'{{"doc_key": "x", "title": "{PLANTED}"}}')
    (private_data_dir / "objects" / "secret.json").write_text(f'{{"title": "{PLANTED}"}}')
    app = create_app(Settings(data_dir=private_data_dir))
    with LiveServer(app) as server:
        yield server, app


async def test_listing_outline_and_a_provision_with_its_neighbours(served: tuple[LiveServer, FastAPI]) -> None:
    server, _ = served
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        listing = (await client.get("/api/v1/documents")).json()
        outline = (await client.get("/api/v1/documents/sample/act/2023/7")).json()
        view = (await client.get("/api/v1/documents/sample/act/2023/7/provisions/s5(1)")).json()
        first = (await client.get("/api/v1/documents/sample/act/2023/7/provisions/s1")).json()
    assert len(listing["documents"]) == 5 and listing["doc_types"]
    assert {d["doc_key"] for d in listing["documents"]} >= {"sample/act/2023/7", "sample/act/2024/3"}
    assert outline["title"].startswith("Employment Standards Act") and outline["chapter"]
    assert [s["section_id"] for s in outline["sections"]][:2] == ["sample/act/2023/7#s1", "sample/act/2023/7#s2"]
    assert "text" not in outline["sections"][0]
    assert view["provision_id"] == "sample/act/2023/7#s5(1)" and view["section"]["section_id"] == "sample/act/2023/7#s5"
    assert "ninety-eight days" in view["section"]["text"] and view["section"]["label"] == "section 5"
    assert view["previous"]["section_id"] == "sample/act/2023/7#s4"
    assert view["next"]["section_id"] == "sample/act/2023/7#s6"
    assert first["previous"] is None and first["section"]["section_id"] == "sample/act/2023/7#s1"


async def test_every_streamed_quote_is_inside_the_provision_the_endpoint_returns(
    served: tuple[LiveServer, FastAPI],
) -> None:
    server, _ = served
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        events = await collect(
            client, "GET", "/api/v1/query/stream", params={"q": "How much deposit can a landlord ask?"}
        )
        citations = events[-1].json()["citations"]
        assert citations
        for citation in citations:
            doc_key, _, fragment = citation["provision_id"].partition("#")
            view = (await client.get(f"/api/v1/documents/{doc_key}/provisions/{fragment}")).json()
            assert view["section"]["section_id"] == citation["section_id"]
            assert citation["quote"] in view["section"]["text"]


TRICKS = [
    "/api/v1/documents/../../secret.json",
    "/api/v1/documents/sample/act/2023/7/../../../../secret.json",
    "/api/v1/documents/sample%2Fact%2F2023%2F7",
    "/api/v1/documents/sample/act%2F2023/7/provisions/s5",
    "/api/v1/documents/%2e%2e/%2e%2e/secret.json",
    "/api/v1/documents/%252e%252e/secret.json",
    "/api/v1/documents//etc/passwd",
    "/api/v1/documents/%2Fetc%2Fpasswd",
    "/api/v1/documents/sample/act/2023/7%00",
    "/api/v1/documents/sample/act/2023/7/provisions/s5%00",
    "/api/v1/documents/sample/act/2023/7/provisions/..%2F..%2Fsecret.json",
    "/api/v1/documents/sample/act/2023/7/provisions/..",
    "/api/v1/documents/..%5c..%5csecret.json",
    "/api/v1/documents/sample\\act\\2023\\7",
    "/api/v1/documents/secret.json",
    "/api/v1/documents/objects/secret.json",
    "/api/v1/documents/docs/secret",
    "/api/v1/documents/sample/act/2023/7/provisions/s999",
    "/api/v1/documents/sample/act/2023/99",
]


async def test_path_tricks_are_404_and_nothing_is_read(served: tuple[LiveServer, FastAPI]) -> None:
    server, app = served
    corpus = app.state.services.corpus
    for target in TRICKS:
        status, response = await raw_get(server.url, target)
        assert status == 404, target
        assert PLANTED.encode() not in response and b"Traceback" not in response
        if b"content-type: application/json" in response.lower():
            assert b'"code":"not_found"' in response, target
    # Only the last two (a real document, a missing provision; a doc_key the manifest lacks) may look anything up,
    # and only the real document is read from the store.
    assert corpus.fetches == 1


def test_a_provision_is_found_in_the_longest_matching_section() -> None:
    sections = [Section(section_id=f"d#s{n}", number=n, text=n) for n in ("1", "12", "1A")]
    doc = Document(doc_key="d", title="t", content_hash="h", sections=sections)
    assert section_for(doc, "d#s1(2)(a)") == 0 and section_for(doc, "d#s12") == 1 and section_for(doc, "d#s1A") == 2
    assert section_for(doc, "d#s13") is None and section_for(doc, "d#s") is None


@pytest.fixture
async def secured(private_data_dir: Path, tmp_path: Path) -> AsyncIterator[LiveServer]:
    private = tmp_path / "acme"
    private.mkdir()
    (private / "policy.md").write_text(PRIVATE_ACT)
    settings = Settings(data_dir=private_data_dir, auth=AuthSettings(enabled=True, jwt_secret=SECRET))
    owned = settings.model_copy(update={"ingestion": IngestionSettings(tenant="acme")})
    assert (await ingest_into(owned, private)).count("ingested") == 1
    with LiveServer(create_app(settings)) as server:
        yield server


async def test_documents_need_a_token_and_respect_tenants(secured: LiveServer) -> None:
    private = "/api/v1/documents/acme/policy/2025/1"
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
        assert (await client.get("/api/v1/documents/sample/act/2023/7")).status_code == 401
        assert (await client.get(f"{private}/provisions/s1")).status_code == 401
        outsider = {"Authorization": f"Bearer {token('user-2', tenant='other')}"}
        member = {"Authorization": f"Bearer {token('user-3', tenant='acme')}"}
        assert (await client.get("/api/v1/documents/sample/act/2023/7", headers=outsider)).status_code == 200
        hidden = await client.get(private, headers=outsider)
        assert hidden.status_code == 404 and "Acme" not in hidden.text
        assert (await client.get(f"{private}/provisions/s1", headers=outsider)).status_code == 404
        listed = (await client.get("/api/v1/documents", headers=outsider)).json()["documents"]
        assert "acme/policy/2025/1" not in {d["doc_key"] for d in listed}
        view = (await client.get(f"{private}/provisions/s1", headers=member)).json()
        assert "relocation fund" in view["section"]["text"]
        listed = (await client.get("/api/v1/documents", headers=member)).json()["documents"]
        assert "acme/policy/2025/1" in {d["doc_key"] for d in listed}


async def test_an_abstention_never_names_what_another_tenant_holds(secured: LiveServer) -> None:
    """ "No law named …" is decided on the titles the caller may read: the outsider is told the corpus holds no such
    law (true for them), the owner is not, and neither answer depends on the other tenant's documents."""
    question = {"q": "Does the Acme Staff Deposit Code pay the housing deposit of an employee who relocates?"}
    async with httpx.AsyncClient(base_url=secured.url, timeout=60) as client:
        outsider = {"Authorization": f"Bearer {token('user-2', tenant='other')}"}
        member = {"Authorization": f"Bearer {token('user-3', tenant='acme')}"}
        told = (await collect(client, "GET", "/api/v1/query/stream", params=question, headers=outsider))[-1].json()
        owned = (await collect(client, "GET", "/api/v1/query/stream", params=question, headers=member))[-1].json()
    assert told["abstained"] and "no law named “Acme Staff Deposit Code”" in told["answer"]
    assert "no law named" not in owned["answer"]
    assert not owned["abstained"] and owned["citations"][0]["doc_key"] == "acme/policy/2025/1"
