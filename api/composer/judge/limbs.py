"""Does a sentence give one item of a list the rule another item states?

Many provisions set out parallel cases as a list's items, each with its own rule: "the duration of copyright shall
be, in the case of— (a) a photograph …, fifty years from …; (f) any other literary work, the life of the author and
fifty years …". A sentence that takes its subject from one item and what it says of that subject from another
("copyright in a photograph lasts for the life of the author …") shares nearly all its words with the provision, two
neighbouring items cover it, and yet no item says it. This module reads a sentence as a subject and what is said of
it, finds the items of the provision's lists whose own words (those no sibling item uses) each part carries, and
reports when the subject's item and the said part's item differ and neither carries the other's own words.

What it leaves alone: a sentence with no verb to split it at; a list whose items share every word the sentence
carries (a figure they all state, as "fifty years" above, belongs to no one item); sentences that join two claims
("…; …", ", and …"), which the judge reads claim by claim; and everything outside a list's items, since a
provision's subsections may build on one another ("a person aggrieved by a decision under subsection (1) may
appeal").

``dropped_requirement`` reads the lists whose items hold together ("if …, the employee— (i) …; and (ii) …"): a
sentence whose own condition tells some of them and none of another's words states the rule without that requirement.
"""

from __future__ import annotations

import re
from functools import lru_cache

from api.text.provisions import provision_starts

from .conditions import MARK_IN, named_marks
from .facts import facts
from .meaning import content_terms, in_its_words
from .polarity import forbids, without_leading_condition

# A list's item starts with its mark after a lead-in's dash or colon or the last item's semicolon ("— (a) ",
# "; or (c) ", "; and (iv) "); a subsection's number ("(2) ") ends the list.
ITEM_MARK = re.compile(r"(?P<after>[;:—–-])\s*(?:(?P<joined>or|and)\s+)?(?P<open>\()(?P<mark>[a-z]{1,4})\)\s")
_ITEM_END = re.compile(r";\s|\.\s|:\s|\.$|\s\(\d{1,3}[A-Z]?\)\s")
_ROMAN = re.compile(r"^[ivx]+$")
# A number in brackets after a reference's words ("subsection (2)", "section 109 (4) or (5)") is not a subsection's.
REFERENCE_WINDOW = 24
"""Characters before a bracketed number read for the reference words that make it one."""


def _reference_before(text: str, at: int) -> bool:
    return bool(_REFERENCE_BEFORE.search(text[max(0, at - REFERENCE_WINDOW) : at]))


_REFERENCE_BEFORE = re.compile(r"(?:sections?|paragraphs?|\d|\)|\bor|\band|\bto)\s*$", re.I)
# The verb a plain sentence says something of its subject with; a verb inside a relative clause ("a citizen who
# takes up …") still belongs to the subject.
_VERB = re.compile(
    r"\b(?:lasts?|runs?|is|are|was|were|shall|must|may|can|cannot|will|would|has|have|gets?|becomes?|ends?|"
    r"expires?|applies|apply|continues?|stays?|remains?|needs?|requires?|means|includes?|carries|carry|starts?|"
    r"begins?|commences?|stops?|ceases?|loses?|lose)\b",
    re.I,
)
_RELATIVE = re.compile(r"\b(?:who|whom|whose|which|that|where)\s+(?:\w+\s+){0,2}$", re.I)
_JOINED = re.compile(r";|,\s+(?:and|but|while|whereas)\s", re.I)
OWN_WEIGHT = 2
"""How much of the said part an item alone must hold for the mix to count (a word counts one, a figure two): one
shared word is too little evidence, one figure is the rule's own."""


def _split(sentence: str) -> tuple[str, str] | None:
    """The case a sentence speaks of (a condition put first and its subject) and what it says of it, split at the
    first verb after the condition that is not inside a relative clause."""
    main = without_leading_condition(sentence)
    case = sentence[: len(sentence) - len(main)]
    for verb in _VERB.finditer(main):
        before = main[: verb.start()]
        if not content_terms(before) or _RELATIVE.search(before):
            continue
        return case + before, main[verb.start() :]
    return None


def _lists(provision: str) -> list[tuple[tuple[int, int, str], ...]]:
    """The provision's lists of cases (see ``_all_lists``): items joined by "and" are requirements that hold
    together, not cases, and a sentence may draw on all of them."""
    return [items for items, joined in _all_lists(provision) if not joined]


