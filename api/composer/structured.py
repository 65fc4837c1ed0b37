"""One small LLM call that answers with a JSON object: the guard, router, rewriter, planner, expander, grader and
replanner all go through here, so each gets the same timeout, retry, accounting and failure handling.

A call that fails, times out or answers something that is not the JSON object asked for returns None: every
caller has a deterministic path to fall back on, so an unreliable model slows answers down but never breaks them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from .skills import Skill

log = logging.getLogger(__name__)
_OBJECT = re.compile(r"\{.*\}", re.S)
RETRY_STATUSES = (429, 500, 502, 503, 504)
JSON_MODE = {"type": "json_object"}


LLMOutcome = Literal["ok", "timeout", "error", "unparsable"]


class LLMCall(TypedDict):
    """One call to the model (a structured call or the streamed answer): which skill, how long, its tokens, tries,
    and how it ended. Plain data, so the graph's checkpoints and ``final.usage`` take it as it is."""

    skill: str
    ms: float
    input_tokens: int
    output_tokens: int
    attempts: int
    outcome: LLMOutcome


class TimeoutPause:
    """Skills whose calls keep running out of time, paused: after ``after`` timeouts running, a skill is not asked for
    ``pause_s``; then one call may try again, and another timeout pauses it anew, while an answer in time resumes it.
    With a hosted model slower than a skill's limit (the router's 250 ms against a first token of 300 ms or more)
    every call only made the question wait its limit and paid for the prompt; a skipped call is the timeout's own
    fallback, at once. State of one process, shared by its questions."""

    def __init__(self, after: int, pause_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.after, self.pause_s, self.clock = after, pause_s, clock
        self._timeouts: dict[str, int] = {}
        self._until: dict[str, float] = {}

    def paused(self, skill: str) -> bool:
        """Whether ``skill`` is not to be asked now (a pause that has run out lets one call through)."""
        until, now = self._until.get(skill), self.clock()
        if until is None:
            return False
        if now >= until:
            self._until[skill] = now + self.pause_s  # its one try; the call's outcome decides what next
            return False
        return True

    def record(self, skill: str, outcome: LLMOutcome) -> None:
        if outcome != "timeout":
            if self._until.pop(skill, None) is not None:
                log.info("%s call did not run out of time: asked again", skill)
            self._timeouts.pop(skill, None)
            return
        count = self._timeouts[skill] = self._timeouts.get(skill, 0) + 1
        if self.after and count >= self.after:
            if skill not in self._until:
                log.warning("%s calls ran out of time %d times running: not asked for %.0f s", skill, count,
                            self.pause_s)  # fmt: skip
            self._until[skill] = self.clock() + self.pause_s


def parse_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply, tolerating code fences or a sentence around it."""
    match = _OBJECT.search(text)
    if not match:
        return None
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


async def ask_json(
    llm: BaseChatModel, skill: Skill, timeout_s: float, attempts: int, values: dict[str, str], backoff_s: float = 0.2
) -> tuple[dict[str, Any] | None, LLMCall]:
    """Render ``skill``, call the model (within ``timeout_s`` overall), and parse its JSON object: the object (None
    when the call failed, timed out or answered something else) and the call's record.

    Rate limits and server errors are retried with exponential backoff while time is left; a timeout is not retried.
    """
    system, user = skill.render(**values)
    result: dict[str, Any] | None = None
    outcome: LLMOutcome = "ok"
    tries = input_tokens = output_tokens = 0
    start = time.perf_counter()
    deadline = start + timeout_s
    delay = backoff_s
    while tries < attempts:
        tries += 1
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            outcome = "timeout"
            break
        try:
            # Not streamed: a whole JSON object is needed anyway, and a non-streamed response carries its token usage
            # on every OpenAI-compatible server (llama.cpp's reports none in streams). JSON mode keeps small models
            # to one parsable object.
            request = llm.ainvoke([SystemMessage(system), HumanMessage(user)], stream=False, response_format=JSON_MODE)
            message = await asyncio.wait_for(request, remaining)
        except TimeoutError:
            outcome = "timeout"
            break
        except Exception as exc:  # the SDK raises many types; all mean this call failed
            outcome = "error"
            log.warning("%s call failed (attempt %d): %r", skill.name, tries, exc)
            if _status(exc) in RETRY_STATUSES and time.perf_counter() + delay < deadline:
                await asyncio.sleep(delay)
                delay *= 2
                continue
            break
        usage = getattr(message, "usage_metadata", None) or {}
        input_tokens += int(usage.get("input_tokens", 0))
        output_tokens += int(usage.get("output_tokens", 0))
        content = message.content if isinstance(message.content, str) else ""
        result = parse_object(content)
        outcome = "ok" if result is not None else "unparsable"
        result = skill.scrub(result) if result is not None else None
        break
    ms = round((time.perf_counter() - start) * 1000, 2)
    if outcome != "ok":
        log.warning("%s call %s after %.0f ms", skill.name, outcome, ms)
    call = LLMCall(skill=skill.name, ms=ms, input_tokens=input_tokens, output_tokens=output_tokens, attempts=tries,
                   outcome=outcome)  # fmt: skip
    return result, call
