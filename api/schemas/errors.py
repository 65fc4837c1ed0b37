"""The service's error format: every 4xx and 5xx body (``api.errors`` names the codes)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Problem(BaseModel):
    field: str = Field(description="Where the problem is, e.g. 'q' or 'date_to' ('body' for the whole body).")
    problem: str


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable name, e.g. 'bad_request', 'too_many_requests'.")
    message: str = Field(description="Plain words for a person; never a traceback.")
    details: list[Problem] | None = Field(None, description="Each invalid input, for 422.")


class ErrorResponse(BaseModel):
    error: ErrorDetail


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries saying these statuses answer in the error format."""
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
    return {status: {"description": DESCRIPTIONS[status], "content": content} for status in statuses}


DESCRIPTIONS = {
    400: "The request body is not valid JSON.",
    401: "No valid access token.",
    403: "A valid token without the needed role.",
    404: "No such document, provision or answer to resume for this caller, or a feature not set up.",
    413: "The request body is over the size limit.",
    422: "The question or a filter is not valid.",
    429: "Over the rate limit or the concurrent-answer limit; see Retry-After.",
    502: "A store or model failed.",
    503: "No corpus ingested yet, a backend still starting, or the shared state (Redis) unavailable.",
}