@lru_cache(maxsize=512)
def _all_lists(provision: str) -> tuple[tuple[tuple[tuple[int, int, str], ...], bool], ...]:
    """The provision's lists, each as its items' [start, end) offsets and marks, and whether its items are joined
    by "and" (requirements that hold together). An item runs to the next item's mark,
    else to its clause's end (the words its list's items share follow: "…; or (d) …; shall be guilty of …"). Roman
    items ("(i)", "(ii)") are a list of their own, nested in or following the lettered one; "(a)", "(i)" or an item
    after a lead-in's dash ("shall be guilty … and liable— (c) …; (d) …", whose lettering goes on from the offence's
    elements) opens a new list."""
    marks = list(ITEM_MARK.finditer(provision))
    items: list[tuple[int, int, str]] = []
    cumulative: set[int] = set()
    opened: set[int] = set()  # items after a lead-in's dash or colon: each opens a list of its own
    for n, found in enumerate(marks):
        start = found.start("open")
        end = len(provision)
        for stop in _ITEM_END.finditer(provision, found.end()):
            if not (stop.group(0).strip().startswith("(") and _reference_before(provision, stop.start())):
                end = stop.start()
                break
        if n + 1 < len(marks):
            end = min(end, marks[n + 1].start())
        items.append((start, end, found.group("mark")))
        if found.group("after") != ";":
            opened.add(start)
        if found.group("joined") == "and":
            cumulative.add(start)
    lists: list[list[tuple[int, int, str]]] = []
    letters: list[tuple[int, int, str]] = []
    romans: list[tuple[int, int, str]] = []
    previous = ""
    for start, end, mark in items:
        # "(i)" after "(h)" is the ninth letter; after anything else it opens roman items.
        if _ROMAN.match(mark) and not (len(mark) == 1 and previous and ord(mark) == ord(previous) + 1):
            if mark == "i" and romans:
                lists.append(romans)
                romans = []
            romans.append((start, end, mark))
            continue
        if (mark == "a" or start in opened) and letters:
            lists.append(letters)
            letters = []
        if romans:
            lists.append(romans)
            romans = []
        letters.append((start, end, mark))
        previous = mark
    lists += [letters, romans]
    return tuple(
        (tuple(found), any(start in cumulative for start, _, _ in found)) for found in lists if len(found) >= 2
    )


def _weight(terms: set[str], figures: set[float]) -> int:
    return len(terms) + OWN_WEIGHT * len(figures)


def mixed_items(sentence: str, provision: str, units: list[tuple[int, int]]) -> list[str]:
    """What ``sentence`` says of one item's case that only another item of the same list states, as the words and
    figures that item holds alone (empty: no such mix)."""
    if _JOINED.search(sentence):
        return []
    split = _split(sentence)
    if split is None:
        return []
    lists = _lists(provision)
    if not lists:
        return []  # most provisions: no list of cases to cross, so nothing more to read
    unit_terms = [content_terms(provision[a:b]) for a, b in units]
    known: set[str] = set().union(*unit_terms)
    said_all = in_its_words(content_terms(split[1]), known) & known
    said_figures = {value for value, _ in facts(split[1]).numbers}
    # The provision's parts a rule may be stated in whole: every list's items, and its sentences that hold none.
    spans = [(a, b) for items in lists for a, b, _ in items]
    parts = [content_terms(provision[a:b]) for a, b in spans]
    parts += [
        terms for (a, b), terms in zip(units, unit_terms, strict=True) if not any(a < e and s < b for s, e in spans)
    ]
    for items in lists:
        texts = [provision[a:b] for a, b, _ in items]
        item_terms = [content_terms(text) for text in texts]
        item_figures = [{value for value, _ in facts(text).numbers} for text in texts]
        every = set().union(*item_terms)
        # The lead-in's words name what every item speaks of ("the duration of copyright shall be, in the case of—").
        lead_start = max((a for a, _ in units if a <= items[0][0]), default=0)
        lead = content_terms(provision[lead_start : items[0][0]])
        case = (in_its_words(content_terms(split[0]), every) & every) - lead
        said = (in_its_words(content_terms(split[1]), every) & every) - lead

        others = [set().union(*(t for j, t in enumerate(item_terms) if j != k)) for k in range(len(items))]
        other_figures = [set().union(*(f for j, f in enumerate(item_figures) if j != k)) for k in range(len(items))]
        said_own = [(said & item_terms[k]) - others[k] for k in range(len(items))]
        case_own = [(case & item_terms[k]) - others[k] for k in range(len(items))]
        figures_own = [(said_figures & item_figures[k]) - other_figures[k] for k in range(len(items))]
        case_items = {k for k in range(len(items)) if case_own[k]}
        said_items = {k for k in range(len(items)) if _weight(said_own[k], figures_own[k]) >= OWN_WEIGHT}
        if len(case_items) != 1 or not said_items:
            continue
        (mine,) = case_items
        named = case_own[mine]
        for k in said_items - {mine}:
            if said_own[mine] or figures_own[mine] or case_own[k]:
                continue
            # Parallel cases each state a rule with its figure (a period, a penalty); items without one are
            # alternatives within one rule ("after— (i) receiving notice …; or (ii) receiving the goods") or the
            # elements of one case ("(c) carried a weapon"), which a sentence may name together in any order.
            if not (item_figures[k] and item_figures[mine]):
                continue
            # An item may apply to others by their marks ("paragraph (a) or (b)").
            if items[mine][2] in named_marks(texts[k]):
                continue
            # Another list, or a sentence of the provision outside any, may say it of the same case: an item can
            # point elsewhere ("for the period specified in subsection (1)") for what another says in full.
            held = len(said_all & item_terms[k])
            if any(named & terms and len(said_all & terms) >= held for terms in parts):
                continue
            stated = sorted(said_own[k]) + sorted(f"{v:g}" for v in figures_own[k])
            return [f"{' '.join(stated)} (stated of another item of the list)"]
    return []


