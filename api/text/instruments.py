"""Laws named in words: "the Consumer Protection Act", and the title words that identify one whatever its wording.

Shared by verification (a sentence that names its law), the repeal finder and the cross-reference reader.
"""

from __future__ import annotations

import re

_TITLE_STOP = frozenset("the of and on for act chapter no".split())


def title_words(title: str) -> set[str]:
    """The words that identify a law by its title, without the words every title shares ("the", "Act", "Chapter")."""
    return {w for w in re.findall(r"[a-z]+", title.lower()) if w not in _TITLE_STOP}


# "the Consumer Protection Act provides …": the instrument a sentence names in words, with or without a section.
_INSTRUMENT = re.compile(
    r"\b((?:[A-Z][\w'-]*\s+(?:(?:of|and|on|for)\s+)?|\([A-Z][\w' -]*\)\s+)+)(?:Act|Code|Ordinance|Regulations)\b"
)


def instruments_named(text: str) -> list[tuple[str, set[str]]]:
    """Each instrument ``text`` names ("the Consumer Protection Act"): its words as written, and its title words
    (none for "the Act", which names no particular one)."""
    return [(m.group(0), words) for m in _INSTRUMENT.finditer(text) if (words := title_words(m.group(1)))]


def names(title: str, words: set[str]) -> bool:
    """Whether an instrument named by ``words`` (``instruments_named``) is the one titled ``title``."""
    return words <= title_words(title)
