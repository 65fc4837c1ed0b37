"""Admission control: a bounded number of answer streams at once, a bounded queue, and a clear 503 beyond it.

An instance that takes every stream it is offered slows every stream down together once its cores are busy, and
latency grows without end. Here at most ``max_streams`` streams run at once; up to ``max_waiting`` more wait their
turn in arrival order, each for at most ``max_wait_s``; anything beyond that is answered at once with HTTP 503, a
``Retry-After`` header and the usual error body (code ``overloaded``), so a client or a load balancer can go
elsewhere or come back. Only the paths under ``prefix`` (the query streams) are counted; health checks never wait.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math

from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import OverloadedError
from api.settings import AdmissionSettings

log = logging.getLogger(__name__)


class AdmissionControl:
    """ASGI middleware that admits at most ``max_streams`` requests under ``prefix`` at once, queueing a few more."""

    def __init__(self, app: ASGIApp, cfg: AdmissionSettings, prefix: str = "/api/v1/query") -> None:
        self.app = app
        self.cfg = cfg
        self.prefix = prefix
        self.slots = asyncio.Semaphore(cfg.max_streams)
        self.running = 0
        self.waiting = 0
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix) or not self.cfg.enabled:
            await self.app(scope, receive, send)
            return
        if self.running >= self.cfg.max_streams and self.waiting >= self.cfg.max_waiting:
            await self._refuse(send, "full")
            return
        self.waiting += 1
        try:
            await asyncio.wait_for(self.slots.acquire(), self.cfg.max_wait_s)
        except TimeoutError:
            await self._refuse(send, "waited too long")
            return
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.running -= 1
            self.slots.release()

    async def _refuse(self, send: Send, why: str) -> None:
        self.refused += 1
        log.warning("refused a stream (%s): %d running, %d waiting", why, self.running, self.waiting)
        error = OverloadedError("Too many questions are being answered right now; please try again shortly.")
        body = json.dumps({"error": {"code": error.code, "message": error.message}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(math.ceil(self.cfg.retry_after_s)).encode()),
        ]
        await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})
