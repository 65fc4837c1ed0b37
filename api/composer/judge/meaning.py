"""Closeness of meaning: how much of a sentence's meaning a provision covers, and where it says it.

- Coverage: the share of the sentence's content words (light stems, a few legal synonyms folded) found in the best
  window of one to ``WINDOW_UNITS`` consecutive sentences of the provision. ``SUPPORT_THRESHOLD`` was chosen on the
  labelled examples in ``tests/data/claim_support.jsonl`` (``python benchmarks/claim_support.py`` prints the sweep).
- Place: the checks that read the provision where it says what the sentence says: a fact it states of something else
  (``misplaced``), a term given another term's definition (``misdefined``), and a subject the sentence points to the
  provision for that the provision never names (``subject_elsewhere``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Set as AbstractSet
from functools import lru_cache

from api.composer.jurisdiction import JURISDICTION
from api.text.words import stem

from .facts import REFERENCE, UNIT_WORDS, WORD_NUMBER, facts, missing_facts, without_references

SUPPORT_THRESHOLD = 0.5
WINDOW_UNITS = 3
TOGETHER_UNITS = 2

_STOP = frozenset(
    "a an and are as at be been being by for from has have had how i in into is it its of on or so that the their "
    "then there these this those to was were what when where which who whom why with do does did can my me we you "
    "your our they them he she his her also such any all other under per than only yes".split()
    # Words of how a sentence is put rather than what it claims, which a plain-words answer uses where a provision
    # does not: "whether", "instead", "through", "another" (as "other" is), "yours", "doing" (as "do" is). Words
    # of scope ("even", "every", "only") stay: a false sentence often turns on them.
    + "about whether instead through another yours ours theirs anything something doing done".split()
)
# Words that say where a claim comes from rather than what it claims.
_META = (
    frozenset(
        "section sections subsection paragraph act acts chapter law laws legislation provision provisions provide "
        "provides provided state states stated say says according set out sets accordance note noted specifically "
        "explicitly clearly clear stipulate stipulates indicate indicates mention mentions document documents source "
        "sources rule".split()
    )
    | JURISDICTION.place_words
)
# Legal synonyms folded to one form so a faithful paraphrase is not scored as unsupported.
_FOLD = {
    "must": "shall", "required": "shall", "require": "shall", "obliged": "shall", "mandatory": "shall",
    "cannot": "not", "can't": "not", "prohibited": "not", "forbidden": "not", "never": "not", "no": "not",
    "unless": "not",  # "valid unless incapable" is "not valid if incapable"
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
# Plain words for the law's own, folded to the stem of the law's word (a paraphrase in a person's words is not a
# different claim): keep/retain, cancel/rescind, change/vary, stop or end/cease, support/maintain, unable/incapable.
_PLAIN = {
    "keep": "retain", "keeps": "retain", "kept": "retain", "keeping": "retain",
    "cancel": "rescind", "cancels": "rescind", "cancelled": "rescind", "cancelling": "rescind", "canceled": "rescind",
    "change": "vary", "changes": "vary", "changed": "vary", "changing": "vary", "alter": "vary", "alters": "vary",
    "altered": "vary", "variation": "vary", "varied": "vary",
    "stop": "cease", "stops": "cease", "stopped": "cease", "end": "cease", "ends": "cease", "ended": "cease",
    "ceases": "cease", "ceased": "cease", "lose": "cease", "loses": "cease", "losing": "cease",
    "unable": "incapable",
    "support": "maintain", "supports": "maintain", "supported": "maintain", "supporting": "maintain",
    "upkeep": "maintain", "properly": "adequately",
    "replace": "substitute", "replaces": "substitute", "replaced": "substitute", "substitutes": "substitute",
    "fully": "entirely", "completely": "entirely", "wholly": "entirely", "entire": "entirely",
    "vacation": "leave", "view": "opinion", "views": "opinion",
    "lawyer": "practitioner", "lawyers": "practitioner", "attorney": "practitioner",
    "pays": "pay", "paying": "pay", "payment": "pay", "payments": "pay", "payable": "pay",
    "ask": "question", "asks": "question", "asked": "question", "questions": "question",
    "break": "contravene", "breaks": "contravene", "breaking": "contravene", "broke": "contravene",
    "breach": "contravene", "breaches": "contravene", "breached": "contravene", "violate": "contravene",
    "violates": "contravene", "violated": "contravene", "contravenes": "contravene", "contravened": "contravene",
    "contravention": "contravene", "contravening": "contravene",
    "commit": "offence", "commits": "offence", "committed": "offence", "committing": "offence",
    "smaller": "under", "shorter": "under", "lesser": "under", "lower": "under",
    "larger": "over", "longer": "over", "greater": "over", "higher": "over",
}  # fmt: skip
_FOLD |= {word: _FOLD.get(plain) or stem(plain) for word, plain in _PLAIN.items()}
# Plain phrases for one word of the law's ("send them back" is "return them"), read before the words are split.
_PHRASES = (
    (
        re.compile(
            r"\b(?:send|sends|sent|give|gives|gave|hand|hands|handed|pay|pays|paid)\s+"
            r"(?:(?:it|them|the\s+\w+|\w+)\s+)?back\b"
        ),
        " return ",
    ),
    (re.compile(r"\b(?:take|takes|took|taking)\s+up\b"), " acquire "),
    (re.compile(r"\b(?:straight|right)\s+away\b|\bat\s+once\b"), " immediately "),
    (re.compile(r"\b(?:take|takes|took|taking)\s+place\b"), " occur "),
    (re.compile(r"\bin\s+which\s+case\b"), " "),
)
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def folded_stem(word: str) -> str:
    """A word's stem, a legal synonym folded to its one form first."""
    return _FOLD.get(word) or stem(word)


