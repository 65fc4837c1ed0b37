"""What the graph's prompts are filled with: numbered passages for grading, the session's recent turns, and
hypothetical passages clipped to a token budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from api.schemas.documents import Chunk

HISTORY_TURNS = 3
HISTORY_ANSWER_CHARS = 400
PASSAGE_CHARS = 700
HYDE_TOKENS = 120  # a hypothetical passage longer than this is cut: it only has to land near the real provision


def format_passages(chunks: Sequence[Chunk]) -> str:
    """Chunks numbered from 1 as the grader and replanner read them: title, provision ("section 4", "paragraph 4 of
    Schedule 28"), heading, then the start of the text."""
    return "\n\n".join(f"[{i}] {c.title}, {_label(c)} {c.section_heading}\n{c.text[:PASSAGE_CHARS]}"
                       for i, c in enumerate(chunks, start=1))  # fmt: skip


def _label(chunk: Chunk) -> str:
    return chunk.label if chunk.section_number else "section"


def format_history(turns: Sequence[tuple[str, str]]) -> str:
    """The last few (question, answer) turns of the session, answers cut short."""
    return "\n".join(f"Q: {q}\nA: {a[:HISTORY_ANSWER_CHARS]}" for q, a in turns[-HISTORY_TURNS:])


def clip_tokens(text: str, limit: int, count_tokens: Callable[[str], int]) -> str:
    """At most ``limit`` tokens of ``text``, cut at a word."""
    words = text.split()
    while len(words) > 1 and count_tokens(" ".join(words)) > limit:
        words = words[: max(1, int(len(words) * 0.9))]
    return " ".join(words)
