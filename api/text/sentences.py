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
    quoting = _Quoting(text)
    for match in _SENTENCE_END.finditer(text):
        head = text[start : match.start()]
        boundary = match.start() + len(match.group(0).rstrip())
        if not match.group(0).startswith("\n") and quoting.open_at(boundary):
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


class _Quoting:
    """Whether a point of a text lies inside a quotation: after an opening mark (“, or an odd straight " outside
    curly marks, where straight ones are the quoted text's own) not yet closed. A line break ends a quotation left
    open, so a mark that is never closed holds one paragraph at most."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.curly = False
        self.straight = False

    def open_at(self, position: int) -> bool:
        for char in self.text[self.at : position]:
            if char == "“":
                self.curly = True
            elif char == "”":
                self.curly = False
            elif char == "\n":
                self.curly = self.straight = False
            elif char == '"' and not self.curly:
                self.straight = not self.straight
        self.at = max(self.at, position)
        return self.curly or self.straight
