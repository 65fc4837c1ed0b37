"""What the query graph's nodes use besides state: built once at start-up and passed as the graph's context."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from api.composer.judge.judge import ClaimJudge
from api.composer.judge.rules import RulesJudge
from api.composer.skills import Skill
from api.composer.structured import LLMCall, TimeoutPause, ask_json
from api.settings import Settings
from api.tools.context import ContextBundler
from api.tools.corpus import Corpus
from api.tools.llm import ChatStream
from api.tools.memory import AnswerMemory
from api.tools.retrieval import HybridRetriever

from .evidence import EvidenceJudge
from .state import Complexity


@dataclass(frozen=True, slots=True)
class QueryDeps:
    """Everything nodes may use besides state, built once at start-up and passed as the graph's context."""

    settings: Settings
    corpus: Corpus
    retriever: HybridRetriever
    bundler: ContextBundler
    llm: BaseChatModel | None
    """Structured calls (JSON mode); None: no model configured, answers are extractive."""
    chat: ChatStream | None
    """The streamed answer, on the same endpoint and model as ``llm``."""
    skills: dict[str, Skill]
    memory: AnswerMemory
    judge: EvidenceJudge | None = None
    """Decides from the evidence whether the corpus answers a question (a fitted model); None: not judged."""
    pauses: TimeoutPause = field(default_factory=lambda: TimeoutPause(after=0, pause_s=60.0))
    claims: ClaimJudge = field(default_factory=RulesJudge)
    """Judges whether a cited provision supports a sentence of an answer (``Settings.gate.judge``)."""
    """Skills not asked for now because their calls keep running out of time (by default never paused)."""

    def llm_calls_left(self, complexity: Complexity, made: Sequence[LLMCall]) -> int:
        """The question's LLM budget (larger for multi-hop questions) less the calls ``made``; 0 without a model."""
        if self.llm is None:
            return 0
        cfg = self.settings.llm
        limit = cfg.max_calls_multi_hop if complexity == "multi_hop" else cfg.max_calls_simple
        return limit - len(made)

    async def ask(
        self,
        skill: str,
        complexity: Complexity,
        made: Sequence[LLMCall],
        timeout_s: float | None = None,
        reserve: int = 1,
        **values: str,
    ) -> tuple[dict[str, Any] | None, list[LLMCall]]:
        """One structured call within the budget, leaving ``reserve`` calls (by default one, for the answer itself):
        its JSON object (None on any failure, or when the budget is spent) and the new call record (none when no
        call was made)."""
        if self.llm is None or self.llm_calls_left(complexity, made) <= reserve:
            return None, []
        if self.pauses.paused(skill):
            return None, []  # what its timeout would have given, without the wait
        cfg = self.settings.llm
        result, call = await ask_json(
            self.llm, self.skills[skill], timeout_s or cfg.call_timeout_s, cfg.call_attempts, values
        )
        self.pauses.record(skill, call["outcome"])
        return result, [call]
