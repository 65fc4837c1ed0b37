"""Synthesis with a chat model: stream its tokens, and send each citation when the model first uses its marker."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from api.errors import UpstreamLLMError
from api.schemas.events import Citation
from api.tools.context import ContextBundle
from api.tools.llm import ChatStream, TracedRun

from .citations import TextSink, make_citation
from .skills import Skill

log = logging.getLogger(__name__)
ABSTAIN_PHRASE = "could not find this in the documents"
CHARS_PER_TOKEN = 4.0


def source_citations(bundle: ContextBundle) -> list[Citation]:
    """One citation per context piece: the provision (or the merged spans of it) the model is shown as [n].

    The quote here is the whole piece, for the prompt; the CitationTracker sends only a verbatim span of it."""
    return [make_citation(piece.index, piece.chunk, piece.text) for piece in bundle.pieces]


def render_sources(citations: Sequence[Citation]) -> str:
    return "\n\n".join(
        f"[{c.index}] {c.title}, {c.section}" + (f" ({c.heading})" if c.heading else "") + f"\n{c.quote}"
        for c in citations
    )


async def stream_llm_answer(
    chat: ChatStream,
    skill: Skill,
    question: str,
    history: str,
    tracker: TextSink,
) -> dict[str, int]:
    """Stream the model's answer through ``tracker``; return token usage. Raises UpstreamLLMError on failure."""
    system, user = skill.render(
        question=question, sources=render_sources(list(tracker.available.values())), history=history or "(none)"
    )
    usage: dict[str, int] = {}
    pieces = 0
    run = TracedRun(chat)
    await run.start(system, user)
    try:
        async for piece in chat.pieces(system, user):
            if isinstance(piece, str):
                pieces += 1
                tracker.feed(piece)
                await tracker.settle()
            else:
                add_usage(usage, piece)
    except BaseException as exc:  # UpstreamLLMError, or the watchdog cancelling a stalled answer
        await run.fail(exc)
        if isinstance(exc, UpstreamLLMError):
            log.warning("LLM call failed after %d chars: %s", len(tracker.text), exc.message)
        raise
    usage = complete_usage(usage, system + user, pieces)
    usage["llm_calls"] = 1
    await run.end(tracker.text, usage)
    return usage


def add_usage(usage: dict[str, int], meta: Mapping[str, Any] | None) -> None:
    """Add one message's or chunk's OpenAI-protocol usage (as LangChain reports it) to ``usage``."""
    if not meta:
        return
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        usage[key] = usage.get(key, 0) + int(meta.get(key, 0) or 0)


def complete_usage(usage: dict[str, int], prompt: str, streamed_pieces: int) -> dict[str, int]:
    """The usage a streamed call reported, or an estimate when the server reported none.

    OpenAI's API sends usage in a last chunk when asked (``stream_options.include_usage``, which the client sets);
    llama.cpp's server ignores that option in streams and reports usage only in non-streamed responses. Rather than
    report 0 tokens, count what was seen: llama.cpp streams one token per chunk, and a prompt is about four
    characters a token. ``usage_estimated`` says which it is.
    """
    if usage.get("input_tokens") or usage.get("output_tokens"):
        return usage
    estimated = {
        "input_tokens": max(1, round(len(prompt) / CHARS_PER_TOKEN)),
        "output_tokens": streamed_pieces,
        "usage_estimated": 1,
    }
    estimated["total_tokens"] = estimated["input_tokens"] + estimated["output_tokens"]
    return estimated


def is_abstention(text: str) -> bool:
    return ABSTAIN_PHRASE in text.lower()
