"""The FastAPI application: ``create_app(settings)`` and its lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from api.admission import AdmissionControl
from api.auth import CallerDep, FailedAttempts
from api.errors import GwetaError, TooManyRequestsError, UnauthorizedError
from api.middleware import BodyLimitMiddleware
from api.observability import install_access_log_redaction
from api.routers import debug, documents, health, query, web, whatsapp
from api.routers.api_docs import install_api_docs
from api.schemas.errors import ErrorResponse
from api.schemas.events import StreamEvent
from api.services import open_services
from api.settings import Settings
from api.streams import StreamHub
from api.tools.reader import DocumentReader
from api.tools.shared_state import StateLimits, build_shared_state
from api.tools.whatsapp import open_whatsapp

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            if shared.redis is not None:
                await shared.redis.ping()  # a clear error at boot, naming GWETA_STATE__URL
            async with open_services(settings, serving=True) as services:
                app.state.services = services
                app.state.reader = DocumentReader(services.corpus)
                try:
                    async with open_whatsapp(
                        settings.whatsapp, services.asker, services.corpus, settings.web.public_url, shared
                    ) as bot:
                        app.state.whatsapp = bot
                        yield
                finally:
                    await app.state.streams.close()
        finally:
            await shared.close()

    docs_need_token = settings.auth.enabled and not settings.auth.docs_public
    app = FastAPI(
        title="Gweta",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served from the package by api_docs, not from a CDN
        redoc_url=None,
        openapi_url=None if docs_need_token else "/openapi.json",
    )
    shared = build_shared_state(settings.state, state_limits(settings))
    app.state.shared = shared
    app.state.streams = StreamHub(
        settings.streams, settings.limits.streams_per_caller, slots=shared.slots, replay=shared.replay,
        state=settings.state,
    )  # fmt: skip
    app.state.dev_signin_failures = FailedAttempts(settings.web.dev_signin_failures, settings.web.dev_signin_window_s)
    _install_error_handlers(app)
    _install_limits(app, settings)
    install_access_log_redaction(settings.privacy)

    app.include_router(health.router)
    app.include_router(query.router)
    app.include_router(debug.router)
    app.include_router(documents.router)
    app.include_router(whatsapp.router)
    app.include_router(web.router)
    if settings.web.enabled:
        app.mount("/static", web.static_files(), name="static")
    _install_openapi(app, docs_need_token)
    if not docs_need_token:
        install_api_docs(app, "/openapi.json")
    return app


def state_limits(settings: Settings) -> StateLimits:
    """The limits the shared state enforces, from their own settings sections."""
    return StateLimits(
        replay_events=settings.streams.replay_events, requests_per_minute=settings.limits.requests_per_minute,
        burst=settings.limits.burst, tracked_callers=settings.limits.tracked_callers,
        whatsapp_limit=settings.whatsapp.rate_limit, whatsapp_window_s=settings.whatsapp.rate_window_s,
        whatsapp_seen_ids=settings.whatsapp.seen_ids,
    )  # fmt: skip


def error_response(code: str, message: str, status: int, **extra: Any) -> JSONResponse:
    headers = extra.pop("headers", None)
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status, headers=headers)


def _install_error_handlers(app: FastAPI) -> None:
    """Every error a client sees is ``{"error": {"code", "message"}}``: ours, bad input, unknown routes, bugs."""

    @app.exception_handler(GwetaError)
    async def gweta_error(_: Request, exc: GwetaError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, UnauthorizedError) else {}
        if isinstance(exc, TooManyRequestsError):
            headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
        return error_response(exc.code, exc.message, exc.status_code, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def bad_input(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"field": ".".join(str(p) for p in e["loc"][1:]) or "body", "problem": e["msg"]} for e in exc.errors()
        ]
        message = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        return error_response("bad_request", message, 422, details=problems)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}
        message = exc.detail if isinstance(exc.detail, str) else "the request cannot be served"
        headers = exc.headers
        if exc.status_code == 400:
            message = "the request body is not valid JSON"  # FastAPI's words name its parser
        elif exc.status_code == 405:
            headers = {**(exc.headers or {}), "Allow": ", ".join(allowed_methods(request))}
        return error_response(codes.get(exc.status_code, "http_error"), message, exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled %s", type(exc).__name__)  # uvicorn logs the traceback; the client never sees it
        return error_response("internal_error", "Something went wrong on our side.", 500)


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app serves at the request's path: Starlette's 405 names only the first route
    that matched the path, and a path served by one route per method (GET and POST) lists only one of them. Each
    method is matched against the app's routes (included routers among them) as the router itself would match it."""
    routes = request.app.router.routes
    return [m for m in METHODS if any(r.matches({**request.scope, "method": m})[0] is Match.FULL for r in routes)]


def _install_limits(app: FastAPI, settings: Settings) -> None:
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.limits.max_body_bytes)
    app.add_middleware(AdmissionControl, cfg=settings.admission)


def _install_openapi(app: FastAPI, docs_need_token: bool) -> None:
    """The schema documents the stream's event models and the error format; with auth on (and docs not made
    public) ``/openapi.json`` needs a token and the interactive docs are off."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            events = TypeAdapter(StreamEvent).json_schema(ref_template="#/components/schemas/{model}")
            components.update(events.get("$defs", {}))
            errors = ErrorResponse.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(errors.pop("$defs", {}))
            components["ErrorResponse"] = errors
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    if docs_need_token:

        @app.get("/openapi.json", include_in_schema=False)
        async def openapi_with_token(_: CallerDep) -> JSONResponse:
            return JSONResponse(app.openapi())
