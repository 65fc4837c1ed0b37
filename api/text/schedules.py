"""Provisions inside a schedule: which schedule a provision is in, what its numbered units are called, and its label.

A schedule restarts its numbering: paragraph 4 of Schedule 28 is not section 4 of the Act it is attached to, and
its definitions ("In this Schedule— “tax” means …") are not the Act's. A provision is in a schedule when the
outermost heading of its part path names one ("Schedule 28", "First Schedule", "SCHEDULE 2 (Section 12)"); its
label then names the schedule: "paragraph 4 of Schedule 28", "paragraph 4(2) of Schedule 1, Part I".

A schedule's numbered units are paragraphs (their subdivisions, subparagraphs), except in a schedule that holds a
whole enactment of its own (a constitution, a university's statutes) drafted in sections with subsections: what a
schedule calls its units is read from its own words (``schedule_unit``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SEGMENTS = re.compile(r"\s*(?:>|,)\s*")
# The outermost heading names a schedule: "Schedule 28", "First Schedule", "The Second Schedule", "SCHEDULE".
# Only an ordinal may stand before the word ("Fee Schedule" is a table's name), and a number after it is in digits or
# capital roman numerals ("Schedule Civil Aviation Rules" names no number).
_SCHEDULE = re.compile(
    r"^(?:the\s+)?(?P<name>(?:(?:[A-Za-z]+-)?[A-Za-z]+(?:st|nd|rd|th)\s+)?schedule\b"
    r"(?:\s+(?:No\.?\s*)?(?:\d+|(?-i:[IVXLC]+))(?-i:[A-Z]{0,2})\b)?)",
    re.I,
)
# A heading below it that a citation names ("Part I", "Chapter 4", "Division 2"): a word and a number.
_DIVISION = re.compile(r"^(?:part|chapter|division)\s+\S{1,12}$", re.I)
_SUBSECTIONS = re.compile(r"\bsubsections?\s*\(", re.I)
_SUBPARAGRAPHS = re.compile(r"\bsubparagraphs?\s*\(", re.I)
_LABEL = re.compile(r"^(?P<unit>\w+) (?P<number>\S+) of (?:the )?(?P<schedule>.+)$")
# "Second Schedule", or a schedule with no number: named with "the".
_ORDINAL = re.compile(r"^(?:[A-Za-z-]+\s+schedule\b|schedule(?:,|$))", re.I)
UNITS = ("paragraph", "section")
_ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
SCHEDULE_NAME = rf"(?:(?:{'|'.join(_ORDINALS)})\s+schedule|schedule\s+\d+[A-Z]?(?:\s*,\s*part\s+[IVXLC\d]+[A-Z]?)?)"
"""A schedule as a sentence names one ("the Second Schedule", "Schedule 28", "Schedule 1, Part I"), for patterns
read case-insensitively."""


def schedule_of(part: str) -> str:
    """The schedule a provision whose part path is ``part`` sits in, as a citation names it ("Schedule 28",
    "Schedule 1, Part I"); '' for a provision outside any schedule."""
    segments = [s for s in _SEGMENTS.split(part.strip()) if s]
    if not segments or not (head := _SCHEDULE.match(segments[0])):
        return ""
    named = [head.group("name").strip()]
    for segment in segments[1:]:
        if not _DIVISION.match(segment):
            break
        named.append(segment)
    return ", ".join(named)


def schedule_key(part: str) -> str:
    """The outermost schedule of ``part`` ("Schedule 1" for "Schedule 1, Part II"): what its units are counted by."""
    return schedule_of(part).split(", ")[0]


def schedule_unit(texts: Iterable[str]) -> str:
    """What a schedule whose provisions read ``texts`` calls its numbered units: "section" when its provisions
    refer to subsections more than twice as often as to subparagraphs, and at least once for every ten provisions (an
    enactment drafted in sections, whose provisions refer to their own subsections throughout), else "paragraph"
    (a schedule that mentions a subsection now and then means the Act's)."""
    subsections = subparagraphs = provisions = 0
    for text in texts:
        provisions += 1
        subsections += len(_SUBSECTIONS.findall(text))
        subparagraphs += len(_SUBPARAGRAPHS.findall(text))
    often = subsections >= max(2, provisions / 10)
    return "section" if often and subsections > 2 * subparagraphs else "paragraph"


def schedule_label(unit: str, number: str, schedule: str) -> str:
    """ "paragraph 4 of Schedule 28", "paragraph 4 of the Second Schedule": a schedule's provision ``number``
    (pinpoint included, "4(2)")."""
    article = "the " if _ORDINAL.match(schedule) else ""
    return f"{unit or UNITS[0]} {number} of {article}{schedule}"


def split_label(label: str) -> tuple[str, str, str] | None:
    """(unit, number, schedule) of a label ``schedule_label`` wrote; None for any other label."""
    match = _LABEL.match(label)
    if match is None or match.group("unit") not in UNITS:
        return None
    return match.group("unit"), match.group("number"), match.group("schedule")


def pinpointed(label: str, finer: str) -> str:
    """``label`` naming the subdivision ``finer`` ("(2)(a)") of its provision: "section 3(2)(a)", "paragraph
    4(2)(a) of Schedule 28"; the label as it is when it already names one."""
    if (parts := split_label(label)) is not None:
        unit, number, schedule = parts
        return label if "(" in number else schedule_label(unit, number + finer, schedule)
    return label + finer if label.startswith("section ") and "(" not in label else label


def unpinpointed(label: str) -> str:
    """``label`` naming its whole provision: "section 3" for "section 3(2)(a)", "paragraph 4 of Schedule 28" for
    "paragraph 4(2) of Schedule 28"."""
    if (parts := split_label(label)) is not None:
        unit, number, schedule = parts
        return schedule_label(unit, number.split("(")[0], schedule)
    return label.split("(")[0]


def _schedule_number(name: str) -> str:
    """ "2" for "Schedule 2", "Second Schedule" or "SCHEDULE 2, Part I"; the name folded when it has no number."""
    words = name.casefold().split()
    if len(words) > 1 and words[0] == "schedule":
        return words[1].strip(",")
    if len(words) > 1 and words[1].startswith("schedule") and words[0] in _ORDINALS:
        return str(_ORDINALS.index(words[0]) + 1)
    return " ".join(words)


def same_schedule(named: str, schedule: str) -> bool:
    """Whether a schedule named in a sentence ("the Second Schedule") is ``schedule`` ("Schedule 2, Part I")."""
    return _schedule_number(named.removeprefix("the ")) == _schedule_number(schedule_key(schedule))
