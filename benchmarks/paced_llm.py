"""A loopback OpenAI-protocol chat server paced like a hosted model, for load runs (benchmarks/load.py).

Every reply waits ``--ttft-ms`` before its first token, then sends one token every 1/``--tokens-per-s`` seconds,
streamed (``stream: true``) or whole at the end. The answer (the synthesize skill) is about ``--answer-tokens``
tokens and cites the first two distinct sources it was shown; structured skills (guard, route, rewrite, plan, expand,
grade, replan) get a valid JSON object for their schema, paced the same way. ``POST /control`` with
``{"fail": true}`` makes every call answer 503 until ``{"fail": false}`` (the fault run).

    python benchmarks/paced_llm.py --port 8601 [--ttft-ms 300 --tokens-per-s 50 --answer-tokens 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from api.composer.skills import load_skills  # noqa: E402

SKILLS = load_skills()
_SOURCE = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)
_QUESTION = re.compile(r"(?:Message|Question|Query):\s*\n?<*\n?(.+)", re.IGNORECASE)
FILLER = (
    "The provision sets out the rule that applies to this situation and the conditions under which it applies, "
    "including who must act, within what time, and what follows when the duty is not met by the person concerned"
).split()


def skill_of(body: dict[str, Any]) -> str:
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    for name, skill in SKILLS.items():
        if system.startswith(skill.system[:60]):
            return name
    return "unknown"


def user_text(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")


def answer_tokens(user: str, count: int) -> list[str]:
    """About ``count`` word tokens citing the first two sources with different headings."""
    markers: list[str] = []
    seen: set[str] = set()
    for number, header in _SOURCE.findall(user):
        if header not in seen:
            seen.add(header)
            markers.append(f"[{number}]")
        if len(markers) == 2:
            break
    if not markers:
        return "I could not find this in the documents I was given.".split()
    words = [FILLER[i % len(FILLER)] for i in range(count)]
    words[count // 2 - 1] += f" {markers[0]}."
    words[-1] += f" {markers[-1]}."
    return [w + " " for w in words]


def structured_reply(skill: str, user: str) -> str:
    question = (_QUESTION.search(user).group(1).strip(" <>") if _QUESTION.search(user) else user.strip())[:300]
    value: dict[str, Any] = {
        "guard": {"attack": False, "question": question},
        "route": {"route": "rag_qa", "reason": "a legal question"},
        "rewrite": {"question": question},
        "plan": {"complexity": "simple", "steps": [question]},
        "expand": {"queries": [question], "passages": []},
        "grade": {"relevant": [1, 2, 3], "sufficient": True, "rewrite": ""},
        "replan": {"complete": True, "next": ""},
    }.get(skill, {})
    return json.dumps(value)


class PacedOpenAI:
    def __init__(self, ttft_s: float, tokens_per_s: float, answer_tokens: int) -> None:
        self.ttft_s, self.gap_s, self.answer_tokens = ttft_s, 1.0 / tokens_per_s, answer_tokens
        self.failing = False
        self.calls: dict[str, int] = {}
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/control", self.control, methods=["POST"]),
                Route("/stats", self.stats, methods=["GET"]),
            ]
        )

    async def control(self, request: Request) -> Response:
        self.failing = bool((await request.json()).get("fail"))
        return JSONResponse({"failing": self.failing})

    async def stats(self, _: Request) -> Response:
        return JSONResponse({"calls": self.calls, "failing": self.failing})

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        skill = skill_of(body)
        self.calls[skill] = self.calls.get(skill, 0) + 1
        if self.failing:
            return JSONResponse({"error": {"message": "overloaded", "type": "server_error", "code": None}}, 503)
        user = user_text(body)
        if skill == "synthesize":
            tokens = answer_tokens(user, self.answer_tokens)
        else:
            text = structured_reply(skill, user)
            tokens = [text[i : i + 4] for i in range(0, len(text), 4)]  # ~4 characters a token
        created, model = int(time.time()), body.get("model", "paced")
        usage = {"prompt_tokens": len(user) // 4, "completion_tokens": len(tokens)}
        usage["total_tokens"] = sum(usage.values())

        if not body.get("stream"):
            await asyncio.sleep(self.ttft_s + self.gap_s * len(tokens))
            message = {"role": "assistant", "content": "".join(tokens)}
            return JSONResponse({
                "id": "chatcmpl-paced", "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage,
            })  # fmt: skip

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            payload = {
                "id": "chatcmpl-paced", "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else [],
                **extra,
            }  # fmt: skip
            return f"data: {json.dumps(payload)}\n\n"

        async def events() -> AsyncIterator[str]:
            start = time.perf_counter()
            await asyncio.sleep(self.ttft_s)
            yield chunk({"role": "assistant", "content": ""})
            for n, token in enumerate(tokens):
                # Pace against the clock, so a slow event loop does not stretch the whole answer.
                await asyncio.sleep(max(0.0, start + self.ttft_s + n * self.gap_s - time.perf_counter()))
                yield chunk({"content": token})
            yield chunk({}, "stop")
            if body.get("stream_options", {}).get("include_usage"):
                yield chunk({}, None, usage=usage)
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=300)
    parser.add_argument("--tokens-per-s", type=float, default=50)
    parser.add_argument("--answer-tokens", type=int, default=200)
    args = parser.parse_args()
    server = PacedOpenAI(args.ttft_ms / 1000, args.tokens_per_s, args.answer_tokens)
    uvicorn.run(server.app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
