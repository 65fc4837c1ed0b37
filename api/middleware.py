"""Limits in front of the routes: the request body's size (pure ASGI, before anything reads it) and each caller's
request rate (a dependency, since it needs to know who is calling). Both answer in the service's error format."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.auth import CallerDep
from api.errors import PayloadTooLargeError, TooManyRequestsError
from api.settings import LimitsSettings
from api.tools.cache import TTLCache

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


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """Token buckets per caller: ``burst`` requests at once, refilled at ``requests_per_minute``. The buckets are
    an LRU of ``tracked_callers``; one untouched long enough to refill completely is as good as forgotten."""

    def __init__(self, cfg: LimitsSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_s = cfg.requests_per_minute / 60.0
        self.burst = float(cfg.burst)
        self.clock = clock
        refill_s = self.burst / self.rate_s if self.rate_s else 0.0
        self._buckets: TTLCache[_Bucket] = TTLCache(refill_s, cfg.tracked_callers, clock=clock)

    def check(self, key: str) -> None:
        """Take one request from ``key``'s bucket, or raise TooManyRequestsError saying when one will be there."""
        if not self.rate_s:
            return
        now = self.clock()
        bucket = self._buckets.get(key) or _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate_s)
        bucket.at = now
        if bucket.tokens < 1.0:
            self._buckets.put(key, bucket)
            wait = math.ceil((1.0 - bucket.tokens) / self.rate_s)
            raise TooManyRequestsError(f"too many requests; try again in {wait} s", retry_after_s=wait)
        bucket.tokens -= 1.0
        self._buckets.put(key, bucket)


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


def rate_limited(request: Request, caller: CallerDep) -> None:
    """Router dependency: count this request against its caller's rate limit."""
    limiter: RateLimiter = request.app.state.rate_limiter
    limiter.check(caller_limit_key(request, caller))
