"""Synthesis with a chat model: stream its tokens, and send each citation when the model first uses its marker."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from api.errors import UpstreamLLMError
from api.schemas.events import Citation
from api.tools.context import ContextBundle

from .citations import CitationTracker, make_citation
from .skills import Skill

log = logging.getLogger(__name__)
ABSTAIN_PHRASE = "could not find this in the documents"


def source_citations(bundle: ContextBundle) -> list[Citation]:
    """One citation per context piece: the provision (or the merged spans of it) the model is shown as [n]."""
    return [make_citation(piece.index, piece.chunk, piece.text) for piece in bundle.pieces]


def render_sources(citations: Sequence[Citation]) -> str:
    return "\n\n".join(
        f"[{c.index}] {c.title}, {c.section}" + (f" ({c.heading})" if c.heading else "") + f"\n{c.quote}"
        for c in citations
    )


async def stream_llm_answer(
    llm: BaseChatModel,
    skill: Skill,
    question: str,
    history: str,
    tracker: CitationTracker,
) -> dict[str, int]:
    """Stream the model's answer through ``tracker``; return token usage. Raises UpstreamLLMError on failure."""
    system, user = skill.render(
        question=question, sources=render_sources(list(tracker.available.values())), history=history or "(none)"
    )
    usage: dict[str, int] = {}
    try:
        async for chunk in llm.astream([SystemMessage(system), HumanMessage(user)]):
            if isinstance(chunk.content, str) and chunk.content:
                tracker.feed(chunk.content)
            meta = getattr(chunk, "usage_metadata", None)
            if meta:
                for key in ("input_tokens", "output_tokens", "total_tokens"):
                    usage[key] = usage.get(key, 0) + int(meta.get(key, 0))
    except Exception as exc:  # the OpenAI SDK and httpx raise many types; all mean the endpoint failed us
        log.warning("LLM call failed after %d chars: %r", len(tracker.text), exc)
        raise UpstreamLLMError(f"the language model failed ({type(exc).__name__})") from exc
    usage["llm_calls"] = 1
    return usage


def is_abstention(text: str) -> bool:
    return ABSTAIN_PHRASE in text.lower()
