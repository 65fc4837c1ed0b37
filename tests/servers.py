"""Real servers on loopback for tests: our app under uvicorn, and upstream services that speak real wire formats."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from api.composer.skills import load_skills
from api.settings import ObjectStoreSettings


class LiveServer:
    """An ASGI app under a real uvicorn on 127.0.0.1, in a background thread with its own event loop."""

    def __init__(self, app: ASGIApp, start_timeout_s: float = 30.0) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.start_timeout_s = start_timeout_s

    def __enter__(self) -> LiveServer:
        self.thread.start()
        for _ in range(int(self.start_timeout_s / 0.05)):
            if self.server.started or not self.thread.is_alive():
                break
            threading.Event().wait(0.05)
        if not self.server.started:
            raise RuntimeError("uvicorn did not start")
        return self

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@contextmanager
def moto_s3() -> Iterator[str]:
    """A real S3-compatible server (moto) on 127.0.0.1, for as long as the block runs: its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def s3_bucket(endpoint: str, bucket: str, **extra: Any) -> ObjectStoreSettings:
    """Create ``bucket`` on the loopback S3 server at ``endpoint``; the object store settings that reach it."""
    import boto3

    creds = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds).create_bucket(Bucket=bucket)
    return ObjectStoreSettings(
        backend="s3", bucket=bucket, endpoint_url=endpoint, region="us-east-1", access_key_id=SecretStr("test"),
        secret_access_key=SecretStr("test"), **extra,
    )  # fmt: skip


class SlowProxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream`` (host, port), in its own thread and event loop, that holds
    every piece of a request for ``delay`` seconds before passing it on: a slowed network or a slow object store, as
    a client sees it. Set ``delay`` at any time; 0 passes bytes straight through."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.delay = 0.0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.Server | None = None

    def __enter__(self) -> SlowProxy:
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self.loop
        ).result(10)
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, held: bool) -> None:
        try:
            while data := await reader.read(65536):
                if held and self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        await asyncio.gather(self._pipe(reader, up_writer, True), self._pipe(up_reader, writer, False))

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@dataclass
class Reply:
    """One scripted chat-completions reply: content pieces streamed in order, or an HTTP failure."""

    pieces: list[str] = field(default_factory=list)
    status: int = 200
    delay_s: float = 0.0
    stall_after: int | None = None
    """Stop sending (for ``stall_s``) after this many pieces: a model that hangs mid-answer."""
    stall_s: float = 0.0
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 120, "completion_tokens": 30})


def skill_of(body: dict[str, Any]) -> str:
    """Which of our skills a chat request renders, told by its system prompt's opening words."""
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    for name, skill in SKILLS.items():
        if system.startswith(skill.system[:60]):
            return name
    return "unknown"


SKILLS = load_skills()


def chat_chunk(
    created: int,
    model: str,
    delta: dict[str, Any],
    finish: str | None = None,
    *,
    cid: str = "chatcmpl-test",
    **extra: Any,
) -> str:
    """One ``chat.completion.chunk`` as a server-sent event, as OpenAI streams it; a chunk with neither delta nor
    finish reason has no choices (the closing usage chunk: pass ``usage=``)."""
    payload = {
        "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else [], **extra,
    }  # fmt: skip
    return f"data: {json.dumps(payload)}\n\n"


def chat_completion(
    created: int, model: str, content: str, usage: dict[str, int], *, cid: str = "chatcmpl-test"
) -> dict[str, Any]:
    """A whole (non-streamed) ``chat.completion`` body; ``usage`` gains its ``total_tokens``."""
    return {
        "id": cid, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {**usage, "total_tokens": sum(usage.values())},
    }  # fmt: skip


def answer_json(value: dict[str, Any], **kwargs: Any) -> Reply:
    """A scripted structured reply: the JSON object, streamed in a few pieces as a model would."""
    text = json.dumps(value)
    return Reply([text[i : i + 20] for i in range(0, len(text), 20)], **kwargs)


