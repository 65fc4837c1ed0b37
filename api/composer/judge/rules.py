"""The rules judge: hard facts first, then closeness of meaning, polarity and topic, composed into one verdict.

``support`` reads a sentence against a provision with the parts of this package (``facts``, ``meaning``,
``polarity``, ``conditions``, ``limbs``, ``parties``, ``cases``, ``topic``); ``RulesJudge`` is it behind the
``ClaimJudge`` seam (``api.composer.judge.judge``), the default judge. The learned judges take its hard checks
(facts, topic) on top of their own verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .cases import (
    CLAIM_JOINS,
    declared_as_fact,
    despite_excepted,
    offence_denied,
    outcome_turned,
    permits_supposed,
    supposition_as_fact,
    waits_for_deadline,
)
from .conditions import dropped_condition, dropped_item_condition
from .facts import facts, missing_facts
from .limbs import (
    ITEM_MARK,
    dropped_requirement,
    items_named,
    mixed_items,
    mixed_subsections,
    subsections_naming,
)
from .meaning import (
    SUPPORT_THRESHOLD,
    WORD,
    anchor_elsewhere,
    best_window,
    chooser_elsewhere,
    content_terms,
    in_its_words,
    misdefined,
    misplaced,
    provision_units,
    scattered,
    subject_elsewhere,
)
from .parties import party_faults
from .polarity import (
    imposes_discretion,
    opposite,
    requires_factor,
    without_leading_condition,
)
from .topic import Topic, topic_strays


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
    """The sentence says the opposite of the clause it shares most words with (``api.composer.judge.polarity``)."""
    off_topic: tuple[str, ...] = ()
    """The question's topic words the sentence applies the provision to and the provision never mentions."""
    dropped: tuple[str, ...] = ()
    """The words of a condition the closest clause states its rule under and the sentence leaves out
    (``api.composer.judge.conditions``)."""

    @property
    def supported(self) -> bool:
        return (
            not self.missing
            and not self.opposite
            and not self.off_topic
            and not self.dropped
            and self.score >= self.threshold
        )


def without_heading(sentence: str, heading: str) -> str:
    """``sentence`` less the provision's heading where it names the provision by it: "Section 11 (Pledging of girls
    and women in marriage prohibited) provides that any such agreement shall be of no effect" forbids nothing; the
    heading's "prohibited" is the section's name."""
    words = heading.split()
    if len(words) < 2:
        return sentence
    return re.sub(r"\s+".join(map(re.escape, words)), " ", sentence, flags=re.I)


_ITEM = re.compile(r"\s*(?:or\s+|and\s+)?\([a-z]{1,4}\)")
_LEAD_IN = re.compile(r"[:—–-]\s*$")
# Where a list of parallel items opens after its lead-in ("… and liable— (e) if …"): a dash or colon before a mark.
_LIST_OPENS = re.compile(r"[—–:-]\s*\(\w{1,4}\)\s")


def _with_lead_in(provision: str, units: list[tuple[int, int]], k: int) -> str:
    """Sentence ``k`` of the provision, with the lead-in it completes when it is a list's item ("he or she may—"
    before "(a) retain the goods; or (b) return them"): an item says what its lead-in's "may" or "shall" governs."""
    return _lead_in_of(provision, units, k)[0]


def _lead_in_of(provision: str, units: list[tuple[int, int]], k: int) -> tuple[str, int]:
    """``_with_lead_in``'s text, and the index of the provision's sentence it starts with (its lead-in's, or ``k``)."""
    first = k
    while first > 0 and _ITEM.match(provision[units[first][0] : units[first][1]]):
        lead = provision[units[first - 1][0] : units[first - 1][1]]
        if _LEAD_IN.search(lead):
            return f"{lead} {provision[units[k][0] : units[k][1]]}", first - 1
        first -= 1
    return provision[units[k][0] : units[k][1]], k


def _copied(sentence: str, provision: str, units: list[tuple[int, int]]) -> bool:
    """Whether ``sentence`` is the provision's own words from the start of one of its sentences or items on (its
    punctuation and spacing aside). Read one clause at a time, a copy that runs over a rule and its proviso can seem
    to say the opposite of either; from a sentence's start, no negation before it is left behind."""
    words = " ".join(WORD.findall(sentence.lower()))
    if not words:
        return False
    return any(f"{' '.join(WORD.findall(provision[start:].lower()))} ".startswith(f"{words} ") for start, _ in units)


