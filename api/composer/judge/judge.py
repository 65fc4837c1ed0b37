"""One seam for judging a claim: a sentence and the provision it cites in, a verdict out.

``ClaimJudge`` is what the gate (``api.composer.judge.gate.SentenceGate``) asks about each sentence and each
provision it may rest on. ``RulesJudge``, the default, is the hand-written rules (``api.composer.judge.rules``:
facts, meaning coverage, polarity, topic); a cross-encoder or the configured chat model takes its place behind the
same Protocol (``api.composer.judge.learned``), chosen by ``Settings.gate.judge``, with the rules' hard checks
(facts, topic) applied on top.

A judge that is ``blocking`` (it runs a model) is called in a worker thread; a judge with ``for_answer`` is given a
fresh per-answer copy (its call budget) by each gate.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel

from api.errors import ConfigError
from api.settings import GateSettings

from ..skills import Skill
from ..structured import ask_json
from .learned import Ask, CrossEncoderJudge, LLMJudge
from .rules import RulesJudge, Support
from .topic import Topic

Reason = Literal["missing_fact", "opposite_meaning", "dropped_condition", "off_topic", "too_little"]
JudgeName = Literal["rules", "cross_encoder", "llm"]


class ClaimJudge(Protocol):
    blocking: bool
    """Whether a call may take long (a model runs): the gate then calls it off the event loop."""

    def judge(self, sentence: str, provision: str, *, topic: Topic, identity: str = "", heading: str = "") -> Support:
        """Whether ``provision`` supports ``sentence`` (a claim about the law, written for a question whose topic
        words are ``topic``): the verdict, its score, the span that supports it, and what is wrong if not."""
        ...


def reasons(verdict: Support) -> tuple[Reason, ...]:
    """Why a verdict is not "supported", in the seam's terms."""
    found: list[Reason] = []
    if verdict.missing:
        found.append("missing_fact")
    if verdict.opposite:
        found.append("opposite_meaning")
    if verdict.dropped:
        found.append("dropped_condition")
    if verdict.off_topic:
        found.append("off_topic")
    if verdict.score < verdict.threshold:
        found.append("too_little")
    return tuple(found)


def build_claim_judge(cfg: GateSettings, ask: Ask | None = None) -> ClaimJudge:
    """The judge ``cfg.judge`` names. ``ask``: one call of the ``judge`` skill to the configured model (None without
    one); the LLM judge is built on the running event loop, which owns the model's HTTP client."""
    match cfg.judge:
        case "rules":
            return RulesJudge()
        case "cross_encoder":
            if not cfg.cross_encoder_path:
                raise ConfigError("gate.judge 'cross_encoder' needs gate.cross_encoder_path (a local model folder)")
            return CrossEncoderJudge(Path(cfg.cross_encoder_path), cfg.cross_encoder_threshold)
        case "llm":
            if ask is None:
                raise ConfigError("gate.judge 'llm' needs a model: set llm.backend to 'openai' (docs/configuration.md)")
            return LLMJudge(ask, asyncio.get_running_loop(), cfg.llm_max_calls, cfg.llm_timeout_s)


def llm_asker(llm: BaseChatModel, skill: Skill, timeout_s: float, attempts: int) -> Ask:
    """One call of the ``judge`` skill through the structured-call path (its timeout, retries and parsing)."""

    async def ask(values: dict[str, str]) -> dict[str, Any] | None:
        result, _ = await ask_json(llm, skill, timeout_s, attempts, values)
        return result

    return ask
