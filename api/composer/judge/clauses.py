"""The clause structure of a provision: where a clause begins, the words that open it, and the case a clause or a
list's opening states ("Where an employee has no leave accrued, …", "If an offer … is accepted —"). Pure readings of
strings, used by the gate's quote readings and by the answers that quote list items."""

from __future__ import annotations

import re

from .meaning import content_terms

# Where a clause of a provision begins: after a sentence's end (a full stop before a capital, a bracket or a quote, not
# one inside an abbreviation), a semicolon, a colon, a dash, or a subsection's or a list item's mark; a mark that
# follows the word naming it, or another mark and its "and", "or", "to" or comma, is a reference ("subsection (1) has
# been made", "paragraphs (a) and (b)"): it starts no clause ("…; or (b) in any other case" still starts one).
CLAUSE_BOUNDARY = re.compile(r"\.\s+(?=[A-Z(“\"])|[;:]\s|[—–]\s*|(?P<item>\((?:\d{1,3}[A-Za-z]?|[a-z]{1,4})\))\s")
NAMES_MARK = re.compile(
    r"(?:\b(?:sub-?sections?|sections?|sub-?paragraphs?|paragraphs?|items?|regulations?|rules?|articles?|clauses?|"
    r"of|in|under)|\)\s*(?:,|and|or|to))\s*$",
    re.I,
)
LEAD_CHARS = 1500
"""How far back from a quote its clause's opening words are looked for."""
# A clause's opening words that make what follows hold only in a case ("Where an employee has no leave accrued, he
# may …", "If a premium is not paid …, the policy shall …", "On production of …, the officer shall …").
CONDITION_OPENS = re.compile(
    r"^(?:(?:and|or|but)\s+)?(?:if|where|when|whenever|unless|once|upon|on|in\s+the\s+(?:case|event)\s+of|"
    r"in\s+(?:any|every|each|all)\s+(?:other\s+)?cases?|in\s+the\s+event\s+that|except|save|subject\s+to|"
    r"provided\s+that|after|before|until|while)\b",
    re.I,
)
CONDITION_IN = re.compile(r"\b(?:if|where|unless|when|whenever)\b", re.I)
# Drafting words that make no case of their own ("subject to this section", "except as otherwise provided in this
# Act", "without prejudice to anything to the contrary").
DRAFTING = frozenset(
    content_terms(
        "subject to the terms of this Part, a Schedule or regulations; except or save as otherwise expressly provided, "
        "without prejudice, notwithstanding anything to the contrary contained in any other enactment or law"
    )
)
_JOINED = re.compile(r"\s*(?:and|or)\s", re.I)
_ROMAN = re.compile(r"^\((?:i{1,3}|iv|vi{0,3}|ix|x)\)$")


def _first_item(mark: str, earlier: list[re.Match[str]]) -> int | None:
    """Where, among the boundaries ``earlier`` than an item marked ``mark`` ("(b)", "(ii)"), its list's first item
    ("(a)", "(i)") is; None when the item is itself the first, or its first item lies beyond the window."""
    if mark in ("(a)", "(i)"):
        return None
    marks = [b.group("item") for b in earlier]
    letters = max((n for n, m in enumerate(marks) if m == "(a)"), default=None)
    romans = max((n for n, m in enumerate(marks) if m == "(i)"), default=None)
    if _ROMAN.match(mark) and romans is not None and (letters is None or romans > letters):
        return romans
    return letters


def clause_lead(provision: str, start: int) -> tuple[str, str]:
    """The words of ``start``'s clause before it, and, when the clause is a list's item, the list's opening (the
    clause before the item's mark); ("", "") when the clause begins there."""
    window = provision[max(0, start - LEAD_CHARS) : start]
    boundaries = [
        found
        for found in CLAUSE_BOUNDARY.finditer(window)
        if not (found.group("item") and NAMES_MARK.search(window[max(0, found.start() - 40) : found.start()]))
    ]
    if not boundaries:
        return window, ""
    last = boundaries[-1]
    opening = ""
    item = last.group("item") and last.group("item")[1:-1].isalpha()
    # "…; and the period … would be completed …, the period shall …": the clause after a list's last item that goes on
    # with "and" or "or" adds to what the list's opening says (its case, when the opening is "If—").
    after_items = last.group().strip() == ";" and _JOINED.match(window[last.end() :]) is not None
    if item or after_items:
        # The list opens at the last dash or colon before its first item, past the items before it (and any list
        # nested in them: "(a) …, the spouse shall— (i) …; (b) …" opens before "(a)", not at "(i)"'s dash).
        earlier = [b for b in boundaries[:-1] if b.end() <= last.start()]
        first = _first_item(last.group("item") or "", earlier)
        if first is not None:
            earlier = earlier[:first]
        opens = [n for n, b in enumerate(earlier) if b.group().strip() in ("—", "–", ":")]
        if opens:
            n = opens[-1]
            opening = window[earlier[n - 1].end() if n else 0 : earlier[n].start()]
    return window[last.end() :], opening


def case_opening_at(provision: str, start: int) -> str:
    """The opening, word for word to its dash or colon, of the list whose item starts at ``start`` in ``provision``
    ("If an offer … is accepted by the Commissioner —" for "the goods shall become …" of its "(b)"), when that opening
    states a case every item holds in; "" otherwise. The item shown without it would read as a rule for every case."""
    lead, opening = clause_lead(provision, start)
    words = opening.strip()
    if lead.strip() or not CONDITION_OPENS.match(words) or len(content_terms(words.split(",", 1)[0]) - DRAFTING) < 2:
        return ""  # a bare "Provided that—" states no case of its own
    at = provision.rfind(words, 0, start)
    end = _OPENING_END.match(provision, at + len(words))
    return provision[at : end.end()] if at >= 0 and end else ""


_OPENING_END = re.compile(r"\s*[—–:]")