_QUOTED = re.compile(r"[“\"]([^”\"]+)[”\"]")
QUOTE_WORDS = 6


def _quotes_verbatim(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` quotes the provision word for word (at least ``QUOTE_WORDS`` words in quotation marks,
    found in it in that order): a quotation shows the law's own words, its conditions where they stand in it."""
    said = [" ".join(WORD.findall(quoted.lower())) for quoted in _QUOTED.findall(sentence)]
    text = " ".join(WORD.findall(provision.lower()))
    return any(len(words.split()) >= QUOTE_WORDS and words in text for words in said)


def _dropped(
    sentence: str,
    provision: str,
    units: list[tuple[int, int]],
    k: int,
    provision_terms: set[str],
    item_at: int | None = None,
    own: frozenset[tuple[float, str]] = frozenset(),
) -> tuple[str, ...]:
    """``dropped_condition`` of ``sentence`` against the provision's sentence ``k`` read with the lead-in it
    completes; the other items of that list are its siblings, the rest of the provision (less the subsections that
    name sentence ``k``'s item by its mark, which speak of its case) is elsewhere. With ``item_at``, the start of a
    list item inside sentence ``k``, ``dropped_item_condition`` of that item instead, for the figures ``own`` that
    only it states."""
    clause, first = _lead_in_of(provision, units, k)
    last = k  # the list's last item, when sentence k is one
    while (
        (first < k or item_at is not None)
        and last + 1 < len(units)
        and _ITEM.match(provision[units[last + 1][0] : units[last + 1][1]])
    ):
        last += 1
    # Subsections that name this item by its mark speak of its case: not elsewhere the rule holds without it.
    text = provision
    for start, end in subsections_naming(provision, units[k][0] if item_at is None else item_at):
        text = text[:start] + " " * (end - start) + text[end:]
    elsewhere = text[: units[first][0]] + " " + text[units[last][1] :]
    siblings = provision[units[first][1] : units[k][0]] + " " + provision[units[k][1] : units[last][1]]
    lead = len(clause) - (units[k][1] - units[k][0])
    if item_at is not None:
        at = len(clause) - (units[k][1] - item_at)
        # The item's list opens after its lead-in's dash or colon, in this sentence of the provision or an earlier one.
        lead_in = ""
        opened = _last_list_opening(provision, units[first][0], item_at)
        if opened is not None:
            lead_start = next(a for a, _ in reversed(units) if a <= opened)
            lead_in = provision[lead_start:opened]
        return dropped_item_condition(sentence, clause, at, lead_in, siblings, provision_terms, own)
    return dropped_condition(sentence, clause, elsewhere, siblings, lead, provision_terms)


def _last_list_opening(provision: str, start: int, item_at: int) -> int | None:
    """Where the list holding the item at ``item_at`` opens (its lead-in's dash or colon), searched back from the
    item to the sentence that holds the list's first item, or to the provision's start."""
    for begin in (start, 0):
        opened = [
            found.start() for found in _LIST_OPENS.finditer(provision, begin, item_at + 8) if found.start() < item_at
        ]
        if opened:
            return opened[-1]
    return None


# Where a sentence joins two claims ("… is allowed only where it is customary, and even then it can never replace …"):
# at a semicolon, or a comma and a conjunction that opens a new subject.
_JOINED = re.compile(
    r";\s+|,\s+(?:and|but|while|whereas)\s+(?=(?:(?:even|then|still|also|so|yet)\s+){0,2}"
    r"(?:it|they|he|she|you|this|that|the|a|an|no|neither)\b)"
)
PART_TERMS = 3


def _parts(
    sentence: str, wanted: set[str], window: tuple[int, int], unit_terms: list[set[str]], provision_terms: set[str]
) -> list[tuple[str, int]]:
    """Each claim of a sentence that joins two or more (at "; ", ", and it …", ", but the …"), with the sentence of
    the window that shares most of its words: a sentence may state one rule of a clause faithfully and turn another
    clause's round, and read whole it is compared only with the clause closest to the first. A part with fewer than
    ``PART_TERMS`` meaning-bearing words, or sharing fewer than half of them with any sentence of the window, is
    left to the whole sentence's reading."""
    # A condition put first is no claim of its own ("If you are applying and you are not a close relative, …").
    pieces = [piece for piece in _JOINED.split(without_leading_condition(sentence)) if piece.strip()]
    if len(pieces) < 2:
        return []
    out = []
    for piece in pieces:
        terms = in_its_words(content_terms(piece), provision_terms) & wanted
        if len(terms) < PART_TERMS:
            continue
        k = max(range(window[0], window[1] + 1), key=lambda k: (len(terms & unit_terms[k]), -k))
        if 2 * len(terms & unit_terms[k]) >= len(terms):
            out.append((piece, k))
    return out


def _closest_limb(part: str, clause: str) -> str:
    """The limb of ``clause`` (its rule and a "but …" exception are two) that shares most of ``part``'s words, when
    it shares at least half of them; else the whole clause. "No appeal shall lie from it, but any party may bring
    the proceedings on review" forbids an appeal and allows a review: each claim is read against its own limb."""
    terms = content_terms(part)
    limbs = [limb for limb in CLAIM_JOINS.split(clause) if limb.strip()]
    if len(limbs) < 2 or not terms:
        return clause
    best = max(limbs, key=lambda limb: len(terms & content_terms(limb)))
    return best if 2 * len(terms & content_terms(best)) >= len(terms) else clause


def support(
    sentence: str,
    provision: str,
    threshold: float = SUPPORT_THRESHOLD,
    identity: str = "",
    topic: Topic | None = None,
    heading: str = "",
) -> Support:
    """How well ``provision`` supports ``sentence``: facts checked over the whole provision (and its ``identity``, see
    ``missing_facts``) and where it says what the sentence says of them (``misplaced``), meaning over its best window
    of up to ``WINDOW_UNITS`` consecutive sentences, its polarity against the window's closest clause (the
    provision's ``heading``, where the sentence names it, left out of that reading), and the question's ``topic`` words
    the sentence carries over the provision and its identity (``off_topic``)."""
    missing = tuple(missing_facts(sentence, provision, identity))
    units = provision_units(provision) or [(0, len(provision))]
    unit_terms = [content_terms(provision[a:b]) for a, b in units]
    # The sentence's words as the provision spells them, where a suffix is all that differs.
    provision_terms: set[str] = set().union(*unit_terms)
    wanted = in_its_words(content_terms(sentence), provision_terms)
    if not missing:
        missing = tuple(
            misplaced(sentence, provision, units, unit_terms, identity)
            or misdefined(sentence, provision)
            or subject_elsewhere(sentence, provision, identity)
            or scattered(sentence, provision, units)
            or mixed_items(sentence, provision, units)
            or mixed_subsections(sentence, provision)
            or chooser_elsewhere(sentence, provision)
            or anchor_elsewhere(sentence, provision, identity)
            or party_faults(sentence, provision)
        )
    strays = tuple(topic_strays(wanted, provision_terms | content_terms(identity), topic)) if topic else ()
    best, best_span, best_units = best_window(wanted, units, unit_terms)
    # Polarity against the window's clause that shares most of the sentence's words (the first on ties).
    clause = max(range(best_units[0], best_units[1] + 1), key=lambda k: (len(wanted & unit_terms[k]), -k))
    claim = without_heading(sentence, heading)
    flipped = opposite(claim, provision[units[clause][0] : units[clause][1]])
    # A duty where the window only gives a discretion: read over the whole window, since a duty in the clause beside
    # the closest one ("(2) … must acknowledge" after "(1) … may apply") is the window's too; the closest clause is
    # read with the lead-in it completes, if it is a list's item.
    flipped = flipped or imposes_discretion(
        claim, provision[best_span[0] : best_span[1]], _with_lead_in(provision, units, clause)
    )
    # What a decision-maker may weigh made a requirement ("must have" what "may include" lists).
    flipped = flipped or requires_factor(claim, provision)
    # A sentence joining two claims is read claim by claim too, each against its own clause.
    flipped = flipped or any(
        opposite(part, _closest_limb(part, provision[units[k][0] : units[k][1]]))
        for part, k in _parts(claim, wanted, best_units, unit_terms, provision_terms)
    )
    flipped = flipped and not _copied(sentence, provision, units)
    # Copied or not, a supposition of the closest clause stated as a fact is not what the clause says.
    flipped = flipped or supposition_as_fact(claim, provision[units[clause][0] : units[clause][1]])
    flipped = flipped or permits_supposed(claim, provision[units[clause][0] : units[clause][1]])
    flipped = flipped or despite_excepted(claim, provision)
    flipped = flipped or offence_denied(claim, provision)
    flipped = flipped or outcome_turned(claim, provision, units, unit_terms)
    flipped = flipped or waits_for_deadline(claim, provision)
    flipped = flipped or declared_as_fact(claim, provision)
    # The closest clause, with the lead-in it completes, may give its rule only under a condition the sentence drops.
    dropped: tuple[str, ...] = ()
    if not _quotes_verbatim(claim, provision):
        dropped = _dropped(claim, provision, units, clause, provision_terms)
        dropped = dropped or _figure_dropped(claim, provision, units, clause, provision_terms)
        dropped = dropped or tuple(dropped_requirement(claim, provision))
    return Support(round(best, 4), best_span, missing, threshold, flipped, strays, dropped)


def _figure_dropped(
    claim: str, provision: str, units: list[tuple[int, int]], clause: int, provision_terms: set[str]
) -> tuple[str, ...]:
    """A condition dropped from where the provision states the claim's figures. The clause closest in words may not
    be the one that gives a figure ("at least nine years" shares few words with its clause), and a subsection that
    applies another's item by its mark ("a court sentencing a person under paragraph (e) of subsection (2) to the
    minimum sentence of nine years …") gives its figures only in that item's case.

    Each figure is read once per sentence of the provision and once per list item of the sentences that state one:
    only an item whose figure no other part states (a subsection naming the item aside) is read for its case."""
    figures = {figure for figure in facts(claim).numbers if figure[1]}
    if not figures:
        return ()
    unit_figures = [facts(provision[a:b]).numbers & figures for a, b in units]
    candidates = [(k, at) for k, found in enumerate(unit_figures) if found for at in _item_starts(provision, units[k])]
    for k in dict.fromkeys([clause, *(k for k, found in enumerate(unit_figures) if found)]):
        for at in items_named(provision, units[k][0]):
            candidates.append((next(n for n, (a, b) in enumerate(units) if a <= at < b), at))
    items: dict[int, list[tuple[int, int, frozenset[tuple[float, str]]]]] = {}
    for k, at in dict.fromkeys(candidates):
        if k not in items:
            starts = _item_starts(provision, units[k])
            ends = [*starts[1:], units[k][1]]
            items[k] = [
                (a, b, frozenset(facts(provision[a:b]).numbers & figures)) for a, b in zip(starts, ends, strict=True)
            ]
        mine = next(((a, b, found) for a, b, found in items[k] if a == at), None)
        if mine is None or not mine[2]:
            continue
        # Stated by another item of the same sentence, or by another sentence outside the subsections that apply
        # this item by its mark, a figure is no one item's own.
        own = mine[2] - {f for a, _, found in items[k] if a != at for f in found}
        if own and (stated := {f for n, found in enumerate(unit_figures) if n != k for f in found} & own):
            hidden = subsections_naming(provision, at)
            own -= {
                f
                for n, found in enumerate(unit_figures)
                if n != k and not any(start <= units[n][0] < end for start, end in hidden)
                for f in found & stated
            }
        if own:
            found = _dropped(claim, provision, units, k, provision_terms, item_at=at, own=own)
            if found:
                return found
    return ()


def _item_starts(provision: str, unit: tuple[int, int]) -> list[int]:
    """Where a sentence of the provision and each list item inside it start."""
    a, b = unit
    return list(dict.fromkeys([a, *(a + found.start("open") for found in ITEM_MARK.finditer(provision[a:b]))]))


class RulesJudge:
    """The rules: every fact of the sentence stated in the provision, enough of its meaning covered, the same
    polarity, and no topic of the question the provision never mentions."""

    blocking = False

    def judge(self, sentence: str, provision: str, *, topic: Topic, identity: str = "", heading: str = "") -> Support:
        return support(sentence, provision, identity=identity, topic=topic, heading=heading)
