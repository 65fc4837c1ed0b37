"""The hard facts of a sentence about the law, and whether a provision states them.

Every number, amount, age, period, percentage, date and named public body in the sentence must occur in the
provision, and so must the kind of penalty (imprisonment, a fine) and of body ("the labour court") it names. Numbers
compare by value, so "18" matches "eighteen", "5%" matches "five per cent", "$1 000" matches "1,000 dollars";
references ("section 3(1)", "Chapter 5:11", "[2]", "Act 5 of 2001") are not facts.

Pure functions over text: the judges, the gate and the benchmarks call the same code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from api.composer.jurisdiction import JURISDICTION
from api.text.words import stem

from .polarity import SUBSECTION_MARK

_UNITS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
             "tenth": 10, "twelfth": 12, "fourteenth": 14, "fifteenth": 15, "eighteenth": 18, "twentieth": 20,
             "thirtieth": 30}  # fmt: skip
_ORDINAL_UNITS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
                  "eighth": 8, "ninth": 9}  # fmt: skip
_ORDINAL_PHRASE = re.compile(rf"\b(?:({'|'.join(_TENS)})[\s-])?({'|'.join(_ORDINAL_UNITS)})\b", re.I)
_TENS_BEFORE = re.compile(rf"\b(?:{'|'.join(_TENS)})[\s-]$")
_PERIOD_AHEAD = re.compile(r"\s+(?:day|week|month|year)s?\b", re.I)
_MULTIPLIERS = {"double": 2.0, "twice": 2.0, "treble": 3.0, "triple": 3.0, "thrice": 3.0}
_NUMBER_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES, "one"], key=len, reverse=True))
# "and" joins number words only after a scale ("one hundred and five"); elsewhere it joins two numbers ("sixteen- and
# seventeen-year-olds" are 16 and 17, not 33).
_AFTER_SCALE = "".join(f"(?<={scale}{gap})" + "|" for scale in ("hundred", "thousand", "million") for gap in (" ", "-"))
WORD_NUMBER = re.compile(
    rf"\b(?:(?:{_NUMBER_WORD})(?:[\s-]+(?:(?:{_AFTER_SCALE[:-1]})and[\s-]+)?(?=(?:{_NUMBER_WORD})\b))?)+\b", re.I
)
# "one and a half", "2 and a half": a whole number and a half.
_AND_A_HALF = re.compile(rf"\b({_NUMBER_WORD}|\d+)[\s-]+and[\s-]+a[\s-]+half\b", re.I)
# 1,000 / 1 000 / 1000 / 2.5 / 12.50; a space-grouped thousand only with exactly three digits after the space.
_DIGITS = re.compile(r"(?<![\w.])\d{1,3}(?:(?:,|\u00a0|\u2009| )\d{3})+(?:\.\d+)?(?!\d)|(?<![\w.])\d+(?:\.\d+)?(?!\d)")
_MONTHS = ("january february march april may june july august september october november december").split()
_MONTH = re.compile(r"\b(" + "|".join(m.capitalize() for m in _MONTHS if m != "may") + r"|May(?=\s+\d))\b")
# References to provisions or instruments are not facts about the law: drop them before reading facts.
# A number followed by a unit is a quantity even where a reference could stand: "(30) days", "section 3(3), 30 days".
_UNIT_AHEAD = r"(?:(?:years?|months?|weeks?|days?|hours?|minutes?|per\s*cent|percent|dollars?|times)\b|%)"
_NO_UNIT = rf"(?!\d)(?![A-Za-z]?\)?\s*{_UNIT_AHEAD})"
REFERENCE = re.compile(
    r"\[\d{1,3}\]"
    r"|\b(?:sections?|subsections?|ss?\.?|secs?\.?|paragraphs?|paras?\.?|subparagraphs?|regulations?|regs?\.?|"
    r"rules?|articles?|arts?\.?|schedules?|parts?|chapters?|chap\.?|cap\.?|clauses?|items?)"
    r"\s*\(?\d+[A-Za-z]?\)?(?:\s*[:.]\s*\d+)?(?:\s*\(\w{1,4}\))*"
    rf"(?:\s*(?:,|and|or|to|-|–)\s*\(?\d+{_NO_UNIT}[A-Za-z]?\)?(?:\s*\(\w{{1,4}}\))*)*"
    rf"|\((?:\d{{1,3}}{_NO_UNIT}[A-Za-z]?|[a-z]{{1,4}})\)"
    r"|\b(?:No\.?|Number)\s*\d+\s*of\s*\d{4}"
    r"|\b(?:Act|Acts|Ordinance|Statutory Instrument|S\.I\.)\s+\d+\s+of\s+\d{4}"
    r"|\[Chapter\s*\d+:\d+\]|\bChapter\s*\d+:\d+"
    # A provision numbered in words, as older drafting has it ("in terms of section three", "subsection two").
    r"|\b(?:sections?|subsections?|paragraphs?|subparagraphs?|regulations?|articles?|clauses?)\s+"
    rf"(?:{WORD_NUMBER.pattern})(?!\s*{_UNIT_AHEAD})"
    # A provision's own number before its heading where a sentence or line starts ("131. Unlawful entry into
    # premises (1) Any person who …"), or a list's number ("1. **Formalities**"): it names, it states no figure.
    r"|(?:^|(?<=\n)|(?<=\.\s))\d{1,4}[A-Z]{0,2}\.(?=[ \t]+[*_]*(?-i:[A-Z]))|^\s*\d{1,3}\.\s*$",
    re.I,
)
_ACT_YEAR = re.compile(r"\b(Act|Amendment|Ordinance|Regulations|Code)(,)?\s+(\d{4})\b")
_BODY_HEADS = (
    "Court|Minister|Ministry|Registrar|Registrar-General|Commission|Commissioner|Board|Authority|Council|Tribunal|"
    "Ombudsman|Parliament|President|Police|Bank|Agency|Office|Officer|Director|Director-General|Secretary|"
    "Magistrate|Judge|Attorney-General|Prosecutor-General|Auditor-General|Service|Committee|Inspector|Corporation"
)
_BODY_HEAD = "|".join(sorted(_BODY_HEADS.split("|"), key=len, reverse=True))  # "Registrar-General" before "Registrar"
# "the Police Act", "the Reserve Bank of Zimbabwe Act": the name of an instrument (an answer's "Section 28 of the
# Police Act provides…" frame), not a body the provision must name.
# Any run of capitalised or bracketed words before "Act": "the Bank Use Promotion Act", "the State Service (Pensions)
# Act", "the Reserve Bank of Zimbabwe Act".
_INSTRUMENT_NAME = (
    r"(?:\s+(?:of\s+|and\s+)?(?:[A-Z][\w'-]*|\([A-Z][\w' -]*\)))*\s+(?:Act|Regulations|Rules|Ordinance)\b"
)
_BODY = re.compile(rf"\b((?:[A-Z][\w'-]*\s+(?:of\s+|for\s+|and\s+)?)*(?:{_BODY_HEAD}))(?![\w-])(?!{_INSTRUMENT_NAME})")
_BODY_FILLER = {"The", "A", "An", "Under", "According", "If", "In", "Only", "Every", "No", "Any", "This", "That"}


def _words_value(phrase: str) -> int | None:
    total, current = 0, 0
    for word in re.split(r"[\s-]+", phrase.lower()):
        if word in ("", "and"):
            continue
        if word == "one":
            current += 1
        elif word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word in _SCALES:
            scale = _SCALES[word]
            if scale == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * scale
                current = 0
    value = total + current
    return value or None


@lru_cache(maxsize=8192)  # the same provision is read by every sentence of an answer and by several checks
def without_references(text: str) -> str:
    """``text`` with references to provisions and instruments blanked out ("section 3(1)", "(a)", "Chapter 5:16"),
    so that what numbers are left are facts about the law."""
    text = text.replace("’", "'").replace("\u2011", "-").replace("\u2013", "-")
    text = _ACT_YEAR.sub(r"\1\2", text)  # "the Labour Act, 2004": the year names the Act
    return REFERENCE.sub(" ", text)


UNIT_WORDS = {
    "year": "year", "years": "year", "yr": "year", "yrs": "year", "month": "month", "months": "month",
    "week": "week", "weeks": "week", "day": "day", "days": "day", "hour": "hour", "hours": "hour", "hrs": "hour",
    "minute": "minute", "minutes": "minute", "level": "level", "%": "percent", "per": "percent",
    "percent": "percent", "kilometres": "km", "kilometre": "km", "kilometers": "km", "km": "km", "metres": "m",
    "metre": "m", "meters": "m", "dollars": "currency", "dollar": "currency", "times": "times",
}  # fmt: skip
_ARTICLE_UNIT = re.compile(r"\b(?:a|an)\s+(year|month|week|day|hour)\b", re.I)
# A period a claim states with an article: "within a month", "for a year", "at least a week" (not "once a month").
_ARTICLE_PERIOD = re.compile(
    r"\b(?:within|for|after|before|at\s+least|not\s+less\s+than|not\s+more\s+than|up\s+to|of)\s+(?:a|an)\s+"
    r"(year|month|week|day|hour)\b",
    re.I,
)
# Words that qualify a period between its number and its unit.
_PERIOD_QUALIFIERS = frozenset(
    "continuous consecutive successive working business calendar clear full complete unbroken".split()
)
_NEXT_WORD = re.compile(r"\s*(?:[-\u2011]\s*)?(%|[a-z]+)", re.I)
# A number restated in the other notation before its unit: "twenty-four (24) hours", "14 (fourteen) days"; or the
# closing bracket after the restatement itself.
_RESTATED = re.compile(r"\s*\(\s*(?:[\d.,]+|[a-z]+(?:[\s-][a-z]+)*)\s*\)|\)", re.I)
_LEVEL = re.compile(r"\blevel\s*$", re.I)
_CURRENCY_BEFORE = re.compile(rf"(?:[$£€]|\b(?:US|{JURISDICTION.currency_pattern()})\$?)\s*$", re.I)


def _unit(text: str, start: int, end: int) -> str:
    """The unit a number at [start, end) counts: the word after it ("18 years", "five per cent"), "level 10",
    "$500"; "" when none."""
    if _LEVEL.search(text[max(0, start - 8) : start]):
        return "level"
    if _CURRENCY_BEFORE.search(text[max(0, start - 6) : start]):
        return "currency"
    restated = _RESTATED.match(text, end)
    if restated and (restated.group(0) == ")" or _restates(restated.group(0))):
        end = restated.end()
    follower = _NEXT_WORD.match(text, end)
    if follower and follower.group(1).lower() in _PERIOD_QUALIFIERS:
        follower = _NEXT_WORD.match(text, follower.end())  # "twenty-four continuous hours", "five business days"
    if follower:
        word = follower.group(1).lower()
        if word in ("of", "and") or word in _UNITS or word in _TENS:
            return ""
        return UNIT_WORDS.get(word, "")
    return ""


def _restates(bracketed: str) -> bool:
    """Whether a bracketed piece is a number (in digits or words), not a list label such as "(a)" or "(iv)"."""
    inner = bracketed.strip().strip("()").strip()
    return (
        bool(re.fullmatch(r"[\d.,]+", inner)) or _words_value(inner) is not None and bool(WORD_NUMBER.fullmatch(inner))
    )


def quantities(text: str) -> set[tuple[float, str]]:
    """(value, unit) for every number stated in ``text``, as digits or words ("eighteen years" -> (18, "year")),
    references aside; the unit is "" when none follows."""
    cleaned = without_references(text)
    found: set[tuple[float, str]] = set()
    for match in _DIGITS.finditer(cleaned):
        raw = re.sub(r"[,\u00a0\u2009 ]", "", match.group(0))
        found.add((float(raw), _unit(cleaned, match.start(), match.end())))
    halves = list(_AND_A_HALF.finditer(cleaned))
    for match in halves:
        whole = match.group(1)
        value = float(whole) if whole.isdigit() else _words_value(whole)
        if value is not None:
            found.add((float(value) + 0.5, _unit(cleaned, match.start(), match.end())))
    for match in WORD_NUMBER.finditer(cleaned):
        if any(h.start() <= match.start() < h.end() for h in halves):
            continue  # the whole part of "one and a half": read with its half above
        phrase = match.group(0)
        unit = _unit(cleaned, match.start(), match.end())
        if phrase.strip().lower() == "one" and not unit:
            continue  # "one of the parties": too common to be a stated quantity; "one month" is one
        value = _words_value(phrase)
        if value is not None:
            found.add((float(value), unit))
    for match in re.finditer(r"[a-z]+", cleaned.lower()):
        if match.group(0) in _ORDINALS and not _TENS_BEFORE.search(cleaned.lower(), 0, match.start()):
            found.add((float(_ORDINALS[match.group(0)]), ""))
            if _PERIOD_AHEAD.match(cleaned, match.end()):  # "the fourteenth day after": fourteen days
                found.add((float(_ORDINALS[match.group(0)]), _unit(cleaned, match.start(), match.end())))
        elif match.group(0) in _MULTIPLIERS:  # "double the ordinary rate" is "two times" it
            found.add((_MULTIPLIERS[match.group(0)], "times"))
    # An ordinal day counts a period: "not earlier than the forty-fifth day prior to delivery" is "45 days before";
    # "twenty-first" is 21 (its "twenty" alone is no figure of the text's).
    for match in _ORDINAL_PHRASE.finditer(cleaned):
        tens, last = (match.group(1) or "").lower(), match.group(2).lower()
        if not tens and not _PERIOD_AHEAD.match(cleaned, match.end()):
            continue  # "the first marriage": an order, not a figure
        value = float(_TENS.get(tens, 0) + _ORDINAL_UNITS[last])
        if tens:
            found.discard((float(_TENS[tens]), ""))
        found |= {(value, ""), (value, _unit(cleaned, match.start(), match.end()))}
    return found


def numbers(text: str) -> set[float]:
    """Numeric values stated in ``text``, written as digits or words ("eighteen", "twenty-one"), references aside."""
    return {value for value, _ in quantities(text)}


def _percent(text: str) -> bool:
    return bool(re.search(r"%|\bper\s*cent\b|\bpercent(?:age)?\b", text, re.I))


_CURRENCY = re.compile(rf"[$£€]|\b(?:dollars?|US\$|{JURISDICTION.currency_pattern()}|cents?)\b", re.I)


def _currency(text: str) -> bool:
    return bool(_CURRENCY.search(text))


def months(text: str) -> set[str]:
    return {m.lower() for m in _MONTH.findall(text)}


def bodies(text: str) -> set[str]:
    """Named public bodies and office-holders ("the Registrar-General", "the High Court"), lower-cased."""
    found = set()
    for match in _BODY.finditer(without_references(text)):
        words = match.group(1).split()
        while words and words[0] in _BODY_FILLER:
            words = words[1:]
        if words:
            found.add(" ".join(words).lower())
    return found


@dataclass(frozen=True, slots=True)
class Facts:
    numbers: frozenset[tuple[float, str]] = field(default_factory=frozenset)
    months: frozenset[str] = field(default_factory=frozenset)
    bodies: frozenset[str] = field(default_factory=frozenset)
    percent: bool = False
    currency: bool = False

    @property
    def empty(self) -> bool:
        return not (self.numbers or self.months or self.bodies)


@lru_cache(maxsize=8192)
def facts(text: str) -> Facts:
    """The checkable facts of ``text``; cached, since the same provisions are checked against answer after answer
    (a tenth of an answer's CPU under load went to reading them again)."""
    cleaned = without_references(text)
    return Facts(
        frozenset(quantities(text)), frozenset(months(text)), frozenset(bodies(text)), _percent(cleaned),
        _currency(cleaned),
    )  # fmt: skip


# Kinds of consequence: "liable to imprisonment" needs a provision that imprisons, not one that only fines.
_PENALTIES = {
    "imprisonment": re.compile(r"\b(?:imprison\w*|prison|jail\w*|gaol)\b", re.I),
    "fine": re.compile(r"\bfine[sd]?\b", re.I),
}
# Bodies named in lower case ("refer the dispute to the labour court"): the kind of body must be in the provision.
_BODY_WORDS = re.compile(
    r"\b(court|tribunal|magistrate|minister|registrar|police|commission|ombudsman|board|officer)s?\b", re.I
)


# What only a kind of body does names it too: a "judicial separation" or a "decree" is a court's.
_BODY_ACTS = {
    "court": re.compile(r"\b(?:judicial(?:ly)?|judges?|decrees?)\b", re.I),
    "minister": re.compile(r"\bministerial\b", re.I),
}


# A rate per period: "one month's wages for every year", "per week". The provision states one such period when it
# says "every year", "each week", "per month" or "annually".
_RATE_PERIOD = re.compile(r"\b(?:(?:for|in)\s+(?:every|each)|per)\s+(year|month|week|day|hour)\b", re.I)
_EACH_UNIT = re.compile(r"\b(?:every|each|per|any\s+one)\s+(year|month|week|day|hour)\b", re.I)
_PERIODIC = {"annually": "year", "yearly": "year", "annual": "year", "monthly": "month", "weekly": "week",
             "daily": "day", "hourly": "hour"}  # fmt: skip
# A number counting things: "two competent witnesses", "one witness", "three periods". Only the words that can stand
# between a number and what it counts are skipped ("or more", "such", adjectives are kept as what is counted).
_COUNTED = re.compile(
    rf"\b({_NUMBER_WORD}|\d+)(?:[\s-]+(?:or|and)\s+(?:more|less|fewer|over|under))?((?:[\s-]+[a-z]+){{1,2}})", re.I
)
_NOT_COUNTED = frozenset(
    "of or and to in on at by for from with than who which that this it is are be was were the a an another more less "
    "per cent percent".split()
)


@lru_cache(maxsize=8192)
def _counts(text: str) -> tuple[tuple[float, frozenset[str]], ...]:
    """(value, what it counts) for each number in ``text`` followed by the words it counts ("two or more competent
    witnesses" -> (2, {"competent", "witness"})); numbers with a unit of measure (periods, money, levels) are the unit
    checks' concern and left out, as are references."""
    found = []
    for match in _COUNTED.finditer(without_references(text)):
        raw = match.group(1).lower()
        value = float(raw) if raw.isdigit() else _words_value(raw)
        words = re.findall(r"[a-z]+", match.group(2).lower())
        if value is None or not words or words[0] in _NOT_COUNTED or words[0] in UNIT_WORDS:
            continue
        if words[0] in _UNITS or words[0] in _TENS or words[0] in _SCALES or words[0] in _PERIOD_QUALIFIERS:
            continue
        found.append((float(value), frozenset(stem(w) for w in words if w not in _NOT_COUNTED)))
    return tuple(found)


def miscounted(sentence: str, provision: str) -> list[str]:
    """Counts of things the sentence gives that the provision gives otherwise: "in front of one competent witness"
    against "in the presence of two or more competent witnesses". A count is checked only where the provision
    counts the same thing (its first counted word), so "one witness" against a provision that never counts
    witnesses is left to the other checks; "one", too common to be a fact alone, is a fact here."""
    given = _counts(provision)
    missing = []
    for value, things in _counts(sentence):
        counted = {v for v, words in given if things & words}
        if counted and value not in counted:
            missing.append(f"{_fmt(value)} {' '.join(sorted(things))}")
    return missing


# How a figure is bounded: from below or above, counting the figure itself (inclusive) or not (strict). "of or over
# the age of sixteen" admits sixteen; "over 16" does not. A word that negates or joins a bound ("not more than",
# "of or over") is read with it, so the strict forms must not follow one.
_FIGURE = rf"(?:the\s+age\s+of\s+)?(?P<n>\d+(?:\.\d+)?|(?:{_NUMBER_WORD})(?:[\s-]+(?:{_NUMBER_WORD}))*)\b"
_BOUNDS = (
    (
        "at least",
        re.compile(
            rf"\b(?:at\s+least|not\s+less\s+than|no\s+less\s+than|not\s+younger\s+than|(?:a\s+)?minimum\s+of|"
            rf"of\s+or\s+(?:over|above)|(?:has|have|had|having)\s+attained)\s+{_FIGURE}",
            re.I,
        ),
    ),
    (
        "at least",
        re.compile(
            rf"\b{_FIGURE}(?:\s+(?:years?|months?|days?|weeks?))?(?:\s+of\s+age)?\s+(?:or|and)\s+"
            r"(?:over|above|more|older|upwards)\b",
            re.I,
        ),
    ),
    (
        "more than",
        re.compile(
            rf"(?<!\bnot\s)(?<!\bno\s)(?<!\bor\s)\b(?:over|above|more\s+than|older\s+than|"
            rf"in\s+excess\s+of)\s+{_FIGURE}",
            re.I,
        ),
    ),
    (
        "at most",
        re.compile(
            rf"\b(?:not\s+more\s+than|no\s+more\s+than|not\s+exceeding|not\s+over|not\s+older\s+than|up\s+to|"
            rf"at\s+most|(?:a\s+)?maximum\s+of|of\s+or\s+(?:under|below))\s+{_FIGURE}",
            re.I,
        ),
    ),
    (
        "at most",
        re.compile(
            rf"\b{_FIGURE}(?:\s+(?:years?|months?|days?|weeks?))?(?:\s+of\s+age)?\s+(?:or|and)\s+"
            r"(?:under|below|less|fewer|younger)\b",
            re.I,
        ),
    ),
    (
        "less than",
        re.compile(
            rf"(?<!\bnot\s)(?<!\bno\s)(?<!\bor\s)\b(?:under|below|less\s+than|fewer\s+than|"
            rf"younger\s+than)\s+{_FIGURE}",
            re.I,
        ),
    ),
    (
        # "until the child attains the age of eighteen years": the time before that age
        "less than",
        re.compile(rf"\b(?:until|till|before)\s+(?:[\w’'-]+\s+){{0,4}}?attains?\s+{_FIGURE}", re.I),
    ),
)
_SIDE = {"at least": "below", "more than": "below", "at most": "above", "less than": "above"}


def _bounds(text: str) -> set[tuple[float, str]]:
    """(figure, bound) for every bounded figure of ``text``: (16, "at least") for "of or over the age of sixteen"."""
    found = set()
    cleaned = without_references(text)
    for bound, pattern in _BOUNDS:
        for match in pattern.finditer(cleaned):
            figure = match.group("n")
            value = float(figure) if figure[0].isdigit() else _words_value(figure)
            if value is not None:
                found.add((float(value), bound))
    return found


# The asker's own age, given as the case the law is applied to: "If you are seventeen, …", "since your son is only
# 15": a person, then the age alone or in years.
_APPLIED_AGE = re.compile(
    rf"\b(?:if|when|once|since|as|because|now\s+that)\s+(?:you|he|she|they|I|we|(?:your|my|our|his|her|their)\s+"
    rf"(?:child|son|daughter|kid|boy|girl|brother|sister|baby|grandchild|nephew|niece|ward))\s+"
    rf"(?:are|is|am|was|were|turns?|reach(?:es)?)\s+(?:now\s+|only\s+|already\s+|just\s+)?"
    rf"(?P<n>\d{{1,3}}|(?:{_NUMBER_WORD})(?:[\s-]+(?:{_NUMBER_WORD}))*)(?:\s+years?(?:\s+old|\s+of\s+age)?)?\b"
    rf"(?!\s*(?:days?|weeks?|months?|hours?|per|%|percent|dollars?|years?\s+(?:of\s+service|in)))",
    re.I,
)
_AGE_WORDS = re.compile(r"\bage\b|\byears\s+(?:old|of\s+age)\b", re.I)
# A case the provision forbids does not admit an age the sentence grants leave to, nor a case it permits one the
# sentence forbids ("If you are fifteen, you may be employed" against "no employer shall employ … under sixteen").
_FORBIDS = re.compile(r"\bno\b[^.;]{0,200}?\b(?:shall|may)\b|\b(?:shall|may|must)\s+not\b|\bcannot\b", re.I)
_PERMITS = re.compile(r"\b(?:may|can|could|entitled|allowed|permitted)\b(?!\s+not\b)", re.I)
_ADMITS = {
    "at least": lambda v, b: v >= b,
    "more than": lambda v, b: v > b,
    "at most": lambda v, b: v <= b,
    "less than": lambda v, b: v < b,
}


def applied_ages(sentence: str, provision: str) -> set[float]:
    """The ages the sentence applies the law to ("If you are seventeen, …") that a subsection of the provision
    admits: one that names an age ("the age of", "years old") and bounds it, and whose every bound the age meets
    ("under the age of eighteen years but not younger than sixteen years" admits seventeen); where several
    subsections bound ages, only one bounded on both sides, since one bound alone may be another case's ("no
    employer shall employ … under the age of sixteen" beside "a contract … with an apprentice below the age of
    eighteen …"). Such an age is the asker's case, not a figure the provision must state; one no subsection admits
    ("if you are fifteen" against "of or over the age of sixteen") stays a fact to check. A subsection that forbids
    does not admit the age of a sentence that forbids nothing, nor one that permits that of a sentence that only
    forbids."""
    ages = set()
    for match in _APPLIED_AGE.finditer(sentence):
        figure = match.group("n")
        value = float(figure) if figure[0].isdigit() else _words_value(figure)
        if value is not None and 0 < value <= 120:
            ages.add(float(value))
    if not ages:
        return set()
    parts = [part for part in SUBSECTION_MARK.split(provision) if _AGE_WORDS.search(part)]
    cases = [(part, bounds) for part in parts if (bounds := _bounds(part))]
    if len(cases) > 1:  # several cases: only one bounded on both sides ("under … but not younger than …") is told apart
        cases = [(part, bounds) for part, bounds in cases if len({_SIDE[b] for _, b in bounds}) == 2]
    permits, forbids = bool(_PERMITS.search(sentence)), bool(_FORBIDS.search(sentence))
    admitted = set()
    for part, bounds in cases:
        part_permits, part_forbids = bool(_PERMITS.search(part)), bool(_FORBIDS.search(part))
        if (not forbids and part_forbids and not part_permits) or (
            forbids and not permits and part_permits and not part_forbids
        ):
            continue  # a sentence that forbids nothing is not the case a prohibition sets apart
        admitted |= {a for a in ages if all(_ADMITS[b](a, v) for v, b in bounds)}
    return admitted


def misbounded(sentence: str, provision: str) -> list[str]:
    """Figures the sentence bounds otherwise than the provision does: "over 16" where the provision says "of or over
    the age of sixteen" (sixteen itself is in or out), "less than two years" for "not exceeding two years". Only
    a figure the provision bounds from the same side is compared; a figure it states without a bound, or bounds
    from the other side (a negation may turn a bound round: "no one under 18" is "18 or over"), is left to the
    other checks."""
    given = _bounds(provision)
    missing = []
    for value, bound in sorted(_bounds(sentence)):
        same_side = {b for v, b in given if v == value and _SIDE[b] == _SIDE[bound]}
        if same_side and bound not in same_side:
            missing.append(f"{bound} {_fmt(value)}")
    return missing


def missing_facts(sentence: str, provision: str, identity: str = "") -> list[str]:
    """The facts in ``sentence`` that ``provision`` does not state (empty: every fact is there). ``identity`` is how
    the provision is cited (its instrument's title, section and heading): the numbers and dates in it may be named
    ("Section 65 of the Constitution of Zimbabwe Amendment (No. 20) Act, 2013") without the text repeating them."""
    claim, source = facts(sentence), facts(f"{provision}\n{identity}" if identity else provision)
    # A number with a unit must occur with that unit ("ten years" is not "level 10"); a bare number by value. The
    # provision's "a month's notice" states one month; a claim's "a month" is a fact only as a period ("within a
    # month" against fourteen days), not in "once a month" or "a month's rent".
    stated = source.numbers | {(1.0, UNIT_WORDS[u.lower()]) for u in _ARTICLE_UNIT.findall(provision)}
    source_values = {value for value, _ in stated}
    periods = {(1.0, UNIT_WORDS[u.lower()]) for u in _ARTICLE_PERIOD.findall(without_references(sentence))}
    # "for every year" is a rate per one year: against "one month's wages for every two years" it changes the figure.
    stated |= {(1.0, UNIT_WORDS[u.lower()]) for u in _EACH_UNIT.findall(provision)}
    stated |= {(1.0, unit) for word, unit in _PERIODIC.items() if re.search(rf"\b{word}\b", provision, re.I)}
    periods |= {(1.0, UNIT_WORDS[u.lower()]) for u in _RATE_PERIOD.findall(without_references(sentence))}
    bare_values = {value for value, unit in stated if not unit}
    # An age the sentence applies the law to, within a case the provision bounds, is the asker's, not the law's.
    applied = applied_ages(sentence, provision)
    stated |= {(age, unit) for age in applied for unit in ("", "year")}
    source_values |= applied
    missing = [
        _fmt(value) + (f" {unit}" if unit else "")
        for value, unit in sorted(claim.numbers | periods)
        # "three times" counts occasions the provision may count in other words ("three periods of leave").
        if ((value, unit) not in stated and not (unit == "times" and value in bare_values)
            if unit else value not in source_values)
    ]  # fmt: skip
    missing += miscounted(sentence, provision)
    missing += misbounded(sentence, provision)
    missing += sorted(claim.months - source.months)
    # Bodies only from the text: "the Police must pay" needs a provision that names the Police, whatever the Act.
    source_lower = " ".join(provision.lower().split())
    missing += sorted(b for b in claim.bodies if b not in source_lower)
    missing += [kind for kind, said in _PENALTIES.items() if said.search(sentence) and not said.search(provision)]
    kinds = {w.lower() for w in _BODY_WORDS.findall(f"{provision}\n{identity}")}
    kinds |= {kind for kind, said in _BODY_ACTS.items() if said.search(provision)}
    named = {word for body in claim.bodies for word in body.split()}  # "the Rent Board": checked whole, above
    missing += sorted({w.lower() for w in _BODY_WORDS.findall(sentence)} - kinds - named)
    if claim.percent and claim.numbers and not source.percent and not any(u == "percent" for _, u in claim.numbers):
        missing.append("per cent")
    if claim.currency and claim.numbers and not source.currency and not any(u == "currency" for _, u in claim.numbers):
        missing.append("currency")
    return missing


def _fmt(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)
