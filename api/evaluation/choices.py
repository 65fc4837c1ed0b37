"""Multiple-choice evaluation: ask each question with its choices through the orchestrator and score the letter.

A question file is JSONL, one object per line::

    {"id", "question", "choices": [...], "answer": "B", "gold": [{"law_id", "section"}], "kind", "form"}

``form`` is ``"list"`` (the choices go in the request's ``choices``) or ``"text"`` (the question already ends with an
"Answer choices:" block, which must parse to ``choices``, and is sent as it is). The report gives accuracy, accuracy
by confidence band (is "how sure" calibrated?), "cannot tell" (no choice supported), abstentions, whether a gold
provision was cited, time per question, and the same by kind and by form; then one row per question.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from api.evaluation.core import section_unit
from api.orchestrators.query.choices import LETTERS, MAX_CHOICES, split_choices
from api.schemas.events import ErrorEvent, FinalEvent
from api.schemas.query import QueryRequest
from api.services import Services

BANDS = (0.0, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Confidence band edges: [0, 0.6), [0.6, 0.7), …, [0.9, 1.0]."""
FORMS = ("list", "text")


@dataclass(frozen=True, slots=True)
class ChoiceQuestion:
    qid: str
    question: str
    choices: tuple[str, ...]
    answer: str
    gold: frozenset[str]
    kind: str
    form: str


@dataclass(frozen=True, slots=True)
class ChoiceOutcome:
    """What the pipeline did with one question."""

    question: ChoiceQuestion
    letter: str
    """The chosen letter; empty when no choice was supported (or the run failed)."""
    confidence: float
    method: str
    abstained: bool
    """The research itself abstained (nothing found that answers the question)."""
    cited_gold: bool
    """A gold provision is among the answer's citations."""
    pick_on_gold: bool
    """The chosen letter's reason cites a gold provision."""
    cached: bool
    ms: float
    error: str = ""

    @property
    def correct(self) -> bool:
        return self.letter == self.question.answer


def load_choice_questions(path: Path) -> list[ChoiceQuestion]:
    """Read and check a multiple-choice file; a malformed line raises ValueError naming it."""
    questions = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            choices = tuple(str(c) for c in record["choices"])
            question = ChoiceQuestion(
                qid=str(record["id"]), question=str(record["question"]), choices=choices,
                answer=str(record["answer"]).strip().upper(),
                gold=frozenset(f"{g['law_id']}#{g['section']}" for g in record.get("gold", [])),
                kind=str(record.get("kind", "all")), form=str(record.get("form", "list")),
            )  # fmt: skip
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"line {number}: not a multiple-choice question ({exc!r})") from None
        if not 2 <= len(choices) <= MAX_CHOICES:
            raise ValueError(f"line {number}: {len(choices)} choices (2 to {MAX_CHOICES} allowed)")
        if question.answer not in LETTERS[: len(choices)]:
            raise ValueError(f"line {number}: answer {question.answer!r} is not one of the choices' letters")
        if question.form not in FORMS:
            raise ValueError(f"line {number}: form {question.form!r} is not one of {FORMS}")
        if question.form == "text" and split_choices(question.question)[1] != list(choices):
            raise ValueError(f"line {number}: the 'Answer choices:' block does not give the listed choices")
        questions.append(question)
    return questions


def request_for(question: ChoiceQuestion) -> QueryRequest:
    """The request a client would send: the choices listed, or left in the question's text."""
    choices = list(question.choices) if question.form == "list" else []
    return QueryRequest(q=question.question, choices=choices, session_id=f"eval-mc-{question.qid}")


async def evaluate_choices(services: Services, questions: Sequence[ChoiceQuestion]) -> list[ChoiceOutcome]:
    """Ask every question through the orchestrator, one at a time, and record the choice it made."""
    outcomes = []
    for question in questions:
        start = time.perf_counter()
        events = [e async for e in services.orchestrator.stream(request_for(question))]
        ms = (time.perf_counter() - start) * 1000
        final = events[-1]
        if not isinstance(final, FinalEvent):
            error = final.code if isinstance(final, ErrorEvent) else "no final event"
            outcomes.append(ChoiceOutcome(question, "", 0.0, "", False, False, False, False, ms, error))
            continue
        by_index = {c.index: section_unit(c.section_id) for c in final.citations}
        choice = final.choice
        picked = next((c for c in choice.choices if c.letter == choice.letter), None) if choice else None
        outcomes.append(
            ChoiceOutcome(
                question=question,
                letter=choice.letter if choice else "",
                confidence=choice.confidence if choice else 0.0,
                method=choice.method if choice else "",
                abstained=final.abstained,
                cited_gold=bool(question.gold & set(by_index.values())),
                pick_on_gold=bool(picked and question.gold & {by_index.get(i, "") for i in picked.citations}),
                cached=final.cached,
                ms=ms,
            )
        )
    return outcomes


