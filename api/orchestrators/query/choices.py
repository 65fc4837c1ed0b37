"""Multiple-choice questions: find the choices, research the question without them, then weigh each choice against
the cited evidence. Pure functions; the model's selection (``skills/choose.md``) is checked here too."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from api.composer.judge.rules import support
from api.schemas.events import ChoiceReason, MultipleChoice

LETTERS = string.ascii_uppercase
MAX_CHOICES = 8
_BLOCK = re.compile(r"\n?\s*(?:answer\s+)?(?:choices|options)\s*:\s*", re.I)
_ITEM = re.compile(r"(?:^|\n|\s)\(?([A-Ha-h])[).:]\s+(.+?)(?=(?:\n|\s)\(?[A-Ha-h][).:]\s+|\Z)", re.S)


def split_choices(text: str) -> tuple[str, list[str]]:
    """The question without an "Answer choices:" block, and the choices in it (none when there is no such block, or
    fewer than two lettered items in it)."""
    match = _BLOCK.search(text)
    if match is None:
        return text, []
    items = [" ".join(body.split()) for _, body in _ITEM.findall(text[match.end() :])]
    items = [i for i in items if i][:MAX_CHOICES]
    if len(items) < 2:
        return text, []
    return text[: match.start()].strip(), items


def render_choices(choices: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))


def by_evidence(question: str, choices: Sequence[str], evidence: Mapping[int, str]) -> MultipleChoice:
    """Pick without a model: each choice (read with the question) against each cited provision; a choice is
    supported when a provision states its facts and enough of its meaning. The best-supported choice wins, and the
    confidence is its margin over the runner-up (low when two are supported, or none)."""
    reasons: list[ChoiceReason] = []
    scores: list[float] = []
    for i, choice in enumerate(choices):
        best_index, best_score, best_supported, missing, flipped = 0, 0.0, False, "", False
        for index, text in evidence.items():
            found = support(choice, text)
            key = (found.supported, found.score)
            if key > (best_supported, best_score):
                best_index, best_score, best_supported = index, found.score, found.supported
                missing, flipped = ", ".join(found.missing), found.opposite
        if best_supported:
            reason = f"[{best_index}] states it"
        elif flipped:
            reason = f"[{best_index}] says the opposite"
        elif missing:
            reason = f"the cited provisions do not state {missing}"
        else:
            reason = "the cited provisions do not say this"
        reasons.append(ChoiceReason(letter=LETTERS[i], text=choice, supported=best_supported, reason=reason,
                                    citations=[best_index] if best_supported else []))  # fmt: skip
        scores.append(best_score + (1.0 if best_supported else 0.0))
    ranked = sorted(range(len(choices)), key=lambda k: -scores[k])
    if not ranked or not reasons[ranked[0]].supported:
        return MultipleChoice(letter="", confidence=0.0, method="evidence", choices=reasons)
    top = scores[ranked[0]]
    runner = scores[ranked[1]] if len(ranked) > 1 else 0.0
    confidence = round(max(0.0, min(1.0, (top - runner) / 2 + 0.5 if runner >= 1.0 else 0.5 + (top - runner) / 4)), 2)
    return MultipleChoice(letter=LETTERS[ranked[0]], confidence=confidence, method="evidence", choices=reasons)


def from_model(reply: Mapping[str, Any] | None, choices: Sequence[str], cited: Sequence[int]) -> MultipleChoice | None:
    """The model's selection, when it is well formed: a known letter, a reason per choice, and only markers of the
    citations the answer used; None otherwise (the evidence path decides instead)."""
    if reply is None:
        return None
    letter = str(reply.get("letter") or "").strip().upper()[:1]
    given = {str(r.get("letter", "")).strip().upper()[:1]: r for r in reply.get("reasons", []) if isinstance(r, dict)}
    letters = LETTERS[: len(choices)]
    if letter not in letters or set(given) != set(letters):
        return None
    reasons = []
    for i, choice in enumerate(choices):
        item = given[letters[i]]
        markers = [int(m) for m in item.get("citations", []) if str(m).isdigit() and int(m) in cited]
        reasons.append(ChoiceReason(letter=letters[i], text=choice, supported=bool(item.get("supported")),
                                    reason=str(item.get("reason") or "")[:300], citations=markers))  # fmt: skip
    chosen = reasons[letters.index(letter)]
    if not chosen.supported or not chosen.citations:
        return None  # a choice the model cannot point to evidence for is not an answer
    confidence = reply.get("confidence")
    sure = float(confidence) if isinstance(confidence, int | float) and 0 <= confidence <= 1 else 0.5
    return MultipleChoice(letter=letter, confidence=round(sure, 2), method="model", choices=reasons)


def choice_text(choice: MultipleChoice) -> str:
    """The selection as it is added to the answer: the letter (or that none is supported), then a reason per choice."""
    lines = []
    if choice.letter:
        picked = next(c for c in choice.choices if c.letter == choice.letter)
        lines.append(f"Answer: {choice.letter}. {picked.text} (confidence {choice.confidence:.2f})")
    else:
        lines.append("Answer: none of the choices is supported by the provisions found.")
    for reason in choice.choices:
        marks = "".join(f"[{m}]" for m in reason.citations)
        shown = f" {marks}" if marks and marks not in reason.reason else ""
        lines.append(f"- {reason.letter}: {reason.reason}{shown}")
    return "\n".join(lines)
