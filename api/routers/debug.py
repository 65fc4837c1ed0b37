"""Look inside retrieval: every stage's candidates with their scores, the final hits, the context bundle the model
would read, timings and cache hits. Administrators only when authentication is on."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.auth import AdminDep
from api.deps import ServicesDep
from api.schemas.query import DATE_PATTERN, MAX_QUESTION_CHARS
from api.tools.vector_store import SearchFilters

router = APIRouter(prefix="/api/v1/debug", tags=["debug"])


@router.get("/retrieval")
async def debug_retrieval(
    services: ServicesDep,
    caller: AdminDep,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUESTION_CHARS)],
    top_k: Annotated[int, Query(ge=1, le=50)] = 6,
    mode: Annotated[Literal["hybrid", "dense", "bm25"], Query()] = "hybrid",
    jurisdiction: Annotated[str | None, Query(max_length=16)] = None,
    doc_type: Annotated[str | None, Query(max_length=32)] = None,
    law_id: Annotated[str | None, Query(max_length=256)] = None,
    date_from: Annotated[str | None, Query(pattern=DATE_PATTERN)] = None,
    date_to: Annotated[str | None, Query(pattern=DATE_PATTERN)] = None,
) -> dict[str, Any]:
    deps = services.orchestrator.deps
    retriever, corpus = deps.retriever, deps.corpus
    named = {"jurisdiction": jurisdiction, "doc_type": doc_type, "law_id": law_id, "date_from": date_from,
             "date_to": date_to}  # fmt: skip
    filters = SearchFilters.from_request({k: v for k, v in named.items() if v}, corpus.tenant_scope(caller.tenant))
    result = await retriever.retrieve(q.strip(), top_k=top_k, mode=mode, filters=filters)
    bundle = await deps.bundler.bundle(result.hits)
    chunks = corpus.chunks

    def describe(stage: list[tuple[str, float]]) -> list[dict[str, Any]]:
        return [
            {"chunk_id": cid, "score": round(score, 6), "provision_id": chunks[cid].provision_id}
            if cid in chunks
            else {"chunk_id": cid, "score": round(score, 6), "provision_id": None}
            for cid, score in stage
        ]

    return {
        "query": q,
        "corpus_version": retriever.corpus.version,
        "stages": {name: describe(stage) for name, stage in result.stages.items()},
        "hits": [
            {
                "chunk_id": h.chunk.chunk_id,
                "provision_id": h.chunk.provision_id,
                "title": h.chunk.title,
                "score": round(h.score, 6),
                "ranks": dict(h.ranks),
                "text": h.chunk.text,
            }
            for h in result.hits
        ],
        "bundle": {
            "tokens": bundle.tokens,
            "budget": bundle.budget,
            "left_out": bundle.left_out,
            "pieces": [
                {
                    "index": piece.index,
                    "provision_id": piece.chunk.provision_id,
                    "section_id": piece.chunk.section_id,
                    "title": piece.chunk.title,
                    "whole_provision": piece.whole_provision,
                    "chunk_ids": list(piece.chunk_ids),
                    "tokens": piece.tokens,
                    "text": piece.text,
                }
                for piece in bundle.pieces
            ],
        },
        "timings_ms": {**result.timings, "bundle": bundle.ms},
        "cache_hits": {**result.cache_hits, "document_fetches": bundle.fetches},
        "warnings": [{"code": c, "message": m} for c, m in result.warnings],
    }
