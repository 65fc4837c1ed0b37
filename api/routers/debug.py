"""Look inside retrieval: every stage's candidates with their scores, the final hits, timings and cache hits.
(Admin-only once authentication lands.)"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import Retriever
from api.schemas.query import MAX_QUESTION_CHARS

router = APIRouter(prefix="/api/v1/debug", tags=["debug"])


@router.get("/retrieval")
async def debug_retrieval(
    retriever: Retriever,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUESTION_CHARS)],
    top_k: Annotated[int, Query(ge=1, le=50)] = 6,
) -> dict[str, Any]:
    result = await retriever.retrieve(q.strip(), top_k=top_k)
    chunks = retriever.corpus.chunks

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
        "timings_ms": result.timings,
        "cache_hits": result.cache_hits,
        "warnings": [{"code": c, "message": m} for c, m in result.warnings],
    }
