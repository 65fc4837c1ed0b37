"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.deps import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(services: ServicesDep) -> JSONResponse:
    corpus = services.corpus
    public = corpus.view_for("")  # the probe needs no token: it counts only what every caller may read
    body = {
        "status": "ready" if len(corpus) else "no_corpus",
        "corpus_version": corpus.version,
        "documents": public.documents,
        "chunks": public.chunks,
        # "stale": the definitions and references were read by an older reader; `gweta ingest` reads them again.
        "links": "stale" if corpus.links.stale and len(corpus) else "current",
    }
    return JSONResponse(body, status_code=200 if len(corpus) else 503)
