"""Query requests."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

MAX_QUESTION_CHARS = 2000


class QueryRequest(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain language.")
    session_id: str = Field("default", min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")
    jurisdiction: str | None = Field(None, max_length=16, description="Only this jurisdiction, e.g. 'ZW'.")
    doc_type: str | None = Field(None, max_length=32, description="Only this kind of document, e.g. 'act'.")
    law_id: str | None = Field(None, max_length=256, description="Only this document, e.g. 'zw/act/2022/1'.")

    def filters(self) -> dict[str, str]:
        return {k: v for k, v in (("jurisdiction", self.jurisdiction), ("doc_type", self.doc_type),
                                  ("law_id", self.law_id)) if v}  # fmt: skip

    @field_validator("q")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the question is empty")
        return value
