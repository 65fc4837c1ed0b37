"""Splitting an answer or a provision into sentences: "s. 3", "No. 5", a list item's number and a sentence's citation
markers ("… employee [1].") stay with their sentence. Used by the gate, verified streaming, reference quotes and the
research planner alike."""

from __future__ import annotations

import re

_ABBREVIATION = re.compile(r"(?:\b(?:s|ss|no|nos|sec|secs|para|paras|cap|chap|art|reg|regs|e\.g|i\.e|etc|mr|mrs|dr|"
                           r"st|vs|cf|subs)|\b[A-Z])\.$", re.I)  # fmt: skip
_SENTENCE_END = re.compile(
    r"(?<=[.!?])[\"”’)\]*_]*(?:\s*\[\d{1,3}\])*[.]?\s+(?=[\"“(]?[A-Z0-9*•-]|\[(?!\d{1,3}\]))"
    r"|(?P<after_marker>(?<=\])[.!?]?[^\S\n]+(?=\S)(?!\[\d{1,3}\]))|\n+"
)  # a marker after the sentence's end ("….” [1]") stays with it, even at the end of the answer; so does the
# markdown that closes it ("**Yes.** No landlord …" is two sentences)
# A cited sentence's end ("… employee [1]." or "… employee. [1]") ends it whatever follows: the next may open with a
# list item's letter, copied from the provision ("(a) the termination is …").
_CITED_END = re.compile(r"(?:[.!?][\"”’)]*\s*(?:\[\d{1,3}\])+|(?:\[\d{1,3}\])+[.!?])$")
_LIST_NUMBER = re.compile(r"^(?:\d{1,3}|[a-z]|[ivx]{1,4})\.$", re.I)


def split_sentences(text: str) -> list[tuple[str, str]]:
    """(sentence, following whitespace) pairs; "s. 3", "No. 5" and a trailing "[1]." stay with their sentence."""
    return [(sentence, separator) for sentence, separator, _ in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[str, str, int]]:
    """``split_sentences`` with, for each sentence, the offset in ``text`` where its following whitespace ends."""
    pieces: list[tuple[str, str, int]] = []
    start = 0
    quoted = [region for line in re.finditer(r"[^\n]+", text) for region in _quotations(text, *line.span())]
    for match in _SENTENCE_END.finditer(text):
        head = text[start : match.start()]
        boundary = match.start() + len(match.group(0).rstrip())
        if not match.group(0).startswith("\n") and any(a < boundary < b for a, b in quoted):
            continue  # a quoted passage of several sentences is one statement: the words of the one it quotes
        if match.group("after_marker") is not None:
            if not _CITED_END.search(text[start:boundary]):
                continue  # "[1] and [2]", "[Chapter 5:13]. the": not a cited sentence's end
        elif not match.group(0).startswith("\n") and (
            _ABBREVIATION.search(head.rstrip()) or _LIST_NUMBER.match(head.strip())
        ):
            continue  # "s. 3" goes on; so does a list item's number ("1. **Writing**: …"), which states nothing
        sentence = text[start:boundary]
        if sentence.strip():
            pieces.append((sentence.strip(), text[boundary : match.end()] or " ", match.end()))
        start = match.end()
    if text[start:].strip():
        pieces.append((text[start:].strip(), "", len(text)))
    return pieces


def _quotations(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The quotations of ``text[start:end]`` (one line) that close in it, as (opening, after closing) offsets: each
    “ with its ”, and each pair of straight " outside those (where straight ones are the quoted text's own). A mark
    never closed in its line holds nothing: the sentences after it are judged each on its own."""
    curly = [(m.start() + start, m.end() + start) for m in re.finditer(r"“[^“”]*”", text[start:end])]
    straight: list[tuple[int, int]] = []
    opened: int | None = None
    for mark in re.finditer('"', text[start:end]):
        k = mark.start() + start
        if not any(a <= k < b for a, b in curly):
            if opened is None:
                opened = k
            else:
                straight.append((opened, k + 1))
                opened = None
    return curly + straight


def open_quotation(text: str) -> int | None:
    """Where a quotation opens in the last line of ``text`` that has not closed yet (the text may still close it):
    a sentence that ends after it is not complete until it closes or the line ends."""
    start = text.rfind("\n") + 1
    closed = _quotations(text, start, len(text))
    marks = [k for k in range(start, len(text)) if text[k] in '“"' and not any(a <= k < b for a, b in closed)]
    return marks[0] if marks else None
