"""Query requests."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

MAX_QUESTION_CHARS = 2000


class QueryRequest(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain language.")
    session_id: str = Field("default", min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")

    @field_validator("q")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the question is empty")
        return value