def content_terms(text: str) -> set[str]:
    """Meaning-bearing word stems: no function words, no words about sources, no numbers (facts check those); a
    possessive is its noun ("the Minister's permission": "minister")."""
    return set(_content_terms(text))


@lru_cache(maxsize=16384)  # a provision's sentences are read again by every sentence of an answer judged against it
def _content_terms(text: str) -> frozenset[str]:
    text = REFERENCE.sub(" ", text).lower().replace("’", "'")
    for phrase, word in _PHRASES:
        text = phrase.sub(word, text)
    words = [w.removesuffix("'s") for w in WORD.findall(text)]
    return frozenset(folded_stem(w) for w in words if w not in _STOP and w not in _META and not w[0].isdigit())


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


def in_its_words(wanted: AbstractSet[str], source: AbstractSet[str]) -> set[str]:
    """``wanted`` with each term the provision (its terms ``source``) does not use replaced by one of the same word
    family that it does ("prescribes" for "prescription", "voluntarily" for "voluntary"): the stemmer is deliberately
    small, and a suffix must not make a faithful sentence seem to say something the provision does not."""
    out = set()
    for term in wanted:
        if term in source:
            out.add(term)
            continue
        kin = sorted(known for known in source if _family(term, known))
        out.add(kin[0] if kin else term)
    return out


def best_window(
    wanted: set[str], units: list[tuple[int, int]], unit_terms: list[set[str]]
) -> tuple[float, tuple[int, int], tuple[int, int]]:
    """The window of up to ``WINDOW_UNITS`` consecutive sentences of a provision (``units``, with their content
    terms ``unit_terms``) that holds the largest share of ``wanted``: that share (1.0 when nothing is wanted), the
    window's [start, end) offsets and its first and last sentence."""
    best, best_span, best_units = -1.0, units[0], (0, 0)
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
    return best, best_span, best_units


_UNIT_STEMS = frozenset(folded_stem(word) for word in UNIT_WORDS if word.isalpha())
_HOW = frozenset({"not", "shall", "may", "over", "under", "least", "most", "once", "up"})
_FACT_CLAUSE = re.compile(r"[,;]\s+|\s+(?:and|but|or|whereas)\s+(?=\w+\s+\w+\s+\w+)")


