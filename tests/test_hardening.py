"""Abuse and bad input, over real HTTP: every input error is a 4xx in the service's error format, bodies and request
rates are limited, logs carry no credentials (nor questions unless asked), and the schema tells the truth."""

import asyncio
import logging
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.main import create_app
from api.settings import AuthSettings, LimitsSettings, PrivacySettings, Settings
from tests.servers import LiveServer
from tests.sse import collect

STREAM = "/api/v1/query/stream"
DEBUG = "/api/v1/debug/retrieval"


def data_copy(sample_data_dir: Path, target: Path) -> Path:
    shutil.copytree(sample_data_dir, target, ignore=shutil.ignore_patterns("LOCK"))
    return target


@pytest.fixture(scope="module")
def served(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The app on the sample corpus with a small body limit and no rate limit (these tests send many requests)."""
    data_dir = data_copy(sample_data_dir, tmp_path_factory.mktemp("hardening") / "data")
    limits = LimitsSettings(max_body_bytes=4096, requests_per_minute=0)
    with LiveServer(create_app(Settings(data_dir=data_dir, limits=limits))) as server:
        yield server


@pytest.fixture
async def client(served: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        yield http


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert "Traceback" not in response.text
    return error


@pytest.mark.parametrize("q", ["\x1e", "   ", "\t\n\r", " \x00\x1f\x7f ", "\u200b\u200b", "\x1e\x1e   \x1d"])
async def test_a_question_of_only_spaces_or_control_characters_is_a_422_by_get_and_post(
    client: httpx.AsyncClient, q: str
) -> None:
    by_get = assert_error(await client.get(STREAM, params={"q": q}), 422, "bad_request")
    by_post = assert_error(await client.post(STREAM, json={"q": q}), 422, "bad_request")
    assert "question is empty" in by_get["message"] and by_get["message"] == by_post["message"]
    assert by_get["details"] == [{"field": "q", "problem": "Value error, the question is empty"}]
    probe = assert_error(await client.get(DEBUG, params={"q": q}), 422, "bad_request")
    assert probe["details"] == by_get["details"]  # the debug router validates with the same model


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"date_from": "2024-13-45"}, "date_from"),
        ({"date_from": "2024-02-30"}, "date_from"),
        ({"date_to": "2023-02-29"}, "date_to"),
        ({"date_from": "２０２４"}, "date_from"),  # full-width digits
        ({"date_to": "2024-00"}, "date_to"),
        ({"date_from": "2024-06-01", "date_to": "2024-05-31"}, "date_to"),
        ({"date_from": "2025", "date_to": "2024-12"}, "date_to"),
        ({"session_id": "a/b"}, "session_id"),
        ({"law_id": 'zw/act"]\n or doc_key in ["x'}, "law_id"),  # a line break cannot reach the filter expression
        ({"doc_type": "act\x00"}, "doc_type"),
        ({"as_of": "2024-02-30"}, "as_of"),
        ({"as_of": "2024-06"}, "as_of"),  # a day, not a month
        ({"as_of": "２０２４-01-01"}, "as_of"),
    ],
)
async def test_impossible_filters_are_a_422_by_get_and_post(
    client: httpx.AsyncClient, filters: dict[str, str], field: str
) -> None:
    request = {"q": "deposit", **filters}
    for response in (await client.get(STREAM, params=request), await client.post(STREAM, json=request)):
        error = assert_error(response, 422, "bad_request")
        assert [d["field"] for d in error["details"]] == [field]


async def test_real_dates_and_ranges_are_accepted(client: httpx.AsyncClient) -> None:
    params = {"q": "How much deposit can a landlord ask for?", "date_from": "2024-02-29", "date_to": "2024-12"}
    events = await collect(client, "GET", STREAM, params=params)
    assert events[-1].event == "final"
    same_year = await client.get(DEBUG, params={"q": "deposit", "date_from": "2024", "date_to": "2024"})
    assert same_year.status_code == 200


async def test_a_body_over_the_limit_is_refused_before_it_is_read(client: httpx.AsyncClient) -> None:
    huge = {"q": "deposit", "padding": "x" * 10_000}
    assert_error(await client.post(STREAM, json=huge), 413, "payload_too_large")

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"q": "deposit", "padding": "'
        for _ in range(100):
            yield b"y" * 1000
        yield b'"}'

    response = await client.post(STREAM, content=chunked(), headers={"content-type": "application/json"})
    assert_error(response, 413, "payload_too_large")
    small = await collect(client, "POST", STREAM, json={"q": "How long is maternity leave?"})
    assert small[-1].event == "final"  # a body within the limit is read and answered as before


async def test_unknown_routes_and_methods_answer_in_the_error_format(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/api/v1/nothing-here"), 404, "not_found")
    assert_error(await client.delete(STREAM), 405, "method_not_allowed")


async def test_the_schema_says_the_stream_is_server_sent_events(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    for method in ("get", "post"):
        responses = schema["paths"][STREAM][method]["responses"]
        assert list(responses["200"]["content"]) == ["text/event-stream"]
        events = responses["200"]["content"]["text/event-stream"]["schema"]
        assert {option["properties"]["event"]["const"] for option in events["oneOf"]} == {
            "meta", "token", "citation", "status", "warning", "final", "error"
        }  # fmt: skip
        refs = {option["properties"]["data"]["contentSchema"]["$ref"].rsplit("/", 1)[1] for option in events["oneOf"]}
        assert refs == {"MetaEvent", "TokenEvent", "CitationEvent", "StatusEvent", "WarningEvent", "FinalEvent",
                        "ErrorEvent"}  # fmt: skip
        assert refs <= set(schema["components"]["schemas"])
        assert responses["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
        assert responses["429"] and responses["413"]
    get_params = {p["name"] for p in schema["paths"][STREAM]["get"]["parameters"]}
    assert {"q", "session_id", "date_from", "date_to", "law_id", "Last-Event-ID"} <= get_params
    debug = schema["paths"][DEBUG]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert debug["$ref"].endswith("/DebugRetrieval")
    required = schema["components"]["schemas"]["DebugRetrieval"]["required"]
    assert {"stages", "hits", "bundle", "timings_ms"} <= set(required)


async def test_the_access_log_redacts_tokens_and_hashes_questions(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    secret_token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNlY3JldA"
    question = "Can my landlord evict me for complaining about mould?"
    with caplog.at_level(logging.INFO):
        await collect(client, "GET", STREAM, params={"q": question, "access_token": secret_token})
        await asyncio.sleep(0.2)  # uvicorn writes the access line as the response ends
    # The service's records (the test's own httpx client logs its request URL, token and all).
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert "/api/v1/query/stream?q=sha256%3A" in logged or "/api/v1/query/stream?q=sha256:" in logged
    assert "access_token=[redacted]" in logged or "access_token=%5Bredacted%5D" in logged
    assert secret_token not in logged and "c2lnbmF0dXJlLXNlY3JldA" not in logged
    assert "mould" not in logged and "landlord" not in logged


def test_logs_show_question_text_only_when_the_privacy_setting_says_so() -> None:
    from api.observability import describe_question, redact, redact_target

    question = "Is my employer allowed to read my messages?"
    assert question not in describe_question(question, PrivacySettings())
    assert describe_question(question, PrivacySettings(log_questions="text")) == f'"{question}"'
    assert describe_question(question, PrivacySettings(log_questions="none")) == "[not logged]"
    shown = redact_target("/api/v1/query/stream?q=hello&access_token=abc&session_id=s1", PrivacySettings())
    assert "abc" not in shown and "hello" not in shown and "session_id=s1" in shown
    line = redact('calling with Authorization: Bearer abc.def.ghi and {"api_key": "sk-live-123"}')
    assert "abc.def.ghi" not in line and "sk-live-123" not in line


async def test_rate_limits_answer_429_with_retry_after_per_caller(sample_data_dir: Path, tmp_path: Path) -> None:
    data_dir = data_copy(sample_data_dir, tmp_path / "data")
    limits = LimitsSettings(requests_per_minute=1, burst=3)
    with LiveServer(create_app(Settings(data_dir=data_dir, limits=limits))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            # Invalid requests are cheap and count all the same: the limit is checked before anything else.
            statuses = [(await client.get(DEBUG, params={"q": " "})).status_code for _ in range(3)]
            assert statuses == [422, 422, 422]
            refused = await client.get(DEBUG, params={"q": "deposit"})
            assert_error(refused, 429, "too_many_requests")
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert_error(await client.post(STREAM, json={"q": "deposit"}), 429, "too_many_requests")
            assert (await client.get("/healthz")).status_code == 200  # probes are not limited


async def test_with_auth_on_the_schema_needs_a_token_and_401s_use_our_words(
    sample_data_dir: Path, tmp_path: Path
) -> None:
    data_dir = data_copy(sample_data_dir, tmp_path / "data")
    settings = Settings(data_dir=data_dir, auth=AuthSettings(enabled=True, jwt_secret="s" * 32))
    with LiveServer(create_app(settings)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            assert_error(await client.get("/openapi.json"), 401, "unauthorized")
            assert (await client.get("/docs")).status_code == 404
            import jwt

            good = jwt.encode({"sub": "u", "aud": "gweta", "exp": 2_000_000_000}, "s" * 32, algorithm="HS256")
            schema = await client.get("/openapi.json", headers={"Authorization": f"Bearer {good}"})
            assert schema.status_code == 200 and STREAM in schema.json()["paths"]
            garbled = await client.get(STREAM, params={"q": "x", "access_token": "abc.def"})
            message = assert_error(garbled, 401, "unauthorized")["message"]
            assert message == "the access token is not valid"  # not the JWT library's "Not enough segments"


def test_serving_publicly_without_auth_must_be_asked_for() -> None:
    with pytest.raises(ValueError, match="GWETA_ALLOW_PUBLIC_WITHOUT_AUTH"):
        Settings().check_bind("0.0.0.0")
    for host in ("127.0.0.1", "localhost", "::1"):
        Settings().check_bind(host)
    Settings(allow_public_without_auth=True).check_bind("0.0.0.0")
    Settings(auth=AuthSettings(enabled=True, jwt_secret="k" * 32)).check_bind("0.0.0.0")


async def test_a_huge_declared_body_is_refused_without_reading_a_byte(served: LiveServer) -> None:
    host, port = served.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        f"POST {STREAM} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: 200000000\r\n\r\n".encode()
    )  # 200 MB announced, none of it sent: the answer must not wait for it
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
    writer.close()
    assert head.startswith(b"HTTP/1.1 413") and b"connection: close" in head.lower()


def test_the_rate_limit_refills_at_its_rate() -> None:
    from api.errors import TooManyRequestsError
    from api.middleware import RateLimiter

    now = [0.0]
    limiter = RateLimiter(LimitsSettings(requests_per_minute=30, burst=2), clock=lambda: now[0])
    limiter.check("caller:a")
    limiter.check("caller:a")
    with pytest.raises(TooManyRequestsError) as refused:
        limiter.check("caller:a")
    assert refused.value.retry_after_s == 2  # 30 a minute: one every 2 s
    limiter.check("caller:b")  # each caller has its own bucket
    now[0] += 2.0
    limiter.check("caller:a")
    with pytest.raises(TooManyRequestsError):
        limiter.check("caller:a")
    RateLimiter(LimitsSettings(requests_per_minute=0)).check("anyone")  # 0 turns it off
