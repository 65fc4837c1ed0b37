"""Query requests: one set of models for the POST body, the GET stream's query string and the debug router.

FastAPI reads a Pydantic model from the query string (``Annotated[QueryRequest, Query()]``), so every constraint is
declared once, here, and GET and POST validate alike: a question of only spaces or control characters, a date that
does not exist (2024-02-30, full-width digits) or a ``date_from`` after ``date_to`` is a 422 in the service's error
format, whichever way it comes in.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationInfo, field_validator

MAX_QUESTION_CHARS = 2000
# ASCII digits only: a regex's \d also matches full-width and other scripts' digits.
# Years 0001-9999, months 01-12, days 01-31: what the schema can say; the validator also refuses days a month lacks.
DATE_PATTERN = r"^([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?$"
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:-]+$"
FILTER_NAMES = ("jurisdiction", "doc_type", "law_id", "date_from", "date_to", "as_of")
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"
"""A filter value names a document or a kind of one: no control characters (they have no place in an id)."""
_DATE = re.compile(DATE_PATTERN)


def clean_question(value: str) -> str:
    """The question with control and format characters turned into spaces, trimmed; an error if nothing is left."""
    cleaned = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") else ch for ch in value)
    cleaned = cleaned.strip()
    if not cleaned:
        raise ValueError("the question is empty")
    return cleaned


def date_bounds(value: str) -> tuple[dt.date, dt.date]:
    """The first and last day a YYYY, YYYY-MM or YYYY-MM-DD date covers; ValueError if it is not a real date."""
    if not _DATE.match(value):
        raise ValueError("must be a date as YYYY, YYYY-MM or YYYY-MM-DD")
    parts = [int(p) for p in value.split("-")]
    try:
        if len(parts) == 3:
            day = dt.date(*parts)
            return day, day
        year = parts[0]
        first_month, last_month = (parts[1], parts[1]) if len(parts) == 2 else (1, 12)
        first = dt.date(year, first_month, 1)
        return first, dt.date(year, last_month, calendar.monthrange(year, last_month)[1])
    except ValueError:
        raise ValueError(f"{value} is not a real date") from None


def _real_date(value: str | None) -> str | None:
    if value is not None:
        date_bounds(value)
    return value


Question = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain language."),
    AfterValidator(clean_question),
]
DateFilter = Annotated[str | None, Field(pattern=DATE_PATTERN), AfterValidator(_real_date)]
DAY_PATTERN = r"^([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
_DAY = re.compile(DAY_PATTERN)


def _a_day(value: object) -> object:
    """A clear message for what is not a day as YYYY-MM-DD (before the schema's pattern, whose regex says less)."""
    if isinstance(value, str) and not _DAY.match(value):
        raise ValueError(f"{value[:40]!r} is not a day as YYYY-MM-DD (ASCII digits), e.g. 2019-06-01")
    return value


Day = Annotated[str | None, Field(pattern=DAY_PATTERN), BeforeValidator(_a_day), AfterValidator(_real_date)]
"""One real day as YYYY-MM-DD (ASCII digits)."""


class QueryFilters(BaseModel):
    """Metadata filters, pushed into both search backends."""

    jurisdiction: str | None = Field(
        None, max_length=16, pattern=PRINTABLE, description="Only this jurisdiction, e.g. 'ZW'."
    )
    doc_type: str | None = Field(
        None, max_length=32, pattern=PRINTABLE, description="Only this kind of document, e.g. 'act'."
    )
    law_id: str | None = Field(
        None, max_length=256, pattern=PRINTABLE, description="Only this document, e.g. 'zw/act/2022/1'."
    )
    date_from: DateFilter = Field(None, description="Dated on or after: YYYY[-MM[-DD]], a real date.")
    date_to: DateFilter = Field(None, description="Dated on or before: YYYY[-MM[-DD]], not before date_from.")
    as_of: Day = Field(
        None,
        description="The law as it stood on this day (YYYY-MM-DD): only documents in force then are searched "
        "(commenced on or before it and not repealed before it; a document whose dates are not known is searched), and "
        "of two versions of one law the one in force then is quoted. Without it, the versions in force today are "
        "preferred.",
    )
    choices: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        default_factory=list, max_length=8,
        description="Answer choices of a multiple-choice question (lettered A, B, … in order); the question is "
        "researched without them, then the best-supported choice is picked.",
    )  # fmt: skip

    def filters(self) -> dict[str, str]:
        return {name: value for name in FILTER_NAMES if (value := getattr(self, name))}

    @field_validator("date_to")
    @classmethod
    def _not_before_date_from(cls, value: str | None, info: ValidationInfo) -> str | None:
        start = info.data.get("date_from")
        if value is not None and start and date_bounds(start)[0] > date_bounds(value)[1]:
            raise ValueError(f"date_to ({value}) is before date_from ({start})")
        return value


class QueryRequest(QueryFilters):
    """A question for the streaming endpoint (the POST body, or the GET query string)."""

    q: Question
    session_id: str = Field(
        "default", min_length=1, max_length=128, pattern=SESSION_ID_PATTERN,
        description="Turns of one conversation share a session id (kept apart per caller).",
    )  # fmt: skip


class RetrievalProbe(QueryFilters):
    """A query for the debug router: retrieval only, with its stages shown."""

    q: Question
    top_k: int = Field(
        6,
        ge=1,
        le=50,
        description="Final hits to return: the first top_k chunks, and (with retrieval.section_chunks above 0) the "
        "best chunks of further provisions after them, up to twice as many in all.",
    )
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
