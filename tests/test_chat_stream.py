"""The streamed answer's own OpenAI-protocol client (`ChatStream`), against loopback servers speaking the wire
format: text and usage as OpenAI and llama.cpp send them, and every way an endpoint can fail a stream surfacing as
the one error the answer step handles (the text already streamed is kept)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from api.composer.citations import CitationTracker
from api.composer.llm import stream_llm_answer
from api.composer.skills import load_skills
from api.errors import UpstreamLLMError
from api.schemas.events import Citation
from api.settings import LLMSettings
from api.tools.llm import ChatStream, build_chat_stream
from tests.servers import LiveServer, chat_chunk

SKILLS = load_skills()
CITATION = Citation(index=1, doc_key="zw/act/2022/1", title="Marriages Act", section_id="zw/act/2022/1#s3",
                    section="section 3", chunk_id="zw/act/2022/1#s3/c0",
                    quote="(1) No person under the age of eighteen years may contract a marriage")  # fmt: skip
PIECES = ["No person under ", "the age of ", "eighteen years ", "may marry [1]", "."]

Events = Callable[[dict[str, Any]], AsyncIterator[str]]


class Upstream:
    """Answers every chat request with the event stream ``events`` makes of its body (or ``status`` and a body)."""

    def __init__(self, events: Events | None = None, status: int = 200, body: str = "") -> None:
        self.events, self.status, self.body = events, status, body
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.status != 200 or self.events is None:
            return JSONResponse({"error": {"message": self.body, "type": "server_error"}}, status_code=self.status)
        return StreamingResponse(self.events(body), media_type="text/event-stream")


def created() -> int:
    return int(time.time())


async def openai_like(body: dict[str, Any]) -> AsyncIterator[str]:
    """OpenAI: a role chunk, content chunks, a finish chunk, then (asked for) a usage chunk with no choices."""
    model, now = body["model"], created()
    yield chat_chunk(now, model, {"role": "assistant", "content": ""})
    for piece in PIECES:
        yield chat_chunk(now, model, {"content": piece})
    yield chat_chunk(now, model, {}, "stop")
    if body.get("stream_options", {}).get("include_usage"):
        yield chat_chunk(now, model, {}, usage={"prompt_tokens": 311, "completion_tokens": 9, "total_tokens": 320})
    yield "data: [DONE]\n\n"


def settings(url: str, **extra: Any) -> LLMSettings:
    return LLMSettings(**{"backend": "openai", "base_url": f"{url}/v1", "model": "qwen", "timeout_s": 5, **extra})


async def answer(upstream: Upstream, **extra: Any) -> tuple[CitationTracker, list[Any], dict[str, int]]:
    """Stream the synthesize skill's answer from ``upstream`` through a CitationTracker."""
    events: list[Any] = []
    tracker = CitationTracker([CITATION], events.append)
    with LiveServer(upstream.app) as server:
        async with httpx.AsyncClient() as http:
            chat = build_chat_stream(settings(server.url, **extra), http)
            assert isinstance(chat, ChatStream)
            try:
                usage = await stream_llm_answer(chat, SKILLS["synthesize"], "minimum age of marriage?", "", tracker)
            finally:
                tracker.flush()
    return tracker, events, usage


def test_no_model_configured_means_no_stream_client() -> None:
    assert build_chat_stream(LLMSettings(), httpx.AsyncClient()) is None


async def test_the_request_is_what_chatopenai_sends_and_the_reply_text_and_usage_are_read() -> None:
    upstream = Upstream(openai_like)
    tracker, events, usage = await answer(upstream, api_key="sk-test", max_tokens=123, temperature=0.2)
    request = upstream.requests[0]
    assert request["model"] == "qwen" and request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["max_completion_tokens"] == 123 and request["temperature"] == 0.2
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "minimum age of marriage?" in request["messages"][1]["content"]
    assert "No person under the age of eighteen years" in request["messages"][1]["content"]  # the source, as [1]
    assert upstream.headers[0]["authorization"] == "Bearer sk-test"
    assert tracker.text == "".join(PIECES)
    # The first piece alone, then up to the marker (its citation right after), then the rest.
    assert [e.event for e in events] == ["token", "token", "citation", "token"]
    assert usage == {"input_tokens": 311, "output_tokens": 9, "total_tokens": 320, "llm_calls": 1}


async def test_comments_blank_lines_and_event_names_between_chunks_are_skipped() -> None:
    async def chatty(body: dict[str, Any]) -> AsyncIterator[str]:
        yield ": keep-alive\n\n"
        async for event in openai_like(body):
            yield "event: message\n" + event + "\n"

    tracker, _, _ = await answer(Upstream(chatty))
    assert tracker.text == "".join(PIECES)


@pytest.mark.parametrize("status", [400, 429, 500, 503])
async def test_an_error_status_is_an_upstream_error_naming_it(status: int) -> None:
    with pytest.raises(UpstreamLLMError) as caught:
        await answer(Upstream(status=status, body="model overloaded"))
    assert f"HTTP {status}" in caught.value.message and "model overloaded" in caught.value.message


async def test_an_error_event_mid_stream_keeps_what_was_written_and_fails_the_call() -> None:
    async def breaks(body: dict[str, Any]) -> AsyncIterator[str]:
        yield chat_chunk(created(), body["model"], {"content": PIECES[0]})
        yield f"data: {json.dumps({'error': {'message': 'context length exceeded'}})}\n\n"

    events: list[Any] = []
    tracker = CitationTracker([CITATION], events.append)
    with LiveServer(Upstream(breaks).app) as server:
        async with httpx.AsyncClient() as http:
            chat = build_chat_stream(settings(server.url), http)
            assert chat is not None
            with pytest.raises(UpstreamLLMError, match="context length exceeded"):
                await stream_llm_answer(chat, SKILLS["synthesize"], "age?", "", tracker)
    assert tracker.text == PIECES[0]


async def test_a_chunk_that_is_not_json_fails_the_call() -> None:
    async def garbled(body: dict[str, Any]) -> AsyncIterator[str]:
        yield chat_chunk(created(), body["model"], {"content": PIECES[0]})
        yield "data: {not json\n\n"

    with pytest.raises(UpstreamLLMError, match="not JSON"):
        await answer(Upstream(garbled))


async def test_a_connection_cut_mid_answer_fails_the_call() -> None:
    async def cut(body: dict[str, Any]) -> AsyncIterator[str]:
        yield chat_chunk(created(), body["model"], {"content": PIECES[0]})
        raise RuntimeError("the server process died")  # uvicorn drops the connection mid-body

    with pytest.raises(UpstreamLLMError, match="RemoteProtocolError|ReadError"):
        await answer(Upstream(cut))


async def test_a_model_silent_past_the_time_limit_fails_the_call() -> None:
    async def silent(body: dict[str, Any]) -> AsyncIterator[str]:
        yield chat_chunk(created(), body["model"], {"content": PIECES[0]})
        await asyncio.sleep(3)
        yield chat_chunk(created(), body["model"], {"content": PIECES[1]})

    with pytest.raises(UpstreamLLMError, match="ReadTimeout"):
        await answer(Upstream(silent), timeout_s=0.5)


async def test_an_unreachable_endpoint_fails_the_call() -> None:
    with LiveServer(Upstream().app) as server:
        url = server.url  # a port that was just freed
    async with httpx.AsyncClient() as http:
        chat = build_chat_stream(settings(url), http)
        assert chat is not None
        with pytest.raises(UpstreamLLMError, match="ConnectError"):
            async for _ in chat.pieces("system", "user"):
                pass
