"""Token accounting against a loopback server that speaks the OpenAI protocol the way llama.cpp's server does:
streamed chunks carry no usage (``stream_options.include_usage`` is ignored), non-streamed responses do."""

import json
import time
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from api.composer.citations import CitationTracker
from api.composer.llm import complete_usage, stream_llm_answer
from api.composer.skills import load_skills
from api.composer.structured import ask_json
from api.schemas.events import Citation
from api.settings import LLMSettings
from api.tools.llm import build_chat_stream, build_llm
from tests.servers import LiveServer

SKILLS = load_skills()
ANSWER = ["No person under ", "the age of ", "eighteen years ", "may marry [1]", "."]


class LlamaCppLike:
    """Streams one piece per chunk and never a usage chunk; answers non-streamed calls with usage."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        base = {"id": "chatcmpl-1", "created": int(time.time()), "model": body.get("model", "m")}
        if not body.get("stream"):
            message = {"role": "assistant", "content": json.dumps({"sufficient": True, "reason": "s 3 answers it"})}
            usage = {"prompt_tokens": 211, "completion_tokens": 17, "total_tokens": 228}
            choices = [{"index": 0, "message": message, "finish_reason": "stop"}]
            return JSONResponse({**base, "object": "chat.completion", "choices": choices, "usage": usage})

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            payload = {**base, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
            return f"data: {json.dumps(payload)}\n\n"

        async def events() -> Any:
            yield chunk({"role": "assistant"})
            for piece in ANSWER:
                yield chunk({"content": piece})
            yield chunk({}, "stop")
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def settings(url: str) -> LLMSettings:
    return LLMSettings(backend="openai", base_url=f"{url}/v1", model="qwen", timeout_s=10)


CITATION = Citation(index=1, doc_key="zw/act/2022/1", title="Marriages Act", section_id="zw/act/2022/1#s3",
                    section="section 3", chunk_id="zw/act/2022/1#s3/c0",
                    quote="(1) No person under the age of eighteen years may contract a marriage")  # fmt: skip


async def test_a_stream_without_usage_is_counted_not_reported_as_zero() -> None:
    upstream = LlamaCppLike()
    with LiveServer(upstream.app) as server:
        async with httpx.AsyncClient() as http:
            chat = build_chat_stream(settings(server.url), http)
            assert chat is not None
            events: list[Any] = []
            tracker = CitationTracker([CITATION], events.append)
            usage = await stream_llm_answer(chat, SKILLS["synthesize"], "minimum age of marriage?", "", tracker)
    assert upstream.requests[0]["stream"] is True
    assert upstream.requests[0]["stream_options"] == {"include_usage": True}
    assert tracker.text == "".join(ANSWER)
    assert usage["output_tokens"] == len(ANSWER) and usage["usage_estimated"] == 1
    assert usage["input_tokens"] > 50 and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


async def test_structured_calls_read_the_usage_of_a_non_streamed_json_response() -> None:
    upstream = LlamaCppLike()
    with LiveServer(upstream.app) as server:
        async with httpx.AsyncClient() as http:
            llm = build_llm(settings(server.url), http)
            assert llm is not None
            values = {name: "x" for name in SKILLS["grade"].variables}
            result, call = await ask_json(llm, SKILLS["grade"], timeout_s=10, attempts=1, values=values)
    request = upstream.requests[0]
    assert not request.get("stream") and request["response_format"] == {"type": "json_object"}
    assert call["outcome"] == "ok" and result == {"sufficient": True, "reason": "s 3 answers it"}
    assert (call["input_tokens"], call["output_tokens"]) == (211, 17)


def test_reported_usage_is_kept_as_reported() -> None:
    reported = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}
    assert complete_usage(dict(reported), "prompt " * 100, 7) == reported
    estimated = complete_usage({}, "x" * 400, 7)
    assert estimated == {"input_tokens": 100, "output_tokens": 7, "usage_estimated": 1, "total_tokens": 107}
