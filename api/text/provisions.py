"""Which provision a position in a provision's text falls in: subsection "(2)" and paragraph "(b)" markers.

Shared by chunking (where a chunk starts) and the composer (where a quote starts), so both name the same provision.
"""

from __future__ import annotations

import re

# "(2)" or "(b)" standing alone after whitespace: a provision starts there unless the word before refers to one.
_MARKER = re.compile(r"(?:^|(?<=\s))\((\d{1,3}[A-Z]?|[a-z]{1,2})\)(?=\s)")
_REFERENCE_WORDS = frozenset(
    "section sections subsection subsections paragraph paragraphs subparagraph subparagraphs and or to of".split()
)
_LABEL = re.compile(r"\((\w+)\)")


_NUMBER_OR_LABEL = re.compile(r"^(?:\d{1,4}[A-Z]{0,2}|\(\w{1,4}\))+[,;]?$")
_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
    r"eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand)"
)
# "thirty (30) days", "level seven (7)", "twenty-eight (28)": a figure glossing the number just written in words.
_GLOSSED = re.compile(rf"^{_NUMBER_WORD}(?:-{_NUMBER_WORD})*$", re.I)


def _refers(words: list[str]) -> bool:
    """Whether a marker after ``words`` continues a reference: the word before it is a reference word ("subsection
    (2)"), or a provision's number or label that follows one ("section 120 (1) (b)", with a space before each)."""
    for word in reversed(words[-6:]):
        if word.lower().strip(",;") in _REFERENCE_WORDS:
            return True
        if not _NUMBER_OR_LABEL.match(word):
            return False
    return False


def provision_starts(text: str, section_id: str, start_in: str = "") -> list[tuple[int, str]]:
    """(offset, provision id) for every subsection/paragraph marker in ``text``, in order.

    ``start_in`` is the provision the text begins inside (a chunk's provision id), so a paragraph marker met before
    any subsection marker still sits under the right subsection.
    """
    labels = _LABEL.findall(start_in.removeprefix(section_id))
    subsection = next((label for label in labels if label[0].isdigit()), "")
    paragraph = next((label for label in labels if not label[0].isdigit()), "")
    starts = []
    for match in _MARKER.finditer(text):
        # Only the words just before the marker matter; a bounded window keeps long provisions linear.
        head = text[max(0, match.start() - 64) : match.start()]
        if not head.strip():
            head = text[: match.start()]
        at_line_start = "\n" in head[len(head.rstrip()) :] or not head.strip()
        words = head.split()
        label = match.group(1)
        if not at_line_start and (_refers(words) or (label.isdigit() and words and _GLOSSED.match(words[-1]))):
            continue
        if label[0].isdigit():
            subsection, paragraph = label, ""
        else:
            paragraph = label
        starts.append((match.start(), section_id + (f"({subsection})" if subsection else "") +
                       (f"({paragraph})" if paragraph else "")))  # fmt: skip
    return starts


def provision_at(starts: list[tuple[int, str]], offset: int, default: str) -> str:
    """The provision at ``offset``: the last marker at or before it, else ``default``."""
    current = default
    for position, provision in starts:
        if position > offset:
            break
        current = provision
    return current
