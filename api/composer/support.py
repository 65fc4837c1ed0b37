"""Does a provision support a sentence about the law? Hard facts first, then closeness of meaning.

- Facts: every number, amount, age, period, percentage, date and named public body in the sentence must occur in the
  provision, and so must the kind of penalty (imprisonment, a fine) and of body ("the labour court") it names.
  Numbers compare by value, so "18" matches "eighteen", "5%" matches "five per cent", "$1 000" matches "1,000
  dollars"; references ("section 3(1)", "Chapter 5:11", "[2]", "Act 5 of 2001") are not facts.
- Meaning: the share of the sentence's content words (light stems, a few legal synonyms folded) found in the best
  window of one to three consecutive sentences of the provision. ``SUPPORT_THRESHOLD`` was chosen on the labelled
  examples in ``tests/data/claim_support.jsonl`` (``python benchmarks/claim_support.py`` prints the sweep).
- Topic: a sentence that carries one of the question's rare words ("student" in "What interest is charged on student
  loans?") must cite a provision that speaks of it (or of a legal term the lay-term thesaurus gives for it), in its
  text, title or heading. A rate copied from a section on loans to councils is not the rate of a student loan, however
  many of the section's words the sentence repeats. The caller says which words are the question's topic
  (``api.composer.answerability.topic_words``: rarity needs the corpus).

Pure functions over text: the verifier and the benchmark call the same code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from api.composer.jurisdiction import JURISDICTION
from api.composer.polarity import imposes_discretion, opposite
from api.text.words import stem

SUPPORT_THRESHOLD = 0.5
WINDOW_UNITS = 3

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
_MULTIPLIERS = {"double": 2.0, "twice": 2.0, "treble": 3.0, "triple": 3.0, "thrice": 3.0}
_NUMBER_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES, "one"], key=len, reverse=True))
# "and" joins number words only after a scale ("one hundred and five"); elsewhere it joins two numbers ("sixteen- and
# seventeen-year-olds" are 16 and 17, not 33).
_AFTER_SCALE = "".join(f"(?<={scale}{gap})" + "|" for scale in ("hundred", "thousand", "million") for gap in (" ", "-"))
_WORD_NUMBER = re.compile(
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
_REFERENCE = re.compile(
    r"\[\d{1,3}\]"
    r"|\b(?:sections?|subsections?|ss?\.?|secs?\.?|paragraphs?|paras?\.?|subparagraphs?|regulations?|regs?\.?|"
    r"rules?|articles?|arts?\.?|schedules?|parts?|chapters?|chap\.?|cap\.?|clauses?|items?)"
    r"\s*\(?\d+[A-Za-z]?\)?(?:\s*[:.]\s*\d+)?(?:\s*\(\w{1,4}\))*"
    rf"(?:\s*(?:,|and|or|to|-|–)\s*\(?\d+{_NO_UNIT}[A-Za-z]?\)?(?:\s*\(\w{{1,4}}\))*)*"
    rf"|\((?:\d{{1,3}}{_NO_UNIT}[A-Za-z]?|[a-z]{{1,4}})\)"
    r"|\b(?:No\.?|Number)\s*\d+\s*of\s*\d{4}"
    r"|\b(?:Act|Acts|Ordinance|Statutory Instrument|S\.I\.)\s+\d+\s+of\s+\d{4}"
    r"|\[Chapter\s*\d+:\d+\]|\bChapter\s*\d+:\d+"
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

_STOP = frozenset(
    "a an and are as at be been being by for from has have had how i in into is it its of on or so that the their "
    "then there these this those to was were what when where which who whom why with do does did can my me we you "
    "your our they them he she his her also such any all other under per than only yes".split()
)
# Words that say where a claim comes from rather than what it claims.
_META = (
    frozenset(
        "section sections subsection paragraph act acts chapter law laws legislation provision provisions provide "
        "provides provided state states stated say says according set out sets accordance note noted specifically "
        "explicitly clearly clear stipulate stipulates indicate indicates mention mentions document documents source "
        "sources".split()
    )
    | JURISDICTION.place_words
)
# Legal synonyms folded to one form so a faithful paraphrase is not scored as unsupported.
_FOLD = {
    "must": "shall", "required": "shall", "require": "shall", "obliged": "shall", "mandatory": "shall",
    "cannot": "not", "can't": "not", "prohibited": "not", "forbidden": "not", "never": "not", "no": "not",
    "allowed": "may", "permitted": "may", "entitled": "may", "able": "may",
    "marry": "marri", "married": "marri", "marriage": "marri", "marriages": "marri", "marrying": "marri",
    "minimum": "least", "younger": "under", "below": "under", "older": "over", "above": "over", "exceed": "over",
    "exceeds": "over", "exceeding": "over", "more": "over", "less": "under", "fewer": "under",
    "employee": "employ", "employees": "employ", "employer": "employ", "employers": "employ", "employment": "employ",
    "employed": "employ", "worker": "employ", "workers": "employ",
    "dismiss": "dismiss", "dismissed": "dismiss", "dismissal": "dismiss", "fired": "dismiss",
    "years": "year", "yrs": "year", "months": "month", "days": "day", "weeks": "week", "aged": "age", "old": "age",
    "fine": "fine", "fined": "fine", "penalty": "fine", "imprisonment": "imprison", "imprisoned": "imprison",
    "prison": "imprison", "jail": "imprison", "offence": "offence", "offense": "offence", "guilty": "offence",
    "crime": "offence", "licence": "licence", "license": "licence", "licensed": "licence", "licences": "licence",
    "person": "person", "persons": "person", "people": "person", "individual": "person", "anyone": "person",
    "someone": "person", "nobody": "person",
    "sold": "transfer", "sell": "transfer", "sells": "transfer", "selling": "transfer", "sale": "transfer",
    "alienated": "transfer", "alienate": "transfer", "transferred": "transfer", "transfers": "transfer",
    "business": "undertaking", "company": "undertaking", "firm": "undertaking", "undertakings": "undertaking",
    "owner": "owner", "owners": "owner", "transferee": "owner", "buyer": "owner", "purchaser": "owner",
} | JURISDICTION.folds  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _stem(word: str) -> str:
    return _FOLD.get(word) or stem(word)


def content_terms(text: str) -> set[str]:
    """Meaning-bearing word stems: no function words, no words about sources, no numbers (facts check those); a
    possessive is its noun ("the Minister's permission": "minister")."""
    words = [w.removesuffix("'s") for w in _WORD.findall(_REFERENCE.sub(" ", text).lower().replace("’", "'"))]
    return {_stem(w) for w in words if w not in _STOP and w not in _META and not w[0].isdigit()}


QUESTION_FILLER = frozenset(
    "about much many need needed needs allowed happen happens happened get gets got still just really want wants "
    "know tell possible legal lawful okay ok right way ways thing things".split()
)
"""Words of how a question is asked rather than what it is about: never a subject, never a topic to suggest."""


def topic_terms(text: str) -> set[str]:
    """The content stems of ``text`` less the words of how a question is asked (``QUESTION_FILLER``)."""
    return content_terms(text) - {stem for word in QUESTION_FILLER for stem in content_terms(word)}


Topic = Mapping[str, frozenset[str]]
"""The question's rare words, each with the legal terms the lay-term thesaurus gives for it, any of which shows it in
a provision as well as it does itself ("boss": "employer"; "lawyer": "legal practitioner", both words)."""


def same_family(a: str, b: str) -> bool:
    """Two stems of one word family: equal, or the shorter (four letters or more) begins the longer but for at most
    its last letter ("evict" "eviction", "possess" "possession", "tenant" "tenancy"; not "govern(ment)" "governor",
    "customer" "customary"). The stemmer is deliberately small; a suffix must not fail a sentence."""
    if a == b:
        return True
    short = min(a, b, key=len)
    return len(short) >= 4 and len(os.path.commonprefix([a, b])) >= max(4, len(short) - 1)


def _shown(stems: set[str], terms: set[str]) -> bool:
    """Every stem is in ``terms``, by family."""
    return bool(stems) and all(term in terms or any(same_family(term, t) for t in terms) for term in stems)


def off_topic(sentence: str, provision: str, topic: Topic) -> list[str]:
    """The question's topic words that ``sentence`` carries and ``provision`` never mentions, by itself or by a legal
    equivalent (every word of one); empty when the provision is about what the sentence applies it to. The caller
    adds the provision's title and heading to ``provision`` (``support`` does)."""
    return _strays(content_terms(sentence), content_terms(provision), topic) if topic else []


