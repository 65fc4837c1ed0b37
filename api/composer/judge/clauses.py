"""The clause structure of a provision: where a clause begins, the words that open it, and the case a clause or a
list's opening states ("Where an employee has no leave accrued, …", "If an offer … is accepted —"). Pure readings of
strings, used by the gate's quote readings and by the answers that quote list items."""

from __future__ import annotations

import re

from .meaning import content_terms

# Where a clause of a provision begins: after a sentence's end (a full stop before a capital, a bracket or a quote, not
# one inside an abbreviation), a semicolon, a colon, a dash, or a subsection's or a list item's mark; a mark that
# follows the word naming it, a number, another mark right before it, or another mark and its "and", "or", "to" or
# comma, is a reference ("subsection (1) has been made", "section 267 (2)", "12(1)(a)", "paragraphs (a) and (b)"): it
# starts no clause ("…; or (b) in any other case" still starts one).
CLAUSE_BOUNDARY = re.compile(r"\.\s+(?=[A-Z(“\"])|[;:]\s|[—–]\s*|(?P<item>\((?:\d{1,3}[A-Za-z]?|[a-z]{1,4})\))\s")
NAMES_MARK = re.compile(
    r"(?:\b(?:sub-?sections?|sections?|sub-?paragraphs?|paragraphs?|items?|regulations?|rules?|articles?|clauses?|"
    r"provisos?|of|in|under)|\)\s*(?:,|and|or|to)|\d)\s*$|\)$",
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
_ROMAN = re.compile(r"^\((?=[ivx]+\))x{0,2}(?:ix|iv|v?i{0,3})\)$")
_DASHES = ("—", "–", ":")


def _stops_list(boundary: re.Match[str]) -> bool:
    """Whether a clause boundary ends any list before it: a sentence's end, or a subsection's mark."""
    mark = boundary.group("item")
    return boundary.group().startswith(".") or bool(mark and mark[1].isdigit())


def _list_start(mark: str, earlier: list[re.Match[str]]) -> int | None:
    """Where, among the boundaries ``earlier`` than an item marked ``mark`` ("(b)", "(ii)"; "" for the clause after
    a list's last item), its list's first item ("(a)", "(i)") is: ``len(earlier)`` when the item is itself the first,
    None when its first item is not in the window. "(i)" after "(h)" is a letter, not the first of a roman list."""
    marks = [b.group("item") for b in earlier]
    letters = max((n for n, m in enumerate(marks) if m == "(a)"), default=None)
    if mark == "(a)":
        return len(earlier)
    if mark == "(i)" and "(h)" not in marks[(letters if letters is not None else -1) + 1 :]:
        return len(earlier)
    if _ROMAN.match(mark) and mark != "(i)":
        romans = max((n for n, m in enumerate(marks) if m == "(i)"), default=None)
        if romans is not None and (letters is None or romans > letters):
            return romans
    return letters


def clause_lead(provision: str, start: int) -> tuple[str, str]:
    """The words of ``start``'s clause before it, and, when the clause is a list's item (or goes on after a list's
    last item), the list's opening: the clause that ends in the dash or colon right before its first item; ("", "")
    when the clause begins there, and no opening when the list's first item, or the whole of its opening, lies
    further back than ``LEAD_CHARS`` or across a sentence's end or a subsection's mark."""
    origin = max(0, start - LEAD_CHARS)
    window = provision[origin:start]
    boundaries = [
        found
        for found in CLAUSE_BOUNDARY.finditer(window)
        if not (found.group("item") and NAMES_MARK.search(window[max(0, found.start() - 40) : found.start()]))
    ]
    if not boundaries:
        return window, ""
    last = boundaries[-1]
    lead = window[last.end() :]
    mark = last.group("item") or ""
    item = mark[1:-1].isalpha()
    # The clause after a list's last item: one that goes on with "and" or "or" ("…; and the period … would be
    # completed …, the period shall …") adds to what the list's opening says; under an opening that is a bare case
    # ("Where a member— (a) …; (b) …; the Board may …") it is the rule that holds in that case.
    after_items = last.group().strip() == ";"
    if not (item or after_items):
        return lead, ""
    earlier = [b for b in boundaries[:-1] if b.end() <= last.start()]
    first = _list_start(mark, earlier)
    if first is None or (after_items and any(_stops_list(b) for b in earlier[first:])):
        return lead, ""
    # The list opens at the dash or colon right before its first item, past any list nested in an earlier item
    # ("(a) …, the spouse shall— (i) …; (b) …" opens before "(a)", not at "(i)"'s dash).
    before = earlier[:first]
    if not before or before[-1].group().strip() not in _DASHES or (len(before) == 1 and origin > 0):
        return lead, ""
    opening = window[before[-2].end() if len(before) > 1 else 0 : before[-1].start()]
    if after_items and not _JOINED.match(lead) and not (CONDITION_OPENS.match(opening.strip()) and "," not in opening):
        return lead, ""
    return lead, opening


def case_words(opening: str) -> str:
    """The words of the case an opening states: its first clause, past an aside right after the word that opens it
    ("If, on a sale by auction, the buyer fails to pay —" states "If the buyer fails to pay")."""
    words = opening.strip()
    aside = re.match(r"^(\w+(?:\s+\w+){0,2}),\s[^,]*,\s*", words)
    if aside and len(content_terms(aside.group(1)) - DRAFTING) < 2:
        words = f"{aside.group(1)} {words[aside.end() :]}"
    return words.split(",", 1)[0]


# A list's opening that denies what each item says: a negation in its last clause ("This section does not apply to
# a transaction—", "No person shall—", "… shall not include—"); a bound ("not exceeding", "no later than") denies
# nothing, nor does an exception the opening makes to itself ("… shall apply …, except in …").
_NEGATES = re.compile(
    r"\b(?:(?:not|no)\b(?!\s+(?:exceed\w*|more|less|later|earlier|fewer|greater|longer|shorter|sooner)\b)|never\b|"
    r"neither\b|cannot\b)|n['’]t\b",
    re.I,
)


def negates_items(opening: str) -> bool:
    """Whether a list's ``opening`` denies what each of its items says (the negation in its last clause, after any
    case its first clauses state)."""
    return bool(opening.strip()) and _NEGATES.search(opening.rsplit(",", 1)[-1]) is not None


_BARE_CASE = re.compile(r"^(?:if|where|when|whenever|unless)$", re.I)


def bare_case(opening: str) -> bool:
    """Whether a list's ``opening`` is only the word that opens a case ("If—"): each item is then part of the case."""
    return _BARE_CASE.match(opening.strip()) is not None


def case_opening_at(provision: str, start: int) -> str:
    """The opening, word for word to its dash or colon, of the list whose item starts at ``start`` in ``provision``,
    when that opening states a case every item holds in ("If an offer … is accepted by the Commissioner —" for "the
    goods shall become …" of its "(b)"), makes each item part of a case ("If—") or denies what each item says ("This
    section does not apply to a transaction —"); "" otherwise. The item shown without it would read as a rule for
    every case, or as its opposite."""
    lead, opening = clause_lead(provision, start)
    words = opening.strip()
    if content_terms(lead):
        return ""
    if not (negates_items(words) or bare_case(words)) and (
        not CONDITION_OPENS.match(words) or len(content_terms(case_words(words)) - DRAFTING) < 2
    ):
        return ""  # a bare "Provided that—" states no case of its own
    at = provision.rfind(words, 0, start)
    end = _OPENING_END.match(provision, at + len(words))
    return provision[at : end.end()] if at >= 0 and end else ""


_OPENING_END = re.compile(r"\s*[—–:]")
