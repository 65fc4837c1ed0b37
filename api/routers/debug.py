"""Look inside retrieval: every stage's candidates with their scores, the final hits, the context bundle the model
would read, timings and cache hits. Administrators only when authentication is on."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.auth import AdminDep
from api.deps import ServicesDep
from api.middleware import rate_limited
from api.schemas.debug import DebugBundle, DebugHit, DebugPiece, DebugRetrieval, DebugWarning, StageCandidate
from api.schemas.errors import error_responses
from api.schemas.query import RetrievalProbe

router = APIRouter(prefix="/api/v1/debug", tags=["debug"], dependencies=[Depends(rate_limited)])


@router.get("/retrieval", response_model=DebugRetrieval, responses=error_responses(401, 403, 422, 429))
async def debug_retrieval(
    services: ServicesDep, caller: AdminDep, probe: Annotated[RetrievalProbe, Query()]
) -> DebugRetrieval:
    deps = services.orchestrator.deps
    retriever = deps.retriever
    filters = retriever.scoped_filters(probe.filters(), caller.tenant)
    result = await retriever.retrieve(probe.q, top_k=probe.top_k, mode=probe.mode, filters=filters)
    bundle = await deps.bundler.bundle(result.hits)
    chunks = deps.corpus.chunks

    def stage(candidates: list[tuple[str, float]]) -> list[StageCandidate]:
        return [
            StageCandidate(
                chunk_id=cid, score=round(score, 6), provision_id=chunks[cid].provision_id if cid in chunks else None
            )
            for cid, score in candidates
        ]

    return DebugRetrieval(
        query=probe.q,
        corpus_version=retriever.corpus.version,
        stages={name: stage(candidates) for name, candidates in result.stages.items()},
        hits=[
            DebugHit(
                chunk_id=h.chunk.chunk_id,
                provision_id=h.chunk.provision_id,
                title=h.chunk.title,
                score=round(h.score, 6),
                ranks=dict(h.ranks),
                text=h.chunk.text,
            )  # fmt: skip
            for h in result.hits
        ],
        bundle=DebugBundle(
            tokens=bundle.tokens,
            budget=bundle.budget,
            left_out=bundle.left_out,
            pieces=[
                DebugPiece(
                    index=p.index,
                    provision_id=p.chunk.provision_id,
                    section_id=p.chunk.section_id,
                    title=p.chunk.title,
                    whole_provision=p.whole_provision,
                    chunk_ids=list(p.chunk_ids),
                    tokens=p.tokens,
                    text=p.text,
                )  # fmt: skip
                for p in bundle.pieces
            ],
        ),
        timings_ms={**result.timings, "bundle": bundle.ms},
        cache_hits={**result.cache_hits, "document_fetches": bundle.fetches},
        warnings=[DebugWarning(code=c, message=m) for c, m in result.warnings],
    )