# A subsection's number where it opens one ("(3) A citizen …"), not where a reference names it ("subsection (3)").
_SUBSECTION_AT = re.compile(r"\((\d{1,3}[A-Z]?)\)\s")
_TOP_SUBSECTION = re.compile(r"\(\d{1,3}[A-Za-z]?\)")
# What a case leaves out of itself ("who, by some means other than by voluntary act or marriage, acquires …"): not
# part of the case, so its words say nothing of which case a sentence speaks of.
_EXCLUDED = re.compile(r"\b(?:other|otherwise)\s+than\s+[^,;:.]{1,80}", re.I)
# Where a subsection's case ends and its rule begins.
_CASE_END = re.compile(r"\b(?:shall|must|may|is|are|has|have)\b", re.I)
OPENING_WORDS = 3
"""Words two subsections open with alike ("A citizen of the Republic …"), when they set out parallel cases."""


@lru_cache(maxsize=16)
def subsection_spans(provision: str) -> tuple[tuple[int, int, str], ...]:
    """The provision's subsections ([start, end) and number), as ``api.text.provisions`` reads their markers (a
    number after "subsection", "section 109 (4) or …" is a reference, not a subsection)."""
    marks = [(at, pid[1:-1]) for at, pid in provision_starts(provision, "") if _TOP_SUBSECTION.fullmatch(pid)]
    return tuple(
        (at, marks[n + 1][0] if n + 1 < len(marks) else len(provision), number) for n, (at, number) in enumerate(marks)
    )


def _opening(text: str) -> tuple[str, ...]:
    return tuple(
        word.lower() for word in re.findall(r"[A-Za-z]+", _SUBSECTION_AT.sub(" ", text, count=1))[:OPENING_WORDS]
    )


