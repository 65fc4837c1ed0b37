"""Compare provisions parsed from a file against the same law's sections in a section-structured JSONL corpus.

Used by the fidelity test and ``benchmarks/ingest_corpus.py``: for every section of the reference law, is a parsed
provision with the same number found, and how similar is its text (word 3-gram Jaccard after normalisation)?
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from api.schemas.documents import Document


def _grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(max(0, len(words) - 2))}


def similarity(a: str, b: str) -> float:
    ga, gb = _grams(a), _grams(b)
    return len(ga & gb) / len(ga | gb) if ga or gb else 1.0


@dataclass(frozen=True, slots=True)
class Fidelity:
    reference_sections: int
    found: int
    mean_similarity: float
    at_least_90: int

    @property
    def found_share(self) -> float:
        return self.found / self.reference_sections if self.reference_sections else 0.0


def compare(parsed: Document, reference: Document) -> Fidelity:
    by_number: dict[str, str] = {}
    for section in parsed.sections:
        if section.number and "~" not in section.section_id:
            by_number.setdefault(section.number, section.text)
    scores = []
    for section in reference.sections:
        if "~" in section.section_id:
            continue  # repeated refs (schedules) have no unambiguous counterpart
        text = by_number.get(section.number)
        scores.append(similarity(text, section.text) if text is not None else None)
    found = [s for s in scores if s is not None]
    return Fidelity(
        reference_sections=len(scores),
        found=len(found),
        mean_similarity=sum(found) / len(found) if found else 0.0,
        at_least_90=sum(s >= 0.9 for s in found),
    )