class FakeOpenAI:
    """A loopback server that speaks OpenAI's chat-completions protocol, streaming included, from a script.

    ``replies`` answer the synthesize skill (the answer itself), in order; ``scripts`` answer other skills by name
    (guard, route, rewrite, plan, expand, grade, replan). A skill with nothing scripted gets HTTP 400, which the
    service treats as that call failing: it falls back to its deterministic path.
    """

    def __init__(self, replies: list[Reply], scripts: dict[str, list[Reply]] | None = None) -> None:
        self.replies = list(replies)
        self.scripts = {name: list(r) for name, r in (scripts or {}).items()}
        self.requests: list[dict[str, Any]] = []
        self.skills_called: list[str] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request, in step with skills_called
        self.streams_abandoned = 0  # streams whose client went away before the end
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    @property
    def calls(self) -> list[str]:
        """The skills called, in order, except that an expansion and a grade made at once (either may arrive first)
        read as expand, grade."""
        out = list(self.skills_called)
        for i in range(len(out) - 1):
            if out[i : i + 2] == ["grade", "expand"]:
                out[i : i + 2] = ["expand", "grade"]
        return out

    def _next(self, skill: str) -> Reply:
        if skill == "synthesize":
            return self.replies.pop(0) if self.replies else Reply(["(no scripted reply)"])
        queue = self.scripts.get(skill)
        return queue.pop(0) if queue else Reply(status=400)

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        skill = skill_of(body)
        self.skills_called.append(skill)
        self.arrivals.append(time.monotonic())
        reply = self._next(skill)
        if reply.status != 200:
            error = {"error": {"message": "scripted failure", "type": "server_error", "code": None}}
            return JSONResponse(error, status_code=reply.status)
        created, model = int(time.time()), body.get("model", "fake")

        async def events() -> Any:
            yield chat_chunk(created, model, {"role": "assistant", "content": ""})
            try:
                for n, piece in enumerate(reply.pieces):
                    await asyncio.sleep(reply.stall_s if n == reply.stall_after else reply.delay_s)
                    yield chat_chunk(created, model, {"content": piece})
            except (asyncio.CancelledError, GeneratorExit):
                self.streams_abandoned += 1
                raise
            yield chat_chunk(created, model, {}, "stop")
            if body.get("stream_options", {}).get("include_usage"):
                yield chat_chunk(created, model, {}, usage={**reply.usage, "total_tokens": sum(reply.usage.values())})
            yield "data: [DONE]\n\n"

        if not body.get("stream"):
            # A non-streamed response arrives when the whole reply has been generated.
            stall = reply.stall_s if reply.stall_after is not None else 0.0
            await asyncio.sleep(reply.delay_s * len(reply.pieces) + stall)
            return JSONResponse(chat_completion(created, model, "".join(reply.pieces), reply.usage))
        return StreamingResponse(events(), media_type="text/event-stream")


