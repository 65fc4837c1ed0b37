"""Does a sentence state, without its condition, a rule the provision gives only under one?

A provision often states a rule only in a case: "where the Master is satisfied …, the Master may accept …", "in the
case of the death or inability of the father and the mother, the duty of (a) the occupier …", "liable to … fifteen
years … if the crime was committed in … aggravating circumstances", "a will that has been signed (a) by … a mark …;
shall not be valid unless …". A sentence that shares the rule's words scores as supported, yet stated alone it says
the rule holds in every case. This module finds the conditions of a clause (a condition opened by "where", "if", "in
the case of", "on the death of" …, and a subject narrowed by a list before its predicate), the part of the clause
each governs, and whether a sentence states what only that part says while carrying none of the condition's own
words.

What it leaves alone: a cross-reference ("subject to section twelve", "subject to this Act"), the default limb ("in
any other case"), an "unless" (a requirement the polarity module reads), and a "where" that names a place ("the house
where the birth occurred": no comma or clause start before it).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from .facts import UNIT_WORDS, WORD_NUMBER, facts, without_references
from .meaning import content_terms, in_its_words

# Where a condition opens: at the start of a clause or limb, after punctuation, or after a list item's mark.
_OPENS = re.compile(
    r"(?P<word>\b(?:where|if|when|whenever|in\s+the\s+(?:case|event)\s+(?:of|that)|on\s+the\s+(?:death|failure|inability)\s+of"
    r"|upon\s+the\s+(?:death|failure|inability)\s+of|subject\s+to)\b)",
    re.I,
)
# What may stand before a condition's opening word: the clause's start, punctuation or a list item's mark, then
# perhaps "and", "or" or "but"; or nothing in particular before a capital ("… persons Where there are …").
_BEFORE = re.compile(r"(?:^|[,;:—–(]|\)|\(\w{1,4}\))\s*(?:(?:and|or|but)\s+)?$", re.I)
_CLOSES = re.compile(r"\s*(?:[,;:—–]|\s-\s)")
# A cross-reference or the default limb: no condition a sentence could be expected to carry.
_NOT_A_CONDITION = re.compile(
    r"^\s*(?:(?:and|or|but)\s+)?(?:in\s+any\s+other\s+case|subject\s+to\s+(?:this|the|any|these|those|such|sub|"
    r"sections?|paragraphs?|parts?|regulations?|rules?|articles?|items?|provisions?|chapter)\b)",
    re.I,
)
# The words of a discretion put as a condition ("if it thinks fit", "where necessary", "if any"): no case of its own.
_DISCRETION = frozenset(
    "if think fit deem consider necessary appropriat desirabl expedient proper just applicabl practicabl possibl "
    "opinion".split()
)
# A subject narrowed by a list before its predicate: "a will that has been signed— (a) by …; or (b) by …; shall not
# be valid". A person's list ("any person who— (a) …; shall be guilty") defines an offence or a status, whose name the
# sentence uses for it, so only a thing's ("that", "which") counts.
_NARROWED = re.compile(
    r"\b(?:that|which)\s+(?:has|have|is|are|was|were)\s+(?:been\s+)?[\w\s]{0,40}?[—–]\s*\(a\).{0,2000}?;\s*"
    r"(?=(?:shall|must|may|is|are|will)\b)",
    re.I | re.S,
)
# A party narrowed by a relative clause that ends its limb and holds a figure ("… on full pay to a female employee
# who has served for at least one year."): the rule is given only to those who meet it. Without a figure such a clause
# mostly names who the rule is about ("any person who contravenes …"), which a sentence says in its own words. The
# clause may go on describing the party by a participle or by where it is ("… who has attained the age of eighteen
# years finding such child", "… present at the birth"), not by a word that opens something else ("during", "being").
_RESTRICTED = re.compile(
    r"\b(?:who|whose|which|that)\s+(?:has|have|had|is|are|was|were)\s+(?:not\s+)?[^,;:.—–()]{0,100}?"
    r"\b(?:years?|months?|weeks?|days?)(?:\s+of\s+age|\s+or\s+(?:more|above|over|older|less|under))?"
    r"(?=\s*(?:[.;:,]|$)|\s+(?:is|are|shall|may|must|has|have|present|resident"
    r"|(?!(?:during|including|according|being|concerning|regarding|notwithstanding)\b)\w+ing)\b)",
    re.I,
)
_LIMB_END = re.compile(r"[;.](?:\s|$)")
RESTRICTED_SPAN = 600
"""Characters after a party named first read as what it is given (its limb's rest)."""
_PREDICATE_NEXT = re.compile(r"\s*(?:,|(?:is|are|shall|may|must|has|have)\b)", re.I)
_RULE_VERB = re.compile(r"\b(?:shall|must|may|will)\b", re.I)
_LIMB_START = re.compile(r"[;—–]\s*|:\s+|\([a-z]{1,4}\)\s*")
# A condition's word and its plain equivalents ("died" for "death", "cannot" for "inability", "knew" for "knowledge").
_KIN = {
    "died": "death", "dies": "death", "dead": "death", "deceas": "death", "die": "death", "dy": "death",
    "incapabl": "inability", "incapacity": "inability", "inabl": "inability",
    "knew": "knowledg", "know": "knowledg", "known": "knowledg", "knowing": "knowledg", "aware": "knowledg",
    "question": "desir", "request": "desir", "want": "desir", "wants": "desir", "wish": "desir",
    "paid": "payment", "pay": "payment", "pays": "payment",
}  # fmt: skip
# A verb's irregular forms, read as its plain form ("where it has taken the action" after "power to take … action").
_IRREGULAR = {"taken": "take", "took": "take", "given": "give", "gave": "give", "made": "make", "held": "hold",
              "kept": "keep", "sold": "sell", "bought": "buy", "brought": "bring", "found": "find"}  # fmt: skip
# The words that open a condition, which say that it is one, not what it is.
_OPENERS = frozenset({"if", "when", "whenever", "cas", "event", "subject", "upon"})
# Words of how or how much, which any clause may use ("over the share", "shall", "may"): not what a condition is.
_HOW = frozenset({"not", "shall", "may", "over", "under", "least", "most", "once", "up"})
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
SPECIFIC_TERMS = 2


@dataclass(frozen=True, slots=True)
class Condition:
    text: str
    """The condition's words, as the clause puts them."""
    governed: tuple[int, int]
    """[start, end) of the part of the clause it governs."""
    span: tuple[int, int]
    """[start, end) of the condition itself."""
    party: str = ""
    """For a relative clause narrowing a party, the words naming that party ("a female employee"): the condition
    matters to a sentence that gives the rule to someone, not to one that only says what the rule is."""


def _terms(text: str) -> set[str]:
    """Content terms and figures of ``text``, a condition's plain equivalents folded to its word."""
    plain = re.sub(r"[a-z]+", lambda m: _IRREGULAR.get(m.group(0), m.group(0)), text.lower())
    terms = content_terms(plain) | set(_NUMBER.findall(without_references(text)))
    return {_KIN.get(term, term) for term in terms} - _OPENERS - _HOW


_SENTENCE_END = re.compile(r"\.\s+(?=\(\d|[A-Z])")
_NEXT_ITEM = re.compile(r"[;—–]\s*(?:(?:or|and)\s+)?\([a-z]{1,4}\)")


def _list_end(clause: str, start: int) -> int:
    """Where the list opened after ``start`` ends: at the semicolon after its last item, where the words its items
    share follow ("…; or (f) such other person as may be prescribed; to give notice …"), else at the clause's end."""
    stop = _SENTENCE_END.search(clause, start)
    bound = stop.start() + 1 if stop else len(clause)
    items = list(_NEXT_ITEM.finditer(clause, start, bound))
    after = clause.find(";", items[-1].end(), bound) if items else -1
    return after if after >= 0 else bound


@lru_cache(maxsize=4096)
def conditions(clause: str) -> tuple[Condition, ...]:
    """The conditions of ``clause`` and the part of it each governs: a condition followed by a comma and more of its
    limb governs what follows it ("where X, the Master may accept …"); one that ends its limb governs the limb before
    it ("to a fine … or both, if the crime was committed in …"); a list narrowing a subject governs the predicate
    after it."""
    found: list[Condition] = []
    # Where each limb starts, read once: a provision read as one run of text (a schedule's table) has thousands.
    limb_ends = [m.end() for m in _LIMB_START.finditer(clause)]
    for opened in _OPENS.finditer(clause):
        start = opened.start("word")
        if not (_BEFORE.search(clause[max(0, start - 12) : start]) or clause[start].isupper()):
            continue  # "the house where the birth occurred" names a place
        # Its words run to the next comma, semicolon or dash, past words set off by commas right after its opening
        # word ("Where, under subsection (1), a pension has ceased, …").
        closed = _CLOSES.search(clause, opened.end())
        if closed and closed.group(0).strip() == "," and not clause[opened.end() : closed.start()].strip():
            # "If, during any one-year period, the employee has …": past what the commas set off.
            inner = _CLOSES.search(clause, closed.end())
            closed = _CLOSES.search(clause, inner.end()) if inner and inner.group(0).strip() == "," else inner
        end = closed.start() if closed else len(clause)
        if _NOT_A_CONDITION.match(clause[start:end]) or not content_terms(clause[opened.end() : end]) - _DISCRETION:
            continue
        # Its limb ends at the next semicolon, unless a list opens first: a list's lead-in governs all its items.
        limb_end = re.search(r";|(?P<list>[—–]\s*\([a-z]{1,4}\))", clause[end:])
        rest_end = end + limb_end.start() if limb_end and not limb_end.group("list") else _list_end(clause, end)
        after = clause[end:rest_end]
        limb = limb_ends[bisect_right(limb_ends, start) - 1] if bisect_right(limb_ends, start) else 0
        if closed and closed.group(0).strip() == "," and content_terms(after):
            governed = (closed.end(), rest_end)  # a leading condition governs the rest of its limb
        elif content_terms(clause[limb:start]):
            governed = (limb, start)  # a trailing one, the limb before it
        else:
            # A list of conditions before their rule ("may— (a) on the death of …; or (b) on …; restore the
            # pension"): each governs what follows the list.
            tail = _list_end(clause, start)
            governed = (tail + 1, len(clause)) if tail < len(clause) else (end, end)
        found.append(Condition(clause[start:end], governed, (start, end)))
    for restricted in _RESTRICTED.finditer(clause):
        # A figure with its unit (an age, a period, a share), in a clause that ends before the rule's own verb.
        if not any(unit for _, unit in facts(restricted.group(0)).numbers) or _RULE_VERB.search(restricted.group(0)):
            continue
        start, end = restricted.span()
        limb = limb_ends[bisect_right(limb_ends, start) - 1] if bisect_right(limb_ends, start) else 0
        party = " ".join(clause[limb:start].split()[-3:])
        # A party named first ("Any person who has been married … for at least five years, …, is entitled to …")
        # is given what follows in its limb; one named last ("… on full pay to a female employee who has served …"),
        # what comes before.
        rest = _LIMB_END.search(clause, end, end + RESTRICTED_SPAN)
        rest_end = rest.start() if rest else min(len(clause), end + RESTRICTED_SPAN)
        # Named first: nothing before it in its limb gives the rule ("… shall be granted … to a female employee who
        # has served …, and such leave …" names the party last, whatever follows the comma).
        if (
            _PREDICATE_NEXT.match(clause, end)
            and not _RULE_VERB.search(clause, limb, start)
            and content_terms(clause[end:rest_end])
        ):
            found.append(Condition(restricted.group(0), (end, rest_end), restricted.span(), party))
        elif content_terms(clause[limb:start]):
            found.append(Condition(restricted.group(0), (limb, start), restricted.span(), party))
    for narrowed in _NARROWED.finditer(clause):
        found.append(Condition(narrowed.group(0), (narrowed.end(), len(clause)), narrowed.span()))
    return tuple(found)


# A third person's pronoun before the sentence names anything itself ("You may keep them, …"): the sentence goes on
# from one before it, which may state the condition ("goods you did not ask for are unsolicited goods").
_REFERS_BACK = re.compile(
    r"^(?:(?!\b(?:the|a|an|any|every|each|such|no)\s)[^.;])*?\b(?:it|its|they|them|their)\b", re.I
)


# A number, in digits or words ("twenty-one"): what a figure says, not what its condition is about.
_NUMBER_WORDS = re.compile(rf"\b\d+(?:\.\d+)?\b|{WORD_NUMBER.pattern}", re.I)
_ARTICLE_UNIT = re.compile(r"\b(?:a|an)\s+(?:full\s+)?(year|month|week|day|hour)s?\b", re.I)
_FIGURE_LABEL = re.compile(r"^(\d+(?:\.\d+)?) (\w+)$")


def _figures(text: str) -> set[tuple[float, str]]:
    """The figures of ``text`` with their units, "a year" counted as one year."""
    return set(facts(text).numbers) | {(1.0, UNIT_WORDS[unit.lower()]) for unit in _ARTICLE_UNIT.findall(text)}


def states_condition(dropped: tuple[str, ...] | list[str], sentence: str) -> bool:
    """Whether ``sentence`` states the condition whose words ``dropped_condition`` gave (``dropped``): at least one
    of its words that says what the condition is (not a number word, nor a unit's or bound's word, which any
    sentence may use: "any one employer"), and each of its figures with its unit ("at least one year", "a year")."""
    figures = {(float(m[1]), m[2]) for m in map(_FIGURE_LABEL.match, dropped) if m}
    words = {w for w in dropped if not _FIGURE_LABEL.match(w) and not _NUMBER_WORDS.fullmatch(w)} - _FIGURE_WORDS
    if not figures <= _figures(sentence):
        return False
    return bool(words & in_its_words(_terms(sentence), words))


# Words of a figure's unit or bound, which say how much, not who.
_FIGURE_WORDS = frozenset("year month week day hour age least period less more not exceed".split())
# A sentence that gives a rule to someone: the asker, or anyone at all.
_ADDRESSED = re.compile(r"\b(?:you|your|anyone|everyone|everybody|anybody|any\s+person|every\s+person)\b", re.I)
# A sentence that gives a rule to everyone ("you" may be anyone or the asker, whom an earlier sentence placed).
_ANYONE = re.compile(r"\b(?:anyone|anybody|everyone|everybody|whoever|any\s+person|every\s+person)\b", re.I)
_CASE_FIRST = re.compile(r"\W*(?:in|on|upon|after|once|for|with|without|during)\s+([^,;:]{3,80}),", re.I)


def _supposes(sentence: str) -> list[str]:
    """The conditions a sentence states, wherever they stand ("… on half pay if it is probable that …")."""
    # A case put first and set off by a comma ("In aggravating circumstances, the penalty is …").
    first = _CASE_FIRST.match(sentence)
    out = [first.group(1)] if first else []
    for opened in _OPENS.finditer(sentence):
        closed = _CLOSES.search(sentence, opened.end())
        out.append(sentence[opened.end() : closed.start() if closed else len(sentence)])
    return out


def dropped_condition(
    sentence: str,
    clause: str,
    elsewhere: str,
    siblings: str,
    lead: int,
    provision_terms: set[str],
) -> tuple[str, ...]:
    """The words of a condition of ``clause`` that ``sentence`` drops, or nothing.

    Dropped: the sentence states at least ``SPECIFIC_TERMS`` terms or figures found only in the part of the clause
    the condition governs (not in the rest of the clause, nor in ``elsewhere``, the provision's other text), and none
    of the condition's own words (those the rest of the clause does not use), nor, in a condition of its own ("if
    you already paid, …"), any of its words. ``clause`` may be a list's item after its lead-in (its first ``lead``
    characters): a condition of the lead-in governs every item, so the other items (``siblings``) count as elsewhere
    only for a condition of the item itself. A condition most of whose words the rest of the clause uses ("whenever
    an undertaking is transferred in any way whatsoever, … deemed to be transferred to the transferee of the
    undertaking") restates the rule's subject and is left alone; so is a sentence that goes on from one before it
    ("You may keep them, …"), which may have stated the condition."""
    if not clause.strip() or _REFERS_BACK.search(sentence):
        return ()
    said = {_KIN.get(term, term) for term in in_its_words(_terms(sentence), provision_terms)}
    supposed = set().union(*(_terms(own) for own in _supposes(sentence)))
    supposed = {_KIN.get(term, term) for term in in_its_words(supposed, provision_terms)}
    other, beside = _terms(elsewhere), _terms(siblings)
    for condition in conditions(clause):
        if condition.party:
            if not (_ADDRESSED.search(sentence) or content_terms(condition.party) & said):
                continue
            # A figure narrows the party ("married … for at least five years"): a sentence that speaks of the same
            # party by the clause's other words ("married") but states none of its figures drops it.
            figures = _figures(condition.text)
            # An age is said without its unit as often as with it ("anyone sixteen or older"); with one, the units
            # must agree ("five months" is not "five years").
            if any(v == value and (not u or u == unit) for value, unit in figures for v, u in _figures(sentence)):
                continue
            start, end = condition.governed
            rest = _terms(clause[:start] + " " + clause[end:]) - _terms(condition.text)
            described = (
                _terms(_NUMBER_WORDS.sub(" ", condition.text)) - _FIGURE_WORDS - _terms(clause[start:end]) - rest
            )
            # So does a sentence that gives what the clause gives that party to anyone ("Anyone who finds a dead body
            # must give notice" against "Any person who has attained the age of eighteen years, who— (a) finds …").
            addressed = _ANYONE.search(sentence) and len(said & _terms(clause[start:end])) >= SPECIFIC_TERMS
            if said & described or addressed:
                return (*sorted(described), *sorted(f"{value:g} {unit}" for value, unit in figures))
        start, end = condition.governed
        governed = _terms(clause[start:end])
        outside = _terms(clause[: min(start, condition.span[0])] + " " + clause[max(end, condition.span[1]) :])
        stated = in_its_words(_terms(condition.text), governed | outside)
        own = stated - governed - outside
        # Of its own words, those the rest of the provision never uses say what the condition is ("resigns"); the
        # others may only name its subject ("President or Vice-President", who are named in the next subsection).
        marks = own - other or own
        if 2 * len(own) < len(stated) or said & marks or supposed & stated:
            continue
        if condition.span[0] >= lead:
            outside |= beside
        if len((said & governed) - outside - other - stated) >= SPECIFIC_TERMS:
            return tuple(sorted(own))
    return ()


# List items named by mark ("in the case of an offence referred to in paragraph (b)", "paragraphs (a), (b) or (c)").
NAMED_MARKS = re.compile(r"\bparagraphs?\s+((?:\(\w{1,4}\)(?:\s*,\s*|\s+or\s+|\s+and\s+|\s+to\s+)?)+)", re.I)
MARK_IN = re.compile(r"\((\w{1,4})\)")
"""A list item's mark in brackets, its letters captured."""


def named_marks(text: str) -> set[str]:
    """The marks of the list items ``text`` names ("paragraphs (a) and (b)": a, b)."""
    return {mark for found in NAMED_MARKS.finditer(text) for mark in MARK_IN.findall(found[1])}


_MARK = re.compile(r"(?:^|[;:—–-])\s*(?:(?:or|and)\s+)?\((\w{1,4})\)\s")


HEAD_WORDS = 4
"""Words that open a list item and name its kind."""


def _named_items_words(case: str, lead_in: str, heads_too: bool = False) -> set[str]:
    """The words of the lead-in's items that ``case`` names by mark and its other items do not use: a sentence that
    says what such an item describes ("gives false information") states the case ("an offence referred to in
    paragraph (b)"). With ``heads_too``, also the words that open a named item and open no other ("(a) a monogamous
    marriage …" beside "(b) an actually polygamous marriage …"), for a case that is nothing but the marks."""
    named = named_marks(case)
    if not named:
        return set()
    marks = [found for found in _MARK.finditer(lead_in)]
    texts: dict[bool, list[str]] = {True: [], False: []}
    heads: dict[bool, set[str]] = {True: set(), False: set()}
    for n, found in enumerate(marks):
        # An item runs to the next one, or to its semicolon: what follows the last ("; shall be guilty of …") is
        # the lead-in's, shared by every item.
        end = marks[n + 1].start() if n + 1 < len(marks) else len(lead_in)
        semicolon = lead_in.find(";", found.end(), end)
        text = lead_in[found.end() : semicolon if semicolon >= 0 else end]
        texts[found.group(1) in named].append(text)
        # Its first words name its kind ("(a) a monogamous marriage …; (b) an actually polygamous marriage …"),
        # though the items go on to use each other's words.
        heads[found.group(1) in named] |= _terms(" ".join(text.split()[:HEAD_WORDS]))
    own = _terms(" ".join(texts[True])) - _terms(" ".join(texts[False]))
    return own | (heads[True] - heads[False]) if heads_too else own


# An item whose case is the offences it names by mark: "(i) paragraph (a), to a fine …", "(b) in the case of an
# offence referred to in paragraph (c), to …".
_REFERENCE_CASE = re.compile(
    r"\s*(?:(?:or|and)\s+)?\(\w{1,4}\)\s*(?P<case>[^,;:]{0,80}?\bparagraphs?\s+\(\w{1,4}\)[^,;:]*),"
)


def dropped_item_condition(
    sentence: str,
    clause: str,
    item: int,
    lead_in: str,
    siblings: str,
    provision_terms: set[str],
    own_figures: frozenset[tuple[float, str]],
) -> tuple[str, ...]:
    """The words of the case of the list item at offset ``item`` of ``clause`` (its list's lead-in ``lead_in``;
    ``siblings``: the list's other items, when they are sentences of their own) that ``sentence`` drops while stating
    one of ``own_figures``, the figures only that item gives ("liable— (e) if the theft involved any bovine animal …,
    to imprisonment for not less than nine years …; (f) if … did not involve any bovine animal, … to a fine …").

    The case is a condition that opens the item, read past commas to where the item's figures begin. Parallel items
    state each other's case (the second the first's, negated), and a lead-in may name every case, so the case's own
    words are those neither the part it governs nor both the lead-in and another item's condition use. The sentence
    states the case with one of those words, with a condition of its own sharing the case's words, or, where the case
    names offences by mark ("an offence referred to in paragraph (b)"), with what those offences say. An item whose
    case is nothing but such marks ("(i) paragraph (a), to a fine …") is read the same way, by what the named items
    say (their own words, or the words that open them and no other) or by the mark itself."""
    said = {_KIN.get(term, term) for term in in_its_words(_terms(sentence), provision_terms)}
    supposed = set().union(*(_terms(own) for own in _supposes(sentence)))
    supposed = {_KIN.get(term, term) for term in in_its_words(supposed, provision_terms)}
    item_end = _NEXT_ITEM.search(clause, item + 1)
    end_of_item = item_end.start() if item_end else len(clause)
    found = [condition for condition in conditions(clause) if not condition.party]
    for condition in found:
        # Only a condition that opens the item states its case ("(e) if the theft involved …, to …").
        if not re.fullmatch(r"\s*(?:(?:or|and)\s+)?\(\w{1,4}\)\s*", clause[item : condition.span[0]]):
            continue
        start, end = condition.governed
        # An item's case runs past commas to where its rule's figures begin ("(a) in the case of a promoter, leader
        # or officer of …, to imprisonment for … ten years").
        number = _NUMBER_WORDS.search(clause, condition.span[1], end_of_item)
        comma = clause.rfind(",", condition.span[1], number.start()) if number else -1
        case = clause[condition.span[0] : comma] if comma > condition.span[1] else condition.text
        if comma > condition.span[1]:
            start = comma + 1
        figures = own_figures & _figures(clause[start:end])
        if not figures:
            continue
        governed = _terms(clause[start:end])
        # What the lead-in and the other items' conditions both name is what every case is about ("any person who
        # is a leader … or member …": "— (a) in the case of a leader …; (b) in the case of a member …").
        others = [other.text for other in found if other is not condition]
        others += [other.text for other in conditions(siblings) if not other.party]
        shared = _terms(lead_in) & set().union(*map(_terms, others))
        stated = in_its_words(_terms(case), governed | shared)
        own = stated - governed - shared
        if not own or said & own or supposed & stated or said & _named_items_words(case, lead_in):
            continue
        return (*sorted(own), *sorted(f"{value:g} {unit}" for value, unit in figures))
    # An item whose case is only the offences it names by mark, under a lead-in's "if convicted in terms of—".
    opening = _REFERENCE_CASE.match(clause, item)
    if opening and not any(item <= condition.span[0] < opening.end() for condition in found):
        figures = own_figures & _figures(clause[opening.end() : end_of_item])
        named = _named_items_words(opening.group("case"), lead_in, heads_too=True)
        by_mark = named_marks(sentence) & named_marks(opening.group("case"))
        if figures and named and not said & named and not supposed & named and not by_mark:
            return (*sorted(named), *sorted(f"{value:g} {unit}" for value, unit in figures))
    return ()