def mixed_subsections(sentence: str, provision: str) -> list[str]:
    """What ``sentence`` says of one subsection's case that only another subsection states, where the provision's
    subsections set out parallel cases (they open with the same words: "(2) A citizen of full age who, by
    voluntary act other than marriage, acquires … shall immediately cease …; (3) A citizen who acquires by
    marriage … shall cease … one year after …"). The sentence's case must carry words only one subsection's case uses
    (what a case leaves out, "other than …", not counted), and what it says must carry a figure, with another word or
    figure, that another parallel subsection states and the first does not, and nothing only the first says. A
    subsection that names the first ("under subsection (2)") builds on it and is left alone."""
    if _JOINED.search(sentence):
        return []
    split = _split(sentence)
    if split is None:
        return []
    subsections = subsection_spans(provision)
    if len(subsections) < 3:
        return []
    texts = [_EXCLUDED.sub(" ", provision[a:b]) for a, b, _ in subsections]
    terms = [content_terms(text) for text in texts]
    figures = [{value for value, _ in facts(text).numbers} for text in texts]
    every: set[str] = set().union(*terms)
    case = in_its_words(content_terms(_EXCLUDED.sub(" ", split[0])), every) & every
    said = in_its_words(content_terms(split[1]), every) & every
    said_figures = {value for value, _ in facts(split[1]).numbers}
    others = [set().union(*(t for j, t in enumerate(terms) if j != k)) for k in range(len(terms))]
    mine_of = [k for k in range(len(terms)) if (case & terms[k]) - others[k]]
    if len(mine_of) != 1:
        return []
    (mine,) = mine_of
    if (said & terms[mine]) - others[mine]:
        return []  # it says something only its own case's subsection says
    for k, (start, end, _) in enumerate(subsections):
        if k == mine or _opening(provision[start:end]) != _opening(
            provision[subsections[mine][0] : subsections[mine][1]]
        ):
            continue
        if re.search(rf"\bsub-?sections?\s+\({re.escape(subsections[mine][2])}\)", provision[start:end], re.I):
            continue
        # A case described only by the first's words builds on it ("(1) A person who wishes to trade shall apply
        # …; (2) A person who applies shall be notified …"): parallel cases have words of their own.
        verb = _CASE_END.search(texts[k])
        if content_terms(texts[k][: verb.start() if verb else len(texts[k])]) <= terms[mine]:
            continue
        extra, extra_figures = (said & terms[k]) - terms[mine], (said_figures & figures[k]) - figures[mine]
        if extra_figures and _weight(extra, extra_figures) >= OWN_WEIGHT + 1:
            stated = sorted(extra) + sorted(f"{v:g}" for v in extra_figures)
            return [f"{' '.join(stated)} (stated of another subsection's case)"]
    return []


# Items of another subsection named by mark: "paragraph (e) of subsection (2)", "paragraphs (a) and (b) of …"; not
# another section's ("paragraph (a) of subsection (1) of section 9"). Between marks, a separator word or spaces only,
# taken possessively: text from PDFs has runs of spaces that two optional space classes would split every way.
_NAMES_IN = re.compile(
    r"\bparagraphs?\s+(?P<marks>\(\w{1,4}\)(?:(?:\s*+(?:,|\bor\b|\band\b|\bto\b)\s*+|\s++)\(\w{1,4}\))*+)"
    r"\s+of\s+sub-?section\s+\((?P<subsection>\w+)\)(?!\s*of\s+(?:section|the)\b)",
    re.I,
)
_MARK_AT = re.compile(r"\s*(?:or\s+|and\s+)?\((\w{1,4})\)")


@lru_cache(maxsize=16)
def _naming(provision: str) -> tuple[tuple[int, int, str, frozenset[tuple[str, str]]], ...]:
    """Each subsection of ``provision`` with the (mark, subsection) of every item of another subsection it names,
    read once per provision."""
    out = []
    for start, end, number in subsection_spans(provision):
        named = {
            (mark, found.group("subsection"))
            for found in _NAMES_IN.finditer(provision, start, end)
            if found.group("subsection") != number
            for mark in MARK_IN.findall(found.group("marks"))
        }
        out.append((start, end, number, frozenset(named)))
    return tuple(out)


def subsections_naming(provision: str, at: int) -> list[tuple[int, int]]:
    """The subsections of ``provision`` other than the one holding offset ``at`` that name, by its mark, the list
    item starting there ("a court sentencing a person under paragraph (e) of subsection (2) — (a) to the minimum
    sentence of nine years, …"): they speak of that item's case, so what they say does not hold without it."""
    found = _MARK_AT.match(provision, at)
    if not found:
        return []
    index = _naming(provision)
    own = next((number for start, end, number, _ in index if start <= at < end), "")
    return [(start, end) for start, end, _, named in index if (found.group(1), own) in named]


def items_named(provision: str, at: int) -> list[int]:
    """Where the list items that the subsection holding offset ``at`` names by mark in another subsection start
    ("under paragraph (e) of subsection (2)"): the subsection applies what those items say, in their case."""
    index = _naming(provision)
    here = next((named for start, end, _, named in index if start <= at < end), frozenset())
    found = []
    for mark, number in sorted(here):
        target = next(((start, end) for start, end, other, _ in index if other == number), None)
        if target is None:
            continue
        opens = rf"[;:—–-]\s*(?:(?:or|and)\s+)?(?P<open>\({re.escape(mark)}\))\s"
        item = re.compile(opens).search(provision, target[0], target[1])
        if item:
            found.append(item.start("open"))
    return found


