"""Query requests."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, field_validator

MAX_QUESTION_CHARS = 2000
DATE_PATTERN = r"^\d{4}(-\d{2}(-\d{2})?)?$"
FILTER_NAMES = ("jurisdiction", "doc_type", "law_id", "date_from", "date_to")


class QueryRequest(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain language.")
    session_id: str = Field("default", min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")
    jurisdiction: str | None = Field(None, max_length=16, description="Only this jurisdiction, e.g. 'ZW'.")
    doc_type: str | None = Field(None, max_length=32, description="Only this kind of document, e.g. 'act'.")
    law_id: str | None = Field(None, max_length=256, description="Only this document, e.g. 'zw/act/2022/1'.")
    date_from: str | None = Field(None, pattern=DATE_PATTERN, description="Dated on or after: YYYY[-MM[-DD]].")
    date_to: str | None = Field(None, pattern=DATE_PATTERN, description="Dated on or before: YYYY[-MM[-DD]].")
    choices: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list, max_length=8,
        description="Answer choices of a multiple-choice question (lettered A, B, … in order); the question is "
        "researched without them, then the best-supported choice is picked.",
    )  # fmt: skip

    def filters(self) -> dict[str, str]:
        return {name: value for name in FILTER_NAMES if (value := getattr(self, name))}

    @field_validator("q")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the question is empty")
        return value
