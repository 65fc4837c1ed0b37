"""Multiple-choice questions: find the choices, research the question without them, then weigh each choice against
the cited evidence. Pure functions; the model's selection (``skills/choose.md``) is checked here too."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from api.composer.support import SUPPORT_THRESHOLD, WINDOW_UNITS, content_terms, missing_facts, provision_units
from api.schemas.events import ChoiceReason, MultipleChoice

LETTERS = string.ascii_uppercase
MAX_CHOICES = 8
_BLOCK = re.compile(r"\n?\s*(?:answer\s+)?(?:choices|options)\s*:\s*", re.I)
_PARAGRAPH = re.compile(r"\s+(?=\((?:[a-z]|[ivx]{1,4})\)\s)")
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


def _units(text: str) -> list[tuple[int, int]]:
    """The provision's sentences and numbered items, each cut again before its lettered or roman paragraphs, so a
    window can hold one paragraph's rule without its neighbour's."""
    units = []
    for start, end in provision_units(text) or [(0, len(text))]:
        for match in _PARAGRAPH.finditer(text, start, end):
            if text[start : match.start()].strip():
                units.append((start, match.start()))
            start = match.end()
        if text[start:end].strip():
            units.append((start, end))
    return units


def _judge(topic: set[str], choice: str, text: str) -> tuple[bool, float]:
    """Whether one window of ``text`` (up to ``WINDOW_UNITS`` consecutive units) states the choice, and how well
    the best window matches it: the mean of the share of the choice's content words and of the question's found
    there. A choice is read with the question: its facts must occur where the provision deals with what was
    asked, not anywhere in it (a period of prescription for judgment debts is not the one for other debts)."""
    wanted = content_terms(choice)
    units = _units(text)
    unit_terms = [content_terms(text[a:b]) for a, b in units]
    best = (False, 0.0)
    for i in range(len(units)):
        window: set[str] = set()
        for j in range(i, min(i + WINDOW_UNITS, len(units))):
            window |= unit_terms[j]
            covered = len(wanted & window) / len(wanted) if wanted else 1.0
            on_topic = len(topic & window) / len(topic) if topic else covered
            key = (covered >= SUPPORT_THRESHOLD, (covered + on_topic) / 2)
            if key > best and (not key[0] or not missing_facts(choice, text[units[i][0] : units[j][1]])):
                best = key
            elif key[0] and (False, key[1]) > best:
                best = (False, key[1])  # the words are there but not its facts: a near miss, never support
    return best


def by_evidence(question: str, choices: Sequence[str], evidence: Mapping[int, str]) -> MultipleChoice:
    """Pick without a model: each choice, read with the question, against each cited provision (see ``_judge``).
    The best-supported choice wins, and the confidence is its margin over the runner-up (low when two are
    supported, or none)."""
    topic = content_terms(question)
    reasons: list[ChoiceReason] = []
    scores: list[float] = []
    for i, choice in enumerate(choices):
        best_index, best = 0, (False, 0.0)
        for index, text in evidence.items():
            judged = _judge(topic, choice, text)
            if judged > best:
                best_index, best = index, judged
        supported, score = best
        missing = ", ".join(missing_facts(choice, evidence[best_index])) if evidence and not supported else ""
        if supported:
            reason = f"[{best_index}] states it"
        elif missing:
            reason = f"the cited provisions do not state {missing}"
        else:
            reason = "the cited provisions do not say this"
        reasons.append(ChoiceReason(letter=LETTERS[i], text=choice, supported=supported, reason=reason,
                                    citations=[best_index] if supported else []))  # fmt: skip
        scores.append(score + (1.0 if supported else 0.0))
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
