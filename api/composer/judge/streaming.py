"""Verified streaming: hold a model's answer until each sentence is complete, check it, and send only what passes.

The model's text is read as it arrives. Once a sentence is complete (the next one has begun, or the model has
stopped), the gate (``SentenceGate``) judges it against the provisions it cites; a sentence that passes goes out as
``token`` events with its ``citation`` events, its markers those of the provisions that support it; one that fails is
never sent. A sentence that states nothing about the law ("Here is what the Act says:", "This is not legal advice.")
or only says where the answer is ("This is stated in section 3 [1].") waits for the next sentence that passes: sent
before a claim that fails, it could stand alone in front of an answer that then comes from the quotes instead.
A rule stated without its condition waits the same way, and goes out (just before it) only if the next sentence
passes and states the condition (``gate.condition_follows``). While a sentence is held, one ``status`` event
(``checking``) says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from pydantic import BaseModel

from api.schemas.events import Citation, StatusEvent
from api.text.sentences import open_quotation, sentence_spans

from ..citations import CitationTracker, Emit
from .gate import (
    GateResult,
    SentenceCheck,
    SentenceGate,
    abstains_aside,
    after_removed,
    complete_sentences,
    condition_follows,
    only_points,
    passes,
)


class GateProgress(BaseModel):
    """Written to the stream (never sent to a client) after each sentence is judged: the verification summary of the
    answer so far. A question cut short by its deadline reports it for what was sent, every word of which passed."""

    summary: dict[str, int]


class GatedTracker:
    """Takes the model's text as ``CitationTracker`` does (``feed``, ``text``, ``available``), but sends a sentence
    only once the gate has passed it. ``shown`` is what the reader has been sent; ``held`` the sentences that wait for
    a claim that passes (those that state nothing, and a rule whose condition the next sentence may state);
    ``checks`` every sentence judged so far."""

    def __init__(self, offered: Mapping[int, Citation], emit: Emit, gate: SentenceGate) -> None:
        self.available = dict(offered)
        self.gate = gate
        self.emit = emit
        self.text = ""
        """The model's text as written (what the stall watchdog watches and the gate's summary reads)."""
        self.out = CitationTracker([], emit)
        self.checks: list[SentenceCheck] = []
        self.held: list[SentenceCheck] = []
        self._judged = 0  # how much of ``text`` has been split into judged sentences
        self._separator = ""  # the whitespace after the last sentence sent: sent only before the next one
        self._checking = False
        self.judging = False
        """A model-backed judge is checking a sentence (the stall watchdog counts that as progress)."""

    @property
    def shown(self) -> str:
        return self.out.text

    @property
    def used(self) -> list[Citation]:
        return self.out.used

    def after(self, shown: str) -> None:
        """Sentences sent follow an answer already sent (``shown``): the first is set a paragraph below it."""
        if shown:
            self._separator = "\n\n"

    def feed(self, piece: str) -> None:
        """Take the next piece of the model's text; ``settle`` then judges and sends what it completed."""
        self.text += piece

    async def settle(self) -> None:
        """Judge the sentences the text so far has completed and send those that pass; say that what is left is
        being checked."""
        await self._judge(last=False)
        if not self._checking and self.text[self._judged :].strip():
            self._checking = True
            self.emit(StatusEvent(stage="checking"))

    def flush(self) -> None:
        self.out.flush()

    async def close(self, finished: bool) -> None:
        """The model has stopped: judge what is left. ``finished``: it ended its answer (else it was cut short, and
        a sentence it had not finished is dropped unjudged)."""
        start = self._judged
        rest = self.text[start:]
        if not finished:
            rest = complete_sentences(rest)
        self._judged = len(self.text)
        await self._judge_spans(sentence_spans(rest), start)
        self.out.flush()

    async def _judge(self, last: bool) -> None:
        rest = self.text[self._judged :]
        spans = sentence_spans(rest)
        if not last:
            # The last piece may go on; a sentence is complete once text that is not its marker follows it, and it
            # does not end inside a quotation the text may still close (closed, the quotation is one statement).
            opened = open_quotation(rest)
            spans = [s for s in spans if rest[s[2] :].strip() and not rest[s[2] :].lstrip().startswith("[")
                     and (opened is None or s[2] <= opened)]  # fmt: skip
        if spans:
            start = self._judged
            self._judged += spans[-1][2]
            await self._judge_spans(spans, start)

    async def _judge_spans(self, spans: list[tuple[str, str, int]], offset: int) -> None:
        # ``text`` only grows, so what was complete stays as judged while a model-backed judge runs in a worker thread.
        context = self.text
        for sentence, separator, end in spans:
            if self.gate.blocking:
                self.judging = True
                try:
                    check = await asyncio.to_thread(self.gate.judge, sentence, separator, context[: offset + end])
                finally:
                    self.judging = False
            else:
                check = self.gate.judge(sentence, separator, context[: offset + end])
            condition_follows(check, self.checks[-1] if self.checks else None)
            after_removed(check, self.checks[-1] if self.checks else None)
            self.checks.append(check)
            self.emit(GateProgress(summary=GateResult(self.checks, "", []).summary()))
            if not check.claim or (passes(check) and only_points(check)) or check.pending is not None:
                # States nothing, or only where the answer is, or a rule whose condition the next sentence may
                # state: waits for a claim that passes (and is sent before it only if it passes by then).
                self.held.append(check)
            elif passes(check):
                for waiting in self.held:
                    if passes(waiting) and not abstains_aside(waiting):
                        self._send(waiting)
                self.held = []
                self._send(check)
                self.out.flush()
                self._checking = False

    def _send(self, check: SentenceCheck) -> None:
        for index in check.cited:
            if index not in self.out.available:
                self.out.available[index] = self.gate.citation(check, index)
        self.out.feed(self._separator + self.gate.shown(check))
        self._separator = check.separator
