"""The final answer: what the reader is shown once the model's answer has been through the gate, never worse than
the quote-only (extractive) answer, and what the one corrective step searches for when it fails."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from api.schemas.events import Citation

from ..citations import find_references
from .gate import GateResult, substantive


@dataclass(frozen=True, slots=True)
class ExtractiveAnswer:
    """The extractive path's answer (verbatim quotes, verified by construction), or its abstention."""

    answer: str
    citations: list[Citation]
    abstained: bool


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    source: Literal["model", "model_trimmed", "extractive", "abstention"]
    answer: str
    citations: list[Citation]
    verified: bool
    abstained: bool
    warnings: tuple[tuple[str, str], ...] = ()


def corrective_query(gate: GateResult, question: str, max_words: int = 40) -> str:
    """What the corrective step searches for: the question, with the heading of the provision the first failed
    sentence cited (where the model looked). Never the failed sentence's own words: text the gate rejected is shown
    nowhere, and a search is listed in an abstention's "Searches run"."""
    failed = gate.failed
    heading = ""
    if failed and not failed[0].off_topic:  # off topic: the cited provision is the wrong one; search afresh
        cited = [*failed[0].markers, *failed[0].referenced]
        heading = next((h for i in cited if (h := gate.headings.get(i, ""))), "")
    words = question.split()
    asked = {w.strip(".,;:?!").lower() for w in words}
    extra = [w for w in heading.split() if w.strip(".,;:?!").lower() not in asked]
    return " ".join([*words, *extra][:max_words]) or question


_DANGLING = re.compile(r"\b(?:under|according to|in terms of|in|of|see)\s*(?=[,.;:]|$)", re.I)


def find_references_stripped(text: str) -> str:
    """``text`` without its natural citations (and the preposition left hanging), which only add noise to a search."""
    for reference in reversed(find_references(text)):
        text = text[: reference.start] + text[reference.end :]
    text = _DANGLING.sub("", text)
    return re.sub(r"\s+([,.;:])", r"\1", " ".join(text.split())).lstrip(",.;: ")


def choose_final(gate: GateResult | None, extractive: ExtractiveAnswer, abstention_text: str) -> FinalAnswer:
    """The answer to show once the model's answer has been through the gate (and its one corrective step).

    - passed: the model's answer, with the citations the gate attached;
    - failed but usable: the model's answer without the sentences that failed, with a warning;
    - either, when what passed only says where the answer is ("This is stated in section 3"): as below;
    - otherwise (or no model answer): the extractive answer with a warning — never an unverified answer, never blank;
      an extractive abstention becomes ``abstention_text`` when the extractive answer is empty.
    """
    fallback_text = extractive.answer.strip() or abstention_text
    fallback_abstained = extractive.abstained or not extractive.answer.strip()
    extractive_final = FinalAnswer(
        "abstention" if fallback_abstained else "extractive",
        fallback_text,
        [] if fallback_abstained else list(extractive.citations),
        True,
        fallback_abstained,
    )
    if gate is None:
        return extractive_final
    if gate.abstained and not gate.claims:
        if fallback_abstained:
            return FinalAnswer("abstention", gate.answer or abstention_text, [], True, True)
        note = ("model_abstained", "the model found no answer in the sources; the quoted provisions below are what "
                "the search found")  # fmt: skip
        return _with_warning(extractive_final, note)
    if gate.passed and gate.answer and substantive(gate):
        return FinalAnswer("model", gate.answer, gate.citations, True, False)
    if gate.usable and gate.answer and substantive(gate):
        note = ("statements_removed", f"{len(gate.failed)} statement(s) in the model's answer could not be matched to "
                "the provisions cited and were removed")  # fmt: skip
        return FinalAnswer("model_trimmed", gate.answer, gate.citations, True, False, (note,))
    note = ("model_answer_unverified", "the model's answer could not be verified against the sources; showing the "
            "provisions themselves instead")  # fmt: skip
    if fallback_abstained:
        note = ("model_answer_unverified", "the model's answer could not be verified against the sources")
    return _with_warning(extractive_final, note)


def _with_warning(final: FinalAnswer, warning: tuple[str, str]) -> FinalAnswer:
    return FinalAnswer(final.source, final.answer, final.citations, final.verified, final.abstained,
                       (*final.warnings, warning))  # fmt: skip
