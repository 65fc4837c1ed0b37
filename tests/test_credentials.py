"""Credentials under attack, over real HTTP: the dev sign-in passphrase cannot be guessed at request speed nor be
short, no URL form writes a token to the access log, tokens of the wrong shape or size are refused, and the schema
and the 405 answer tell the truth about what the server accepts."""

import asyncio
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from api.auth import FailedAttempts, verify_token
from api.errors import TooManyRequestsError, UnauthorizedError
from api.main import create_app
from api.observability import redact_target
from api.settings import AuthSettings, LimitsSettings, PrivacySettings, Settings, WebSettings
from tests.servers import LiveServer

SECRET = "credentials-test-secret-long-enough-for-hs256"
PASSPHRASE = "correct horse battery staple, and then some"
STREAM = "/api/v1/query/stream"
DEV_TOKEN = "/api/v1/web/dev-token"


def token(**claims: Any) -> str:
    return jwt.encode({"sub": "u", "aud": "gweta", "exp": int(time.time()) + 300, **claims}, SECRET, "HS256")


@pytest.fixture
def secured(private_data_dir: Path) -> Iterator[LiveServer]:
    settings = Settings(
        data_dir=private_data_dir, auth=AuthSettings(enabled=True, jwt_secret=SECRET),
        web=WebSettings(dev_signin_secret=PASSPHRASE, dev_signin_failures=3),
        limits=LimitsSettings(requests_per_minute=0),
    )  # fmt: skip
    with LiveServer(create_app(settings)) as server:
        yield server


async def test_wrong_passphrases_are_refused_for_a_while_after_a_few(secured: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
        guesses = [await client.post(DEV_TOKEN, json={"name": "eve", "passphrase": f"guess {i}"}) for i in range(3)]
        assert [g.status_code for g in guesses] == [403, 403, 403]
        refused = await client.post(DEV_TOKEN, json={"name": "eve", "passphrase": "guess 4"})
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_requests"
        assert 1 <= int(refused.headers["retry-after"]) <= 300
        # Even the right passphrase is refused now: a guesser learns nothing more until the window passes.
        right = await client.post(DEV_TOKEN, json={"name": "eve", "passphrase": PASSPHRASE})
        assert right.status_code == 429


def test_failed_attempts_age_out_of_their_window() -> None:
    now = [0.0]
    failures = FailedAttempts(limit=2, window_s=60, clock=lambda: now[0])
    failures.failed("a")
    now[0] = 10.0
    failures.failed("a")
    with pytest.raises(TooManyRequestsError) as refused:
        failures.check("a")
    assert refused.value.retry_after_s == 50  # the first failure leaves the window at 60 s
    failures.check("b")  # per client
    now[0] = 61.0
    failures.check("a")  # one failure left in the window: one more guess
    failures.failed("a")
    with pytest.raises(TooManyRequestsError):
        failures.check("a")


def test_a_dev_passphrase_shorter_than_a_jwt_secret_fails_at_boot() -> None:
    auth = AuthSettings(enabled=True, jwt_secret=SECRET)
    with pytest.raises(ValueError, match=r"GWETA_WEB__DEV_SIGNIN_SECRET\) must be at least 32 bytes"):
        Settings(auth=auth, web=WebSettings(dev_signin_secret="7-chars"))
    Settings(auth=auth, web=WebSettings(dev_signin_secret="p" * 32))


JWT = token()
LOGGED_FORMS = [
    f"/api/v1/documents?x=1;access_token={JWT}",
    f"/api/v1/documents;access_token={JWT}",
    f"/api/v1/documents;token={JWT}?x=1",
    f"/api/v1/documents?acc%65ss_token={JWT}",
    f"/api/v1/documents?x=1%3Baccess_token%3D{JWT}",
    f"/api/v1/documents?x=%2561ccess_token%253D{JWT}",
    f"/api/v1/documents?x=1&access_token={JWT}",
]


def test_no_url_form_keeps_a_credential_in_the_log_line() -> None:
    for target in LOGGED_FORMS:
        shown = redact_target(target, PrivacySettings())
        assert JWT not in shown and JWT.split(".")[2] not in shown and "[redacted]" in shown, target
        assert "\n" not in redact_target(target + "&note=a%0Aforged%20line", PrivacySettings())
    plain = redact_target("/api/v1/query/stream?q=hello&session_id=s1&date_from=2024-01", PrivacySettings())
    assert plain.startswith("/api/v1/query/stream?q=sha256:") and plain.endswith("&session_id=s1&date_from=2024-01")


async def test_the_access_log_keeps_no_token_whatever_the_url_form(
    secured: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
            for target in LOGGED_FORMS:
                await client.get(target)
        await asyncio.sleep(0.3)  # uvicorn writes the access line as the response ends
    access = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert len(access) >= len(LOGGED_FORMS)
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert JWT.split(".")[2] not in logged and JWT.split(".")[1] not in logged


async def test_tokens_of_the_wrong_shape_or_size_are_refused(secured: LiveServer) -> None:
    stringly = token(exp=str(int(time.time()) + 300))
    huge = token(padding="p" * 9000)  # validly signed, over 8 KB
    async with httpx.AsyncClient(base_url=secured.url, timeout=30) as client:
        for bad, words in ((stringly, "exp claim must be a number"), (huge, "longer than 8,192")):
            response = await client.get("/api/v1/documents", headers={"Authorization": f"Bearer {bad}"})
            assert response.status_code == 401 and words in response.json()["error"]["message"], response.text
        ok = await client.get("/api/v1/documents", headers={"Authorization": f"Bearer {token()}"})
        assert ok.status_code == 200
    with pytest.raises(UnauthorizedError, match="exp claim must be a number"):
        verify_token(token(exp="4102444800"), AuthSettings(enabled=True, jwt_secret=SECRET))


async def test_the_schema_date_pattern_is_what_the_server_accepts_and_405_lists_every_method(
    secured: LiveServer,
) -> None:
    async with httpx.AsyncClient(base_url=secured.url, timeout=30, headers={"Authorization": f"Bearer {token()}"}) as c:
        schema = (await c.get("/openapi.json")).json()
        params = {p["name"]: p for p in schema["paths"][STREAM]["get"]["parameters"]}
        pattern = re.compile(params["date_from"]["schema"]["anyOf"][0]["pattern"])
        for value in ("0000", "0000-01", "2024-00", "2024-13", "2024-01-00", "2024-01-32", "24", "2024-1"):
            assert not pattern.search(value), value
            assert (await c.get(STREAM, params={"q": "deposit", "date_from": value})).status_code == 422
        for value in ("0001", "2024", "2024-02", "2024-02-29", "9999-12-31"):
            assert pattern.search(value), value
        refused = await c.delete(STREAM)
        assert refused.status_code == 405
        assert {m.strip() for m in refused.headers["allow"].split(",")} >= {"GET", "POST"}
