"""The FastAPI application: ``create_app(settings)`` and its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from api.admission import AdmissionControl
from api.errors import GwetaError, UnauthorizedError
from api.routers import debug, health, query
from api.services import open_services
from api.settings import Settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_services(settings) as services:
            app.state.services = services
            yield

    app = FastAPI(title="Gweta", version="0.1.0", lifespan=lifespan)

    @app.exception_handler(GwetaError)
    async def gweta_error(_: Request, exc: GwetaError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, UnauthorizedError) else None
        body = {"error": {"code": exc.code, "message": exc.message}}
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def bad_input(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {"field": ".".join(str(p) for p in e["loc"][1:]) or "body", "problem": e["msg"]} for e in exc.errors()
        ]
        message = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        return JSONResponse({"error": {"code": "bad_request", "message": message, "details": problems}}, 422)

    app.include_router(health.router)
    app.include_router(query.router)
    app.include_router(debug.router)
    app.add_middleware(AdmissionControl, cfg=settings.admission)
    return app
