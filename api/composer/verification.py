"""Check an answer before it is final.

- AttributionGate: every paragraph of the answer carries at least one [n] marker of a source it was given, and
  an answer cites at least two sources when it was given two or more that are relevant enough to quote.
- QuoteVerifier: every quoted span of 8 or more words occurs verbatim (spacing aside) in a cited provision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from api.schemas.events import Citation

from .citations import MARKER

MIN_QUOTE_WORDS = 8
_QUOTED = re.compile(r"[“\"]([^”\"]{10,}?)[”\"]")


def _normal(text: str) -> str:
    return " ".join(text.replace("’", "'").replace("“", '"').replace("”", '"').split()).lower()


@dataclass(slots=True)
class Verification:
    quotes_checked: int = 0
    quotes_failed: list[str] = field(default_factory=list)
    uncited_paragraphs: int = 0
    unknown_markers: list[int] = field(default_factory=list)
    too_few_sources: bool = False

    @property
    def passed(self) -> bool:
        return not (self.quotes_failed or self.uncited_paragraphs or self.unknown_markers or self.too_few_sources)

    def summary(self) -> dict[str, int]:
        return {
            "quotes_checked": self.quotes_checked,
            "quotes_failed": len(self.quotes_failed),
            "uncited_paragraphs": self.uncited_paragraphs,
            "unknown_markers": len(self.unknown_markers),
            "too_few_sources": int(self.too_few_sources),
        }


def verify_answer(
    answer: str, offered: Mapping[int, Citation], provisions: Mapping[str, str], relevant_sources: int = 1
) -> Verification:
    """``offered``: citations by marker; ``provisions``: section id -> full provision text to check quotes in;
    ``relevant_sources``: how many distinct provisions the evidence held that were judged relevant."""
    result = Verification()
    cited_sections = {offered[int(m)].section_id for m in MARKER.findall(answer) if int(m) in offered}
    result.too_few_sources = relevant_sources >= 2 and len(cited_sections) < 2
    for paragraph in (p for p in re.split(r"\n\s*\n", answer) if p.strip()):
        markers = [int(m) for m in MARKER.findall(paragraph)]
        result.unknown_markers += [m for m in markers if m not in offered]
        cited = [offered[m] for m in markers if m in offered]
        if not cited and len(paragraph.split()) >= MIN_QUOTE_WORDS:
            result.uncited_paragraphs += 1
        sources = [_normal(provisions.get(c.section_id, c.quote)) for c in cited] or [
            _normal(provisions.get(c.section_id, c.quote)) for c in offered.values()
        ]
        for span in _QUOTED.findall(paragraph):
            if len(span.split()) < MIN_QUOTE_WORDS:
                continue
            result.quotes_checked += 1
            if not any(_normal(span) in source for source in sources):
                result.quotes_failed.append(span)
    return result
