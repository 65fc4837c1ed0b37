"""Cut sections into chunks that fit the embedder, along the provision's own boundaries.

A chunk is always a verbatim slice of one section's text: never crossing a section, split preferably at line
breaks, then before subsection/paragraph markers such as "(2)" or "(b)", then after sentences, then between words,
and only as a last resort inside a word. A chunk also has at most ``max_chunk_chars`` characters: a word-piece
tokenizer counts a 50 MB "word" as one token, so the token count alone does not bound a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from api.schemas.documents import Chunk, Document, Section
from api.text.provisions import provision_at, provision_starts
from ingestion.limits import MAX_LINE_CHARS, cut_spans, max_chunk_chars

TokenCounter = Callable[[str], int]

# Split points, strongest first: each is a position where a new unit may start.
_SPLITS = (
    re.compile(r"\n"),
    # Before "(2)" or "(b)" that open a provision, not after "subsection" or "paragraph" that refer to one.
    re.compile(
        r"(?<=\S)(?<!section)(?<!paragraph)(?<!subparagraph)(?<!and)(?<!or)\s(?=\((?:\d+[A-Za-z]?|[a-z]{1,2}|[ivxl]+)\)\s)"
    ),
    re.compile(r"(?<=[.;:])\s+(?=\S)"),
    re.compile(r"\s+"),
)


def _spans(
    text: str, start: int, end: int, level: int, max_tokens: int, max_chars: int, count: TokenCounter
) -> Iterator[tuple[int, int, int]]:
    """Yield (start, end, tokens) spans covering text[start:end], each within max_tokens and max_chars.

    A span over max_chars is never counted whole (a tokenizer given megabytes takes gigabytes): it is split first.
    """
    if end - start <= max_chars:
        tokens = count(text[start:end])
        if tokens <= max_tokens:
            yield start, end, tokens
            return
    if level == len(_SPLITS):
        yield from _inside_words(text, start, end, max_tokens, max_chars, count)
        return
    if level == len(_SPLITS) - 1 and end - start > MAX_LINE_CHARS:
        # Words only, and more than any real sentence holds: count windows of them rather than each word (which is
        # what real text gets, so its chunks stay as they were).
        yield from _windows(text, start, end, max_tokens, max_chars, count)
        return
    cuts = [m.end() for m in _SPLITS[level].finditer(text, start, end)]
    bounds = [start, *[c for c in cuts if start < c < end], end]
    for a, b in zip(bounds, bounds[1:], strict=False):
        yield from _spans(text, a, b, level + 1, max_tokens, max_chars, count)


def _windows(
    text: str, start: int, end: int, max_tokens: int, max_chars: int, count: TokenCounter
) -> Iterator[tuple[int, int, int]]:
    """Cut a very long run of words (a megabyte line of them, say) at spaces into windows within both limits,
    counting each window rather than each word."""
    for a, b in cut_spans(text, max_chars, start, end):
        tokens = count(text[a:b])
        if tokens <= max_tokens:
            yield a, b, tokens
            continue
        for c, d in cut_spans(text, max(1, (b - a) * max_tokens // (tokens + 1)), a, b):
            inner = count(text[c:d])
            if inner <= max_tokens:
                yield c, d, inner
            else:
                yield from _spans(text, c, d, len(_SPLITS) - 1, max_tokens, max_chars, count)


def _inside_words(
    text: str, start: int, end: int, max_tokens: int, max_chars: int, count: TokenCounter
) -> Iterator[tuple[int, int, int]]:
    """Cut what no boundary splits (one long "word") into pieces within max_chars, shrunk until within max_tokens."""
    for a, b in cut_spans(text, max_chars, start, end):
        while a < b:
            cut, tokens = b, count(text[a:b])
            while tokens > max_tokens and cut - a > 1:
                cut = a + max(1, (cut - a) * max_tokens // (tokens + 1))
                tokens = count(text[a:cut])
            yield a, cut, tokens
            a = cut


def split_section(section: Section, max_tokens: int, count: TokenCounter) -> list[str]:
    """Pack the section's units greedily into verbatim slices of at most ``max_tokens`` tokens (and
    ``max_chunk_chars(max_tokens)`` characters).

    Units meet at whitespace, and word-piece tokenizers split there first, so a run of units has the sum of their
    token counts: each unit is counted once (counting every growing prefix made chunking quadratic in a section).
    """
    text = section.text
    max_chars = max_chunk_chars(max_tokens)
    pieces: list[str] = []
    chunk_start: int | None = None
    chunk_end = chunk_tokens = 0
    for a, b, tokens in _spans(text, 0, len(text), 0, max_tokens, max_chars, count):
        if chunk_start is not None and (chunk_tokens + tokens > max_tokens or b - chunk_start > max_chars):
            pieces.append(text[chunk_start:chunk_end])
            chunk_start, chunk_tokens = a, 0
        elif chunk_start is None:
            chunk_start = a
        chunk_end = b
        chunk_tokens += tokens
    if chunk_start is not None:
        pieces.append(text[chunk_start:chunk_end])
    return [p.strip() for p in pieces if p.strip()]


def remembering(count: TokenCounter, longest: int = 64, entries: int = 65_536) -> TokenCounter:
    """``count``, remembering its answers for short texts: words repeat, and each is otherwise counted anew."""
    known: dict[str, int] = {}

    def counted(text: str) -> int:
        if len(text) > longest:
            return count(text)
        tokens = known.get(text)
        if tokens is None:
            if len(known) >= entries:
                known.clear()
            tokens = known[text] = count(text)
        return tokens

    return counted


def chunk_document(document: Document, count: TokenCounter, max_tokens: int = 200) -> list[Chunk]:
    chunks: list[Chunk] = []
    count = remembering(count)
    for section in document.sections:
        starts = provision_starts(section.text, section.section_id)
        cursor = 0
        for ordinal, piece in enumerate(split_section(section, max_tokens, count)):
            cursor = section.text.index(piece, cursor)
            chunks.append(
                Chunk(
                    chunk_id=f"{section.section_id}/c{ordinal}",
                    doc_key=document.doc_key,
                    section_id=section.section_id,
                    section_number=section.number,
                    section_heading=section.heading,
                    section_label=section.label,
                    title=document.title,
                    jurisdiction=document.jurisdiction,
                    text=piece,
                    ordinal=ordinal,
                    provision_id=provision_at(starts, cursor, section.section_id),
                    source_id=section.source_id,
                    doc_type=document.doc_type,
                    date=document.date,
                    tenant=document.tenant,
                )
            )
    return chunks