_NUMBERING = re.compile(r"^\s*(?:\(\w{1,4}\)\s*|\d+[A-Z]?\.\s*)+")
_SUBSECTION = re.compile(rf"\s*{_SUBSECTION_MARK}")  # "(2) A tenant who …", not a heading or a list item
_LEAD_IN = re.compile(r"[:—–-]\s*$")
_SUBJECT_SKIP = frozenset("every each no none person".split())


def _subject(text: str) -> str:
    """The first meaning-bearing word of a clause, as who or what it speaks of ("A tenant who wishes …": "tenant");
    empty for a clause that opens otherwise ("Within fourteen days …")."""
    for word in WORD.findall(_NUMBERING.sub("", text).lower()):
        if word in _STOP or word in _SUBJECT_SKIP:
            continue
        return folded_stem(word) if word[0].isalpha() else ""
    return ""


def misplaced(
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
        # Its figures and their units are what is checked, not what places it: "prescribes after six years" must be
        # placed by "judgment debt", not by every item of a list that counts years.
        # Nor do its modal and bound words ("not", "more than", "must"): they say how, not what the figure is of.
        terms = content_terms(WORD_NUMBER.sub(" ", clause)) - _UNIT_STEMS - _HOW
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
        gaps: list[list[str]] = []
        if own and len(own) < len(tied):  # only its own sentence, and the items of its list if it leads one in
            spans = [(k, k + 1 if _LEAD_IN.search(text[k]) else k) for k in own]
        else:  # each with the sentences either side: a list's lead-in and its items
            spans = [(max(0, k - 1), k + 1) for k in tied]
        kinds = {unit for _, unit in facts(clause).numbers if unit}
        for first, last in spans:
            place = provision[units[first][0] : units[min(len(units) - 1, last)][1]]
            # A place that states no figure of the clause's kind ("for the period specified in subsection (1)")
            # says nothing of it, so cannot say something else.
            if kinds and not kinds & {unit for _, unit in facts(place).numbers}:
                gaps.append([])
                continue
            # Only its figures: the kinds of body and penalty it names are read over the whole provision.
            gaps.append([fact for fact in missing_facts(clause, place, identity) if fact[:1].isdigit()])
        if all(gaps):
            return [f"{fact} (said of something else)" for fact in min(gaps, key=len)]
    return []


def scattered(sentence: str, provision: str, units: list[tuple[int, int]]) -> list[str]:
    """Figures of one sentence that the provision states only far apart: "punishable by a fine of up to level ten,
    up to one year in prison, or both" takes level ten from one offence's penalty and one year from another's, each
    in the provision but never together. A sentence's figures with a unit (periods, levels, amounts) state one rule,
    so some run of ``TOGETHER_UNITS`` consecutive sentences of the provision (an item and the next, a lead-in and
    its item) must state them all. A figure the provision states in no single sentence (its identity's, or one split
    over a line) is left out of this reading."""
    wanted = {(value, unit) for value, unit in facts(sentence).numbers if unit}
    if len(wanted) < 2:
        return []
    stated = [facts(provision[a:b]).numbers for a, b in units]
    places = {fact: {k for k, found in enumerate(stated) if fact in found} for fact in wanted}
    placed = {fact: where for fact, where in places.items() if where}
    if len(placed) < 2:
        return []
    span = TOGETHER_UNITS
    for first in range(max(1, len(units) - span + 1)):
        if all(where & set(range(first, first + span)) for where in placed.values()):
            return []
    return [f"{_fmt_fact(fact)} (not stated together with the sentence's other figures)" for fact in sorted(placed)]


def _fmt_fact(fact: tuple[float, str]) -> str:
    value, unit = fact
    number = str(int(value)) if value.is_integer() else str(value)
    return f"{number} {unit}".strip()


# Who a sentence says makes a choice ("the supplier then chooses whether to repair or refund"), and whom a provision
# gives it to ("the supplier, at the direction of the consumer, shall repair … or refund", "at the tenant's option").
_CHOOSES = re.compile(
    r"((?:\b[a-z]+\s+){1,3})(?:chooses|decides|elects|selects|picks)\b"
    r"|\bat\s+(?:the\s+)?((?:[a-z]+\s+){0,2}[a-z]+)['’]s\s+(?:choice|option|election|discretion)\b",
    re.I,
)
_CHOICE_OF = re.compile(
    r"\bat\s+the\s+(?:direction|option|election|choice|discretion)\s+of\s+((?:[a-z-]+\s+){0,3}[a-z-]+)"
    r"|\bat\s+(?:the\s+)?((?:[a-z]+\s+){0,2}[a-z]+)['’]s\s+(?:option|election|choice|discretion)\b"
    r"|((?:\b[a-z]+\s+){1,3})(?:may|shall|must)\s+(?:choose|elect|select)\b",
    re.I,
)


def chooser_elsewhere(sentence: str, provision: str) -> list[str]:
    """The party a sentence says makes a choice, where the provision gives that choice to another: "the supplier
    then chooses whether to repair or replace the goods or refund" against "the supplier at the direction of the
    consumer shall repair or replace … or refund". Read only where the provision says whose choice it is; the words
    just before the choosing (up to three: "the business entity concerned chooses") must name one of those the
    provision gives it to, and a pronoun ("you choose") stands for whoever the provision names."""
    choosers = {
        folded_stem(word)
        for match in _CHOICE_OF.finditer(provision)
        for word in WORD.findall(next(g for g in match.groups() if g).lower())
        if word not in _STOP
    }
    if not choosers:
        return []
    wrong = []
    for match in _CHOOSES.finditer(sentence):
        words = [w for w in WORD.findall(next(g for g in match.groups() if g).lower()) if w not in _STOP]
        named = [w for w in words if w not in _NOT_TERMS and w not in _CHOICE_FILLER]
        if named and not any(folded_stem(w) in choosers for w in named):
            wrong.append(f"{named[-1]} (the provision gives the choice to another)")
    return wrong


_CHOICE_FILLER = frozenset("then also alone itself himself herself themselves freely later first".split())


# The day a period runs from: "counted from the day the patent was granted", "after the date of the marriage".
_RUNS_FROM = re.compile(
    r"\b(?:from|after|since)\s+the\s+(?:day|date|time)\s+(?:on\s+which\s+|when\s+|that\s+|of\s+)?([^,.;:]{3,})",
    re.I,
)
_PERIOD_UNITS = frozenset({"year", "month", "week", "day", "hour"})


def anchor_elsewhere(sentence: str, provision: str, identity: str) -> list[str]:
    """The event a sentence's period runs from, where the provision never speaks of it: "the twenty years are
    counted from the day the patent was granted" against "twenty years from the date on which the application for the
    patent was lodged". A period is a fact with two ends; its figure is checked with the facts, its starting event
    here: each of its meaning-bearing words must be in the provision (by word family). Read only in a sentence that
    states a period."""
    if not any(unit in _PERIOD_UNITS for _, unit in facts(sentence).numbers):
        return []
    source = content_terms(provision) | content_terms(identity)
    absent: list[str] = []
    for match in _RUNS_FROM.finditer(without_references(sentence)):
        event = " ".join(match.group(1).split()[:12])
        for term in sorted(content_terms(event) - source):
            if not any(_family(term, known) for known in source):
                absent.append(f"{term} (the event the period runs from)")
    return absent


def _family(a: str, b: str) -> bool:
    """Two stems of one word family: equal, or the shorter (four letters or more) begins the longer but for at most
    its last letter (the topic check's rule, ``api.composer.judge.topic.same_family``)."""
    if a == b:
        return True
    short = min(a, b, key=len)
    return len(short) >= 4 and len(os.path.commonprefix([a, b])) >= max(4, len(short) - 1)


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


def misdefined(sentence: str, provision: str) -> list[str]:
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


def subject_elsewhere(sentence: str, provision: str, identity: str) -> list[str]:
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
