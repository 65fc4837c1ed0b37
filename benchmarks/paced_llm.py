"""A loopback OpenAI-protocol chat server paced like a hosted model, for load runs (benchmarks/load.py).

Every reply waits ``--ttft-ms`` before its first token, then sends one token every 1/``--tokens-per-s`` seconds,
streamed (``stream: true``) or whole at the end; a token is about four characters, as in an English BPE vocabulary.
The answer (the synthesize skill) is written as a good hosted model writes it, from the numbered sources in its own
prompt: their sentences, verbatim, each ending with its source's ``[n]`` marker, one from each source of a distinct
provision in turn, as many as bring the answer nearest ``--answer-tokens`` tokens (legal sentences are long: adding
sentences until the count is passed made answers 40% longer than asked; the sentences come round again when the
sources hold fewer, so every answer is about that long: 84 to 307 tokens over the development questions, median
199); ``--at-most`` takes only sentences that fit within the count (the shortest one when none does), so the answers
are at most that long; with no sources it abstains. So the service's
verification passes it, as it passes a faithful model, and a load run measures verified answers. ``--canned``
restores the old filler text that cites two sources but states nothing they say (every answer then fails
verification: the corrective path under load). Structured skills (guard, route, rewrite, plan, expand,
grade, replan) get a valid JSON object for their schema, paced the same way. ``POST /control`` with ``{"fail": true}``
makes every call answer 503 until ``{"fail": false}`` (the fault run). The wire format is the scripted test model's
(``tests/servers.py``).

    python benchmarks/paced_llm.py --port 8601 [--ttft-ms 300 --tokens-per-s 50 --answer-tokens 200] [--at-most]
        [--canned]
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
from api.text.sentences import split_sentences  # noqa: E402
from tests.servers import chat_chunk, chat_completion, skill_of  # noqa: E402

_SOURCE = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)
_END = re.compile(r"[.;:]$")
MIN_SENTENCE_WORDS = 6
CHARS_PER_TOKEN = 4
_QUESTION = re.compile(r"(?:Message|Question|Query):\s*\n?<*\n?(.+)", re.IGNORECASE)
FILLER = (
    "The provision sets out the rule that applies to this situation and the conditions under which it applies, "
    "including who must act, within what time, and what follows when the duty is not met by the person concerned"
).split()


def user_text(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")


def sources(user: str) -> list[tuple[int, str, str]]:
    """The numbered sources of a synthesize prompt: (n, header, text), in order."""
    found = list(_SOURCE.finditer(user))
    out = []
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else user.find("\n\nQuestion:", match.end())
        out.append((int(match.group(1)), match.group(2), user[match.end() : end if end > 0 else len(user)].strip()))
    return out


def faithful_tokens(user: str, count: int, at_most: bool = False) -> list[str]:
    """About ``count`` tokens (``at_most``: no more) of sentences copied from the prompt's sources, each with its [n]
    marker: the sources of distinct provisions first (a rule and its exception are both cited), one sentence from
    each in turn."""
    by_header: dict[str, tuple[int, list[str]]] = {}
    for number, header, text in sources(user):
        sentences = [
            _END.sub("", sentence).rstrip() + f" [{number}]."
            for sentence, _ in split_sentences(" ".join(text.replace("…", " ").split()))
            if len(sentence.split()) >= MIN_SENTENCE_WORDS and _END.search(sentence)
        ]
        if sentences and header not in by_header:
            by_header[header] = (number, sentences)
    pools = [sentences for _, sentences in by_header.values()]
    if not pools:
        return tokens_of("I could not find this in the documents I have.")
    if at_most:
        return fitting_tokens(pools, count)
    chosen: list[str] = []
    size = turn = 0
    while size < count:  # round after round, so every answer is about ``count`` tokens however few the sources
        for pool in pools:
            if turn < len(pool) or turn >= max(map(len, pools)):
                sentence = pool[turn % len(pool)]
                more = len(tokens_of(sentence + " "))
                if chosen and size + more - count > count - size:  # nearer the count without it
                    return tokens_of(" ".join(chosen) + " ")
                chosen.append(sentence)
                size += more
                if size >= count:
                    break
        turn += 1
    return tokens_of(" ".join(chosen) + " ")


def fitting_tokens(pools: list[list[str]], count: int) -> list[str]:
    """The sentences of ``faithful_tokens``' turns that fit within ``count`` tokens, round after round while any
    does; the shortest sentence alone when none fits."""
    order = [pool[turn] for turn in range(max(map(len, pools))) for pool in pools if turn < len(pool)]
    chosen: list[str] = []
    size, added = 0, True
    while added:
        added = False
        for sentence in order:
            if size + (more := len(tokens_of(sentence + " "))) <= count:
                chosen.append(sentence)
                size, added = size + more, True
    return tokens_of(" ".join(chosen or [min(order, key=len)]) + " ")


def tokens_of(text: str) -> list[str]:
    """``text`` as the model streams it: pieces of about ``CHARS_PER_TOKEN`` characters."""
    return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]


def answer_tokens(user: str, count: int) -> list[str]:
    """The old canned answer (``--canned``): about ``count`` word tokens citing the first two sources with different
    headings, in filler text that none of them supports."""
    markers: list[str] = []
    seen: set[str] = set()
    for number, header in _SOURCE.findall(user):
        if header not in seen:
            seen.add(header)
            markers.append(f"[{number}]")
        if len(markers) == 2:
            break
    if not markers:
        return tokens_of("I could not find this in the documents I was given.")
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
    def __init__(
        self, ttft_s: float, tokens_per_s: float, answer_tokens: int, canned: bool = False, at_most: bool = False
    ) -> None:
        self.ttft_s, self.gap_s, self.answer_tokens = ttft_s, 1.0 / tokens_per_s, answer_tokens
        self.canned, self.at_most = canned, at_most
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
            if self.canned:
                tokens = answer_tokens(user, self.answer_tokens)
            else:
                tokens = faithful_tokens(user, self.answer_tokens, self.at_most)
        else:
            text = structured_reply(skill, user)
            tokens = tokens_of(text)
        created, model = int(time.time()), body.get("model", "paced")
        usage = {"prompt_tokens": len(user) // 4, "completion_tokens": len(tokens)}

        if not body.get("stream"):
            await asyncio.sleep(self.ttft_s + self.gap_s * len(tokens))
            return JSONResponse(chat_completion(created, model, "".join(tokens), usage, cid="chatcmpl-paced"))

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            return chat_chunk(created, model, delta, finish, cid="chatcmpl-paced", **extra)

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
                yield chunk({}, None, usage={**usage, "total_tokens": sum(usage.values())})
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=300)
    parser.add_argument("--tokens-per-s", type=float, default=50)
    parser.add_argument("--answer-tokens", type=int, default=200)
    parser.add_argument("--at-most", action="store_true", help="answers no longer than --answer-tokens")
    parser.add_argument("--canned", action="store_true", help="the old answer: filler its sources do not support")
    args = parser.parse_args()
    server = PacedOpenAI(args.ttft_ms / 1000, args.tokens_per_s, args.answer_tokens, args.canned, args.at_most)
    uvicorn.run(server.app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