def _strays(said: set[str], source: set[str], topic: Topic) -> list[str]:
    missing = []
    for word, equivalents in topic.items():
        if not _shown({_stem(word)}, said):
            continue
        if not any(_shown(terms, source) for terms in [{_stem(word)}, *map(content_terms, equivalents)]):
            missing.append(word)
    return missing


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


def without_references(text: str) -> str:
    """``text`` with references to provisions and instruments blanked out ("section 3(1)", "(a)", "Chapter 5:16"),
    so that what numbers are left are facts about the law."""
    text = text.replace("’", "'").replace("\u2011", "-").replace("\u2013", "-")
    text = _ACT_YEAR.sub(r"\1\2", text)  # "the Labour Act, 2004": the year names the Act
    return _REFERENCE.sub(" ", text)


_UNIT_WORDS = {
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
        return _UNIT_WORDS.get(word, "")
    return ""


def _restates(bracketed: str) -> bool:
    """Whether a bracketed piece is a number (in digits or words), not a list label such as "(a)" or "(iv)"."""
    inner = bracketed.strip().strip("()").strip()
    return (
        bool(re.fullmatch(r"[\d.,]+", inner)) or _words_value(inner) is not None and bool(_WORD_NUMBER.fullmatch(inner))
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
    for match in _WORD_NUMBER.finditer(cleaned):
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
        if match.group(0) in _ORDINALS:
            found.add((float(_ORDINALS[match.group(0)]), ""))
        elif match.group(0) in _MULTIPLIERS:  # "double the ordinary rate" is "two times" it
            found.add((_MULTIPLIERS[match.group(0)], "times"))
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


def missing_facts(sentence: str, provision: str, identity: str = "") -> list[str]:
    """The facts in ``sentence`` that ``provision`` does not state (empty: every fact is there). ``identity`` is how
    the provision is cited (its instrument's title, section and heading): the numbers and dates in it may be named
    ("Section 65 of the Constitution of Zimbabwe Amendment (No. 20) Act, 2013") without the text repeating them."""
    claim, source = facts(sentence), facts(f"{provision}\n{identity}" if identity else provision)
    # A number with a unit must occur with that unit ("ten years" is not "level 10"); a bare number by value. The
    # provision's "a month's notice" states one month; a claim's "a month" is a fact only as a period ("within a
    # month" against fourteen days), not in "once a month" or "a month's rent".
    stated = source.numbers | {(1.0, _UNIT_WORDS[u.lower()]) for u in _ARTICLE_UNIT.findall(provision)}
    source_values = {value for value, _ in stated}
    periods = {(1.0, _UNIT_WORDS[u.lower()]) for u in _ARTICLE_PERIOD.findall(without_references(sentence))}
    missing = [
        _fmt(value) + (f" {unit}" if unit else "")
        for value, unit in sorted(claim.numbers | periods)
        if ((value, unit) not in stated if unit else value not in source_values)
    ]
    missing += sorted(claim.months - source.months)
    # Bodies only from the text: "the Police must pay" needs a provision that names the Police, whatever the Act.
    source_lower = " ".join(provision.lower().split())
    missing += sorted(b for b in claim.bodies if b not in source_lower)
    missing += [kind for kind, said in _PENALTIES.items() if said.search(sentence) and not said.search(provision)]
    kinds = {w.lower() for w in _BODY_WORDS.findall(f"{provision}\n{identity}")}
    named = {word for body in claim.bodies for word in body.split()}  # "the Rent Board": checked whole, above
    missing += sorted({w.lower() for w in _BODY_WORDS.findall(sentence)} - kinds - named)
    if claim.percent and claim.numbers and not source.percent and not any(u == "percent" for _, u in claim.numbers):
        missing.append("per cent")
    if claim.currency and claim.numbers and not source.currency and not any(u == "currency" for _, u in claim.numbers):
        missing.append("currency")
    return missing


def _fmt(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


# A provision's sentences end at a line break, after . ; : or before a subsection marker "(2) ".
_SUBSECTION_MARK = r"\(\d{1,3}[A-Z]?\)\s"  # "(2) ", a subsection's number (not a list item's "(a)")
_UNIT_SPLIT = re.compile(rf"\n+|(?<=[.;:])\s+(?=[(\"“A-Z0-9])|\s+(?={_SUBSECTION_MARK})")


_REFERRING = re.compile(r"\b(?:sub)?(?:sections?|paragraphs?|regulations?|rules?|articles?|items?)$", re.I)


def provision_units(text: str) -> list[tuple[int, int]]:
    """[start, end) offsets of the provision's sentences and numbered items, in order; "in contravention of
    subsection (1) shall be void" is one sentence, not a sentence and an item (1)."""
    units, start = [], 0
    for match in _UNIT_SPLIT.finditer(text):
        if "\n" not in match.group(0) and _REFERRING.search(text[max(0, match.start() - 20) : match.start()]):
            continue
        if text[start : match.start()].strip():
            units.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        units.append((start, len(text)))
    return [(a + len(text[a:b]) - len(text[a:b].lstrip()), b - (len(text[a:b]) - len(text[a:b].rstrip())))
            for a, b in units]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Support:
    score: float
    """Share of the sentence's content words found in ``span`` (1.0 when the sentence has none)."""
    span: tuple[int, int]
    """[start, end) of the best window in the provision: a verbatim span to quote."""
    missing: tuple[str, ...]
    """Facts of the sentence the provision does not state."""
    threshold: float = SUPPORT_THRESHOLD
    opposite: bool = False
    """The sentence says the opposite of the clause it shares most words with (``api.composer.polarity``)."""
    off_topic: tuple[str, ...] = ()
    """The question's topic words the sentence applies the provision to and the provision never mentions."""

    @property
    def supported(self) -> bool:
        return not self.missing and not self.opposite and not self.off_topic and self.score >= self.threshold


_FACT_CLAUSE = re.compile(r"[,;]\s+|\s+(?:and|but|or|whereas)\s+(?=\w+\s+\w+\s+\w+)")


_NUMBERING = re.compile(r"^\s*(?:\(\w{1,4}\)\s*|\d+[A-Z]?\.\s*)+")
_SUBSECTION = re.compile(rf"\s*{_SUBSECTION_MARK}")  # "(2) A tenant who …", not a heading or a list item
_LEAD_IN = re.compile(r"[:—–-]\s*$")
_SUBJECT_SKIP = frozenset("every each no none person".split())


def _subject(text: str) -> str:
    """The first meaning-bearing word of a clause, as who or what it speaks of ("A tenant who wishes …": "tenant");
    empty for a clause that opens otherwise ("Within fourteen days …")."""
    for word in _WORD.findall(_NUMBERING.sub("", text).lower()):
        if word in _STOP or word in _SUBJECT_SKIP:
            continue
        return _stem(word) if word[0].isalpha() else ""
    return ""


def _misplaced(
    sentence: str, provision: str, units: list[tuple[int, int]], unit_terms: list[set[str]], identity: str
) -> list[str]:
    """Facts the provision states, but not where it says what the sentence says about them: "Within two months
    after the lease ends, the landlord shall refund the deposit" takes "two months" from the deposit cap, when the
    refund clause says fourteen days. Each clause of the sentence that states a fact is matched to the provision's
    sentences that share most of its words, its figures left out (with the ones on either side: a list's lead-in and
    its items); one of them must state the fact. Among subsections that tie, the ones opening with the clause's own
    subject are read alone. A clause that shares no word with any is left to the whole provision."""
    for clause in _FACT_CLAUSE.split(without_references(sentence)):  # "the Labour Act, 2004" keeps its year out of it
        if facts(clause).empty:
            continue
        terms = content_terms(_WORD_NUMBER.sub(" ", clause))  # its figures are what is checked, not what places it
        overlaps = [len(terms & unit) for unit in unit_terms]
        most = max(overlaps, default=0)
        if not most:
            continue
        tied = [k for k, overlap in enumerate(overlaps) if overlap == most]
        # Sentences that share the same words but speak of different people ("A landlord who wishes to terminate …
        # shall give … three months", "A tenant who wishes to terminate … one month"): the one whose subject is the
        # clause's own is where its facts must be, not beside it.
        said_of, text = _subject(clause), {k: provision[units[k][0] : units[k][1]] for k in tied}
        subsections = all(_SUBSECTION.match(t) for t in text.values())
        own = [k for k in tied if subsections and said_of and _subject(text[k]) == said_of]
        gaps = []
        if own and len(own) < len(tied):  # only its own sentence, and the items of its list if it leads one in
            spans = [(k, k + 1 if _LEAD_IN.search(text[k]) else k) for k in own]
        else:  # each with the sentences either side: a list's lead-in and its items
            spans = [(max(0, k - 1), k + 1) for k in tied]
        for first, last in spans:
            place = provision[units[first][0] : units[min(len(units) - 1, last)][1]]
            gaps.append(missing_facts(clause, place, identity))
        if all(gaps):
            return [f"{fact} (said of something else)" for fact in min(gaps, key=len)]
    return []


_QUOTE_MARKS = "\"'“”‘’"
_NOT_TERMS = frozenset("this that it which what who whom whose there here".split())
# A provision's definition: a quoted term, then "means" (an interpretation section's form).
_DEFINITION = re.compile(r"[\"“‘']([^\"”’'\n]{1,60})[\"”’']\s+means\s+([^;\n]+)", re.I)
# A sentence that gives a term's meaning: "'Tenant' means …", "Under section 2, an employee is defined as …".
_DEFINES = re.compile(
    r"(?:^|,\s*)(?:(?:the\s+)?term\s+|an?\s+|the\s+)?([\"“‘']?)([A-Za-z][\w -]{0,58}?)\1?[\"”’']?\s+"
    r"(?:means|is\s+defined\s+as)\s+(.+)$",
    re.I,
)


def _term(text: str) -> str:
    """A defined term as written, for comparing: no stemming ("employer" and "employee" share a stem)."""
    words = text.strip(_QUOTE_MARKS + " ").lower().split()
    return " ".join(w.removesuffix("s") for w in words if w not in ("a", "an", "the"))


def _misdefined(sentence: str, provision: str) -> list[str]:
    """A term given the meaning the provision gives another term: "'Employer' means a person who works for another
    person for remuneration" is the employee's definition, every word of it in a section that also defines "employer".
    The sentence's meaning must be closer to its own term's definition than to any other the provision gives; a term
    the provision does not define, with another term's definition word for word, is the same slip."""
    said = _DEFINES.search(sentence.strip().rstrip("."))
    if said is None:
        return []
    term, body = _term(said.group(2)), content_terms(said.group(3))
    if not term or not body or said.group(2).lower().split()[0] in _NOT_TERMS:  # "This means that …"
        return []
    defined = {_term(t): content_terms(b) for t, b in _DEFINITION.findall(provision)}
    if not defined:
        return []
    share = {t: len(body & b) / len(body) for t, b in defined.items()}
    other = max((t for t in share if t != term), key=lambda t: share[t], default=None)
    if other is None or share[other] < 0.8:
        return []
    if term not in defined or share[term] < share[other]:
        return [f"the meaning of {said.group(2).strip()!r} (the provision gives it to another term)"]
    return []


def without_heading(sentence: str, heading: str) -> str:
    """``sentence`` less the provision's heading where it names the provision by it: "Section 11 (Pledging of girls
    and women in marriage prohibited) provides that any such agreement shall be of no effect" forbids nothing; the
    heading's "prohibited" is the section's name."""
    words = heading.split()
    if len(words) < 2:
        return sentence
    return re.sub(r"\s+".join(map(re.escape, words)), " ", sentence, flags=re.I)


# "… is specified in section 159", "… are set out in Part III": the sentence says where its subject is provided for.
_POINTER = re.compile(
    r"\b(?:is|are|was|were)\s+(?:(?:also|further)\s+)?(?:specified|set\s+out|provided\s+for|dealt\s+with|found|"
    r"contained|laid\s+down|prescribed|stipulated|outlined|governed|covered|addressed|regulated|defined|described|"
    r"listed)\s+(?:in|by|under)\s+(?=(?:the\s+)?(?:section|sections|s\.|ss\.|subsection|part|schedule|article|"
    r"regulation|paragraph)\b)",
    re.I,
)
_REFERS_BACK = re.compile(r"^\W*(?:this|these|that|those|it|they|such|the\s+same|the\s+above)\b", re.I)


def points_at(sentence: str) -> int | None:
    """Where the provision a sentence points to for its subject is named ("… is specified in |section 159"), if it
    is such a sentence."""
    pointer = _POINTER.search(sentence)
    return pointer.end() if pointer else None


def _subject_elsewhere(sentence: str, provision: str, identity: str) -> list[str]:
    """The words of what a sentence says a provision is about ("The penalty for unlawful entry into premises is
    specified in section 159") that the provision never uses: a sentence that points to a provision for a subject
    must name one the provision speaks of, every word of it (half of them made the drugs-premises section "support"
    a pointer for unlawful entry). A subject that refers back ("These requirements are set out in section 41") is the
    sentence before's, checked there."""
    pointer = _POINTER.search(sentence)
    if pointer is None or _REFERS_BACK.match(sentence[: pointer.start()]):
        return []
    absent = content_terms(sentence[: pointer.start()]) - content_terms(provision) - content_terms(identity)
    return [f"{term} (the subject it points to the provision for)" for term in sorted(absent)]


def _copied(sentence: str, provision: str, units: list[tuple[int, int]]) -> bool:
    """Whether ``sentence`` is the provision's own words from the start of one of its sentences or items on (its
    punctuation and spacing aside). Read one clause at a time, a copy that runs over a rule and its proviso can seem
    to say the opposite of either; from a sentence's start, no negation before it is left behind."""
    words = " ".join(_WORD.findall(sentence.lower()))
    if not words:
        return False
    return any(f"{' '.join(_WORD.findall(provision[start:].lower()))} ".startswith(f"{words} ") for start, _ in units)


def support(
    sentence: str,
    provision: str,
    threshold: float = SUPPORT_THRESHOLD,
    identity: str = "",
    topic: Topic | None = None,
    heading: str = "",
) -> Support:
    """How well ``provision`` supports ``sentence``: facts checked over the whole provision (and its ``identity``, see
    ``missing_facts``) and where it says what the sentence says of them (``_misplaced``), meaning over its best window
    of up to ``WINDOW_UNITS`` consecutive sentences, its polarity against the window's closest clause (the
    provision's ``heading``, where the sentence names it, left out of that reading), and the question's ``topic`` words
    the sentence carries over the provision and its identity (``off_topic``)."""
    missing = tuple(missing_facts(sentence, provision, identity))
    wanted = content_terms(sentence)
    units = provision_units(provision) or [(0, len(provision))]
    best, best_span, best_units = -1.0, units[0], (0, 0)
    unit_terms = [content_terms(provision[a:b]) for a, b in units]
    if not missing:
        missing = tuple(
            _misplaced(sentence, provision, units, unit_terms, identity)
            or _misdefined(sentence, provision)
            or _subject_elsewhere(sentence, provision, identity)
        )
    strays = tuple(_strays(wanted, set().union(*unit_terms) | content_terms(identity), topic)) if topic else ()
    for i in range(len(units)):
        window: set[str] = set()
        for j in range(i, min(i + WINDOW_UNITS, len(units))):
            window |= unit_terms[j]
            score = len(wanted & window) / len(wanted) if wanted else 1.0
            span = (units[i][0], units[j][1])
            # Prefer the shorter window on ties: the quote should be as tight as the claim.
            tie = abs(score - best) <= 1e-9 and span[1] - span[0] < best_span[1] - best_span[0]
            if score > best + 1e-9 or tie:
                best, best_span, best_units = score, span, (i, j)
    # Polarity against the window's clause that shares most of the sentence's words (the first on ties).
    clause = max(range(best_units[0], best_units[1] + 1), key=lambda k: (len(wanted & unit_terms[k]), -k))
    claim = without_heading(sentence, heading)
    flipped = opposite(claim, provision[units[clause][0] : units[clause][1]])
    # A duty where the window only gives a discretion: read over the whole window, since a duty in the clause beside
    # the closest one ("(2) … must acknowledge" after "(1) … may apply") is the window's too.
    flipped = flipped or imposes_discretion(claim, provision[best_span[0] : best_span[1]])
    flipped = flipped and not _copied(sentence, provision, units)
    return Support(round(best, 4), best_span, missing, threshold, flipped, strays)