class FakePageIndex:
    """A loopback server speaking PageIndex's document API: upload, poll the OCR status, fetch pages, delete.

    ``pages`` are the markdown texts it "recognises"; the first ``polls_before_done`` status polls answer
    ``processing``; ``failures`` are HTTP statuses answered to the first uploads (to exercise retries).
    """

    def __init__(self, pages: list[str], api_key: str = "pi-key", polls_before_done: int = 1) -> None:
        self.pages, self.api_key, self.polls_left = pages, api_key, polls_before_done
        self.failures: list[int] = []
        self.uploads: list[bytes] = []
        self.deleted: list[str] = []
        self.app = Starlette(
            routes=[
                Route("/doc/", self.submit, methods=["POST"]),
                Route("/doc/{doc_id}/", self.get, methods=["GET"]),
                Route("/doc/{doc_id}/", self.delete, methods=["DELETE"]),
            ]
        )

    def _refused(self, request: Request) -> Response | None:
        if request.headers.get("api_key") != self.api_key:
            return JSONResponse({"detail": "Invalid API key"}, status_code=401)
        return None

    async def submit(self, request: Request) -> Response:
        if refused := self._refused(request):
            return refused
        if self.failures:
            return JSONResponse({"detail": "busy"}, status_code=self.failures.pop(0))
        body = await request.body()
        if not request.headers.get("content-type", "").startswith("multipart/form-data") or b"%PDF" not in body:
            return JSONResponse({"detail": "file is required"}, status_code=400)
        self.uploads.append(body)
        return JSONResponse({"doc_id": f"pi-{len(self.uploads)}"})

    async def get(self, request: Request) -> Response:
        if refused := self._refused(request):
            return refused
        doc_id = request.path_params["doc_id"]
        if request.query_params.get("type") != "ocr" or request.query_params.get("format") != "page":
            return JSONResponse({"detail": "unsupported query"}, status_code=400)
        if self.polls_left > 0:
            self.polls_left -= 1
            return JSONResponse({"doc_id": doc_id, "status": "processing", "retrieval_ready": False})
        result = [{"page_index": i, "markdown": text} for i, text in enumerate(self.pages, start=1)]
        return JSONResponse({"doc_id": doc_id, "status": "completed", "retrieval_ready": False, "result": result})

    async def delete(self, request: Request) -> Response:
        if refused := self._refused(request):
            return refused
        self.deleted.append(request.path_params["doc_id"])
        return JSONResponse({"status": "deleted"})


