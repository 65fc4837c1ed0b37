"""Limits in front of the routes: the request body's size (pure ASGI, before anything reads it) and each caller's
request rate (a dependency, since it needs to know who is calling; counted in the shared state, so every replica
counts the same). Both answer in the service's error format."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.auth import CallerDep
from api.errors import PayloadTooLargeError, StateUnavailableError, TooManyRequestsError
from api.settings import LimitsSettings
from api.tools.shared_state import MemoryTokenBuckets, SharedState

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
DRAIN_BYTES = 1 << 20


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


class BodyLimitMiddleware:
    """Refuse a request body over ``max_bytes`` with 413: at once when Content-Length says so, else as soon as the
    bytes received pass the limit. A body within it is read here and handed on whole (queries are small)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send, receive, int(declared) if declared.isdigit() else 0)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, receive, DRAIN_BYTES if message.get("more_body", False) else 0)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, delivered = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as the server's receive would

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, receive: Receive, unread: int) -> None:
        """Answer 413. A client still sending a body of moderate size has the rest read and thrown away first (up
        to DRAIN_BYTES), so it sees the answer rather than a reset connection; a bigger one is cut off."""
        finished = unread == 0
        if 0 < unread <= DRAIN_BYTES:
            drained = 0
            while drained <= DRAIN_BYTES:
                message = await receive()
                drained += len(message.get("body", b""))
                if message["type"] != "http.request" or not message.get("more_body", False):
                    finished = True
                    break
        error = PayloadTooLargeError(f"the request body is larger than {self.max_bytes} bytes")
        payload = error_body(error.code, error.message)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        if not finished:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class RateLimiter:
    """Token buckets per caller in this process: ``burst`` requests at once, refilled at ``requests_per_minute``,
    for ``tracked_callers`` callers (LRU). The service's own per-caller limit goes through the shared state
    (``rate_limited``); this is for limits that are checked synchronously."""

    def __init__(self, cfg: LimitsSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.buckets = MemoryTokenBuckets(cfg.requests_per_minute, cfg.burst, cfg.tracked_callers, clock=clock)

    def check(self, key: str) -> None:
        """Take one request from ``key``'s bucket, or raise TooManyRequestsError saying when one will be there."""
        refuse(self.buckets.take_now(key))


def refuse(wait_s: float) -> None:
    """Raise TooManyRequestsError when a bucket said to wait ``wait_s`` seconds (0: the request may go)."""
    if wait_s > 0:
        wait = math.ceil(wait_s)
        raise TooManyRequestsError(f"too many requests; try again in {wait} s", retry_after_s=wait)


def client_key(request: Request, caller_key: str | None) -> str:
    """Whom a limit counts against: the authenticated caller, else the client's address."""
    if caller_key is not None:
        return f"caller:{caller_key}"
    host = request.client.host if request.client else "unknown"
    return f"ip:{host}"


def caller_limit_key(request: Request, caller: CallerDep) -> str:
    """The key of ``caller`` for limits and stream ownership (per IP when auth is off: everyone is 'local')."""
    authenticated = request.app.state.services.settings.auth.enabled
    return client_key(request, caller.key if authenticated else None)


async def rate_limited(request: Request, caller: CallerDep) -> None:
    """Router dependency: count this request against its caller's rate limit, shared by every replica when the
    state is. If the shared state fails, the request goes through or is refused with 503 (``state.limits_fail``)."""
    shared: SharedState = request.app.state.shared
    try:
        wait = await shared.rates.take(caller_limit_key(request, caller))
    except StateUnavailableError:
        if shared.cfg.limits_fail == "closed":
            raise
        return
    refuse(wait)