_CLAUSE_BACK = re.compile(r"[;:.]\s|\s\(\d{1,3}[A-Z]?\)\s|\s\([a-h]\)\s")
_CONDITION_WORD = re.compile(r"\b(?:if|where|when|whenever|unless)\b", re.I)
_MODAL = re.compile(r"\b(?:may|shall|must|will|can)\b", re.I)
_NEGATED_CASE = re.compile(r"^\W*unless\b|\b(?:not|never|no|without)\b|n['’]t\b", re.I)
_SUBJECT = re.compile(r"\s*(?:the|a|an|such|that|any|every|each|he|she|it|they)\b", re.I)
_NOT_OWN = frozenset({"may", "shall", "must", "will", "can", "not", "case"})
# An item that opens with its own rule ("(a) the change must be notified …"), not a fact ("(a) it is registered
# in the manner that may be prescribed").
_ITEM_MODAL = re.compile(
    r"\(\w{1,4}\)\s+(?:(?!as\b|that\b|which\b)[\w’'-]+\s+){0,6}?(?:may|shall|must|will|can)\b", re.I
)


def dropped_requirement(sentence: str, provision: str) -> list[str]:
    """A requirement of a list whose items hold together ("if, on termination of a contract of fixed duration, the
    employee— (i) had a legitimate expectation of being re-engaged; and (ii) another person was engaged instead")
    that a sentence drops while stating its consequence on the others: the sentence's own condition ("When a
    fixed-term contract ends and the employer hires someone else instead, the employee is deemed to have been
    unfairly dismissed") draws on the list's words, none of those only one item uses (besides the lead-in's), and
    what it says of that case shares words with the list's lead-in. Returns the dropped item's own words (empty:
    none dropped). A sentence without a condition of its own (one requirement listed in turn, "Both must be over
    eighteen"), and one that says a requirement is necessary ("Unless it is registered, you may not sell it"), are
    left alone."""
    main = without_leading_condition(sentence)
    case = sentence[: len(sentence) - len(main)]
    if not case.strip() or _JOINED.search(main):
        return []
    # "Unless it is registered, you may not sell it", "If it is not packed as prescribed, selling it is prohibited":
    # a requirement said to be necessary, which holds whatever the other requirements are.
    if _NEGATED_CASE.search(case) or forbids(main):
        return []
    lists = [items for items, joined in _all_lists(provision) if joined]
    if not lists:
        return []
    sentence_terms = content_terms(sentence)
    for items in lists:
        # Only requirements that make up a condition ("if …, the employee— (i) …; and (ii) …"); a list after the
        # rule's own verb ("the court may, if satisfied …— (a) …; and (b) …") is what the rule gives.
        opening = _CLAUSE_BACK.split(provision[max(0, items[0][0] - 300) : items[0][0]])[-1]
        condition = _CONDITION_WORD.search(opening)
        if condition is None or _MODAL.search(opening, condition.end()):
            continue
        # The list completes the condition ("unless—", "if, on termination …, the employee—"), not a verb after it
        # ("if it thinks fit, by order rescind or vary— (i) …; and (ii) …", whose items are what is done).
        last = opening.rsplit(",", 1)[-1]
        if not (_CONDITION_WORD.search(last) or _SUBJECT.match(last)):
            continue
        texts = [provision[a:b] for a, b, _ in items]
        if any(_ITEM_MODAL.match(text) for text in texts):
            continue  # items that each order or allow something are what follows from the condition
        item_terms = [content_terms(text) for text in texts]
        every = set().union(*item_terms)
        case_terms = in_its_words(content_terms(case), every) & every
        said = in_its_words(sentence_terms, every) & every
        # The sentence's case draws on the list's items, yet it uses none of the words only one item uses: that
        # requirement is left out.
        if not case_terms:
            continue
        # The consequence the requirements lead to is stated in the lead-in: the words before the list in its
        # subsection. A word it names the list's subject by ("have any witnesses subpoenaed … (b) such witnesses are
        # necessary") is no item's own.
        lead_start = max((m.start() for m in _SUBSECTION_AT.finditer(provision, 0, items[0][0])), default=0)
        lead = content_terms(provision[lead_start : items[0][0]])
        if not in_its_words(content_terms(main) - content_terms(case), lead) & lead:
            continue
        own = [
            item_terms[k] - set().union(*(t for j, t in enumerate(item_terms) if j != k)) - lead - _NOT_OWN
            for k in range(len(items))
        ]
        missed = [k for k, terms in enumerate(own) if terms and not (said & terms)]
        if not missed:
            continue
        return [f"{' '.join(sorted(own[missed[0]]))} (a requirement the sentence's case leaves out)"]
    return []