class FakeLangSmith:
    """A loopback server speaking LangSmith's ingestion API: ``GET /info``, then runs posted as multipart parts
    (``POST /runs/multipart``; each part a JSON run, or its inputs or outputs), or as JSON batches."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.api_keys: set[str] = set()
        self.app = Starlette(
            routes=[
                Route("/info", self.info, methods=["GET"]),
                Route("/runs/multipart", self.multipart, methods=["POST"]),
                Route("/runs/batch", self.batch, methods=["POST"]),
            ]
        )

    async def info(self, request: Request) -> Response:
        config = {
            "use_multipart_endpoint": True, "scale_up_qsize_trigger": 1000, "scale_up_nthreads_limit": 16,
            "scale_down_nempty_trigger": 4, "size_limit": 100, "size_limit_bytes": 20_971_520,
        }  # fmt: skip
        return JSONResponse({"version": "0.10.0", "instance_flags": {}, "batch_ingest_config": config})

    async def multipart(self, request: Request) -> Response:
        self.api_keys.add(request.headers.get("x-api-key", ""))
        boundary = request.headers["content-type"].split("boundary=", 1)[1].encode()
        body = await request.body()
        for part in body.split(b"--" + boundary):
            _, _, payload = part.partition(b"\r\n\r\n")
            if payload.strip(b"\r\n-"):
                self.parts.append(payload.rstrip(b"\r\n"))
        return JSONResponse({}, status_code=202)

    async def batch(self, request: Request) -> Response:
        self.api_keys.add(request.headers.get("x-api-key", ""))
        self.parts.append(await request.body())
        return JSONResponse({}, status_code=202)

    @property
    def run_names(self) -> set[str]:
        names = set()
        for part in self.parts:
            try:
                value = json.loads(part)
            except ValueError:
                continue
            for run in value if isinstance(value, list) else [value]:
                if isinstance(run, dict) and isinstance(run.get("name"), str):
                    names.add(run["name"])
        return names


class FakeGraphAPI:
    """A loopback server speaking the WhatsApp Cloud API's send endpoint (``POST /{version}/{phone_id}/messages``).

    Records every accepted request (``sent``: bodies in order; ``texts``: the text messages), checks the bearer
    token, and answers the statuses queued in ``failures`` first (429 with ``Retry-After``, 500…) to exercise retries.
    """

    def __init__(self, access_token: str = "graph-token", phone_number_id: str = "1234567890") -> None:
        self.access_token, self.phone_number_id = access_token, phone_number_id
        self.failures: list[int] = []
        self.attempts = 0
        self.sent: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/{version}/{phone_id}/messages", self.messages, methods=["POST"])])

    async def messages(self, request: Request) -> Response:
        self.attempts += 1
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            error = {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190}
            return JSONResponse({"error": error}, status_code=401)
        if request.path_params["phone_id"] != self.phone_number_id:
            return JSONResponse({"error": {"message": "Unknown path components", "code": 2500}}, status_code=400)
        if self.failures:
            status = self.failures.pop(0)
            headers = {"Retry-After": "0"} if status == 429 else None
            error = {"message": "(#130429) Rate limit hit" if status == 429 else "Service unavailable", "code": status}
            return JSONResponse({"error": error}, status_code=status, headers=headers)
        body = await request.json()
        if body.get("messaging_product") != "whatsapp":
            return JSONResponse({"error": {"message": "messaging_product is required", "code": 100}}, 400)
        self.sent.append(body)
        if body.get("status") == "read":
            return JSONResponse({"success": True})
        return JSONResponse({
            "messaging_product": "whatsapp", "contacts": [{"input": body.get("to"), "wa_id": body.get("to")}],
            "messages": [{"id": f"wamid.out.{len(self.sent)}"}],
        })  # fmt: skip

    def texts(self, to: str | None = None) -> list[str]:
        return [b["text"]["body"] for b in self.sent if b.get("type") == "text" and (to is None or b.get("to") == to)]

    def reads(self) -> list[dict[str, Any]]:
        return [b for b in self.sent if b.get("status") == "read"]


class FakeFirebaseAuth:
    """A loopback server speaking Firebase Authentication's REST API for email sign-in
    (``POST /v1/accounts:signInWithPassword?key=…``) and token refresh (``POST /v1/token?key=…``).

    ``mint`` turns an email into the ID token to hand out (tests sign one their app accepts). CORS is answered as
    Google's servers answer it, since the browser calls it from the app's origin.
    """

    def __init__(self, api_key: str, users: dict[str, str], mint: Any) -> None:
        self.api_key, self.users, self.mint = api_key, users, mint
        self.sign_ins: list[str] = []
        cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "content-type",
                "Access-Control-Allow-Methods": "POST"}  # fmt: skip
        self.cors = cors
        self.app = Starlette(
            routes=[
                Route("/v1/accounts:signInWithPassword", self.sign_in, methods=["POST", "OPTIONS"]),
                Route("/v1/token", self.refresh, methods=["POST", "OPTIONS"]),
            ]
        )

    def _error(self, message: str, status: int = 400) -> Response:
        body = {"error": {"code": status, "message": message, "errors": [{"message": message, "reason": "invalid"}]}}
        return JSONResponse(body, status_code=status, headers=self.cors)

    async def sign_in(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=self.cors)
        if request.query_params.get("key") != self.api_key:
            return self._error("API key not valid. Please pass a valid API key.")
        body = await request.json()
        email, password = body.get("email", ""), body.get("password", "")
        if self.users.get(email) != password:
            return self._error("INVALID_LOGIN_CREDENTIALS")
        self.sign_ins.append(email)
        return JSONResponse({
            "kind": "identitytoolkit#VerifyPasswordResponse", "localId": f"uid-{email}", "email": email,
            "displayName": "", "idToken": self.mint(email), "registered": True, "refreshToken": f"refresh-{email}",
            "expiresIn": "3600",
        }, headers=self.cors)  # fmt: skip

    async def refresh(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=self.cors)
        form = parse_qs((await request.body()).decode())
        email = form.get("refresh_token", [""])[0].removeprefix("refresh-")
        if email not in self.users:
            return self._error("INVALID_REFRESH_TOKEN")
        return JSONResponse({"id_token": self.mint(email), "refresh_token": f"refresh-{email}", "expires_in": "3600",
                             "token_type": "Bearer", "user_id": f"uid-{email}"}, headers=self.cors)  # fmt: skip
