"""Bounds that keep an untrusted file from becoming a giant title, line, provision or chunk.

Real sources stay far inside them (the 385 Zimbabwe Acts: lines up to 8,001 characters, sections up to 8,000); a
hostile or broken file (a 50 MB single line, one 50 MB "word") is cut at these sizes instead of being held, counted
and embedded whole. Cuts fall at a line break if there is one in reach, else at a space, else anywhere.
"""

from __future__ import annotations

import re

from api.schemas.documents import Document, Section

MAX_LINE_CHARS = 20_000
MAX_PROVISION_CHARS = 100_000
MAX_LABEL_CHARS = 500  # titles and headings
# A chunk holds at most this many characters per token it may hold (200 tokens: 2,400 characters). English runs
# at 4-6 characters a token, so only text the tokenizer cannot split reaches it: a word-piece tokenizer reads a
# 50 MB "word" as one unknown token.
CHARS_PER_TOKEN = 12

_BREAKS = (re.compile(r"\n"), re.compile(r"\s"))


def max_chunk_chars(max_tokens: int) -> int:
    return max_tokens * CHARS_PER_TOKEN


def cut_spans(text: str, limit: int, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into consecutive spans of at most ``limit`` characters, each ending after the last
    line break in reach, else the last whitespace, else at the limit."""
    end = len(text) if end is None else end
    spans = []
    while end - start > limit:
        cut = start + limit
        for pattern in _BREAKS:
            found = [m.end() for m in pattern.finditer(text, start + limit // 2, cut)]
            if found:
                cut = found[-1]
                break
        spans.append((start, cut))
        start = cut
    spans.append((start, end))
    return spans


def clip_label(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 2].rstrip() + " …"


def _parts(section: Section) -> list[Section]:
    spans = cut_spans(section.text, MAX_PROVISION_CHARS)
    if len(spans) == 1:
        return [section]
    parts = []
    for index, (a, b) in enumerate(spans, start=1):
        suffix = "" if index == 1 else f"~part{index}"
        update = {"section_id": section.section_id + suffix, "text": section.text[a:b].strip(), "offsets": None}
        parts.append(section.model_copy(update=update))
    return [p for p in parts if p.text]


def bound_document(document: Document) -> Document:
    """The document with its title and headings clipped and each over-long provision stored as consecutive parts
    (``…#s3``, ``…#s3~part2``, …), with a warning for each."""
    warnings = list(document.warnings)
    title = clip_label(document.title)
    if title != document.title:
        warnings.append(f"the title is {len(document.title):,} characters: clipped to {MAX_LABEL_CHARS}")
    sections = []
    for section in document.sections:
        if len(section.heading) > MAX_LABEL_CHARS:
            section = section.model_copy(update={"heading": clip_label(section.heading)})
        parts = _parts(section)
        if len(parts) > 1:
            warnings.append(
                f"{section.label} is {len(section.text):,} characters, over the {MAX_PROVISION_CHARS:,} limit: "
                f"stored in {len(parts)} parts"
            )
        sections += parts
    if warnings == document.warnings and not any(len(s.heading) > MAX_LABEL_CHARS for s in document.sections):
        return document
    return document.model_copy(update={"title": title, "sections": sections, "warnings": warnings})
