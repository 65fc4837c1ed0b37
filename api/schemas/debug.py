"""What the debug router returns: retrieval laid open, stage by stage (documented in the OpenAPI schema)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class StageCandidate(BaseModel):
    chunk_id: str
    score: float
    provision_id: str | None = Field(description="None when the chunk is no longer in the corpus.")


class DebugHit(BaseModel):
    chunk_id: str
    provision_id: str
    title: str
    score: float
    ranks: dict[str, int] = Field(description="The hit's rank in each stage that found it.")
    text: str


class DebugPiece(BaseModel):
    index: int = Field(description="The [n] the prompt labels it with.")
    provision_id: str
    section_id: str
    title: str
    whole_provision: bool
    chunk_ids: list[str]
    tokens: int
    text: str


class DebugBundle(BaseModel):
    tokens: int
    budget: int
    left_out: list[str] = Field(description="Chunk ids of hits whose provision did not fit the budget.")
    pieces: list[DebugPiece]


class DebugWarning(BaseModel):
    code: str
    message: str


class DebugRetrieval(BaseModel):
    """Every retrieval stage's candidates with scores, the final hits, the context bundle, timings, cache hits."""

    query: str
    corpus_version: str
    stages: dict[str, list[StageCandidate]]
    hits: list[DebugHit]
    bundle: DebugBundle
    timings_ms: dict[str, float]
    cache_hits: dict[str, int] = Field(description="Per cache: entries reused for this request.")
    warnings: list[DebugWarning]