def _share(a: int, b: int) -> str:
    return f"{a / b:.2f} ({a}/{b})" if b else "–"


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def band_of(confidence: float) -> int:
    """The index of the band a confidence falls in (1.0 goes in the top band)."""
    for i in range(len(BANDS) - 1):
        if confidence < BANDS[i + 1]:
            return i
    return len(BANDS) - 2


def calibration_error(outcomes: Sequence[ChoiceOutcome]) -> float:
    """Expected calibration error over the questions that got a letter: the gap between stated confidence and
    accuracy in each band, weighted by the band's size."""
    picked = [o for o in outcomes if o.letter]
    if not picked:
        return 0.0
    total = 0.0
    for i in range(len(BANDS) - 1):
        band = [o for o in picked if band_of(o.confidence) == i]
        if band:
            accuracy = sum(o.correct for o in band) / len(band)
            mean = sum(o.confidence for o in band) / len(band)
            total += len(band) * abs(accuracy - mean)
    return total / len(picked)


def _summary_row(name: str, group: Sequence[ChoiceOutcome]) -> str:
    n = len(group)
    picked = [o for o in group if o.letter]
    with_gold = [o for o in group if o.question.gold]
    cells = [
        name, str(n), _share(sum(o.correct for o in group), n), _share(sum(o.correct for o in picked), len(picked)),
        _share(n - len(picked), n), _share(sum(o.abstained for o in group), n),
        _share(sum(o.cited_gold for o in with_gold), len(with_gold)),
        _share(sum(o.pick_on_gold for o in picked if o.question.gold), len([o for o in picked if o.question.gold])),
        f"{_percentile([o.ms for o in group], 0.5):.0f}", f"{_percentile([o.ms for o in group], 0.95):.0f}",
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def choices_report(title: str, outcomes: Sequence[ChoiceOutcome], notes: Sequence[str]) -> str:
    """The Markdown report: summary by kind and form, calibration by confidence band, then every question."""
    lines = [f"# {title}", "", *notes, ""]
    chance = sum(1 / len(o.question.choices) for o in outcomes)
    lines += [
        f"- accuracy by chance: {chance / len(outcomes):.2f}" if outcomes else "- no questions",
        f"- expected calibration error (questions with a letter): {calibration_error(outcomes):.2f}",
        f"- errors (no final event): {sum(bool(o.error) for o in outcomes)}; answered from QA memory: "
        f"{sum(o.cached for o in outcomes)}",
        "",
        "| group | questions | accuracy | accuracy when a letter was given | cannot tell (no letter) "
        "| research abstained | cites a gold provision | the pick's reason cites gold | P50 ms | P95 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    groups: dict[str, list[ChoiceOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(f"kind: {outcome.question.kind}", []).append(outcome)
    for outcome in outcomes:
        groups.setdefault(f"form: {outcome.question.form}", []).append(outcome)
    for name in sorted(groups):
        lines.append(_summary_row(name, groups[name]))
    lines.append(_summary_row("all", outcomes))
    lines += ["", "## Confidence bands", "", "| stated confidence | questions with a letter | mean stated | accuracy |",
              "| --- | ---: | ---: | ---: |"]  # fmt: skip
    for i in range(len(BANDS) - 1):
        band = [o for o in outcomes if o.letter and band_of(o.confidence) == i]
        top = "]" if i == len(BANDS) - 2 else ")"
        mean = f"{sum(o.confidence for o in band) / len(band):.2f}" if band else "–"
        lines.append(f"| [{BANDS[i]:.1f}, {BANDS[i + 1]:.1f}{top} | {len(band)} | {mean} | "
                     f"{_share(sum(o.correct for o in band), len(band))} |")  # fmt: skip
    lines += ["", "## Every question", "",
              "| id | kind | form | right | picked | confidence | method | abstained | cites gold | ms |",
              "| --- | --- | --- | --- | --- | ---: | --- | --- | --- | ---: |"]  # fmt: skip
    for o in outcomes:
        picked = o.letter or ("error: " + o.error if o.error else "–")
        mark = "" if o.correct else " ✗"
        lines.append(f"| {o.question.qid} | {o.question.kind} | {o.question.form} | {o.question.answer} | "
                     f"{picked}{mark} | {o.confidence:.2f} | {o.method or '–'} | {'yes' if o.abstained else ''} | "
                     f"{'yes' if o.cited_gold else ''} | {o.ms:.0f} |")  # fmt: skip
    return "\n".join(lines) + "\n"
