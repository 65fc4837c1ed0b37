"""How a sentence's verbatim quotes are read against the provision they come from.

A quote that occurs verbatim in its provision can still say what the provision does not: cut from the negation or
the case its clause opens with, stopping before its exception, related to another quote by words of the sentence's
own, or framed by words that claim more than the quote. These readings are the gate's (``api.composer.judge.gate``);
they also say which words of a sentence only name its provision (``identity``, ``framing``) and so claim nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from api.schemas.events import Citation

from ..citations import MARKER, locate_quote, locate_span, quote_spans
from .clauses import CONDITION_IN, CONDITION_OPENS, DRAFTING, bare_case, case_words, clause_lead, negates_items
from .facts import facts, without_references
from .meaning import content_terms
from .rules import support


def identity(citation: Citation) -> str:
    """How a citation names its provision: the instrument's title, the section and its heading."""
    return f"{citation.title} {citation.section} ({citation.heading})"


MIN_CLAIM_TERMS = 3


_CURLY_QUOTED = re.compile(r"“([^“”]+?)”")
_STRAIGHT_QUOTED = re.compile(r"\"([^\"]+?)\"")


def quoted_spans(text: str) -> list[str]:
    """The passages ``text`` quotes: each in curly marks whole (a provision's own straight-quoted words inside it
    are part of it), then each in straight marks outside those."""
    curly = _CURLY_QUOTED.findall(text)
    return [*curly, *_STRAIGHT_QUOTED.findall(_CURLY_QUOTED.sub(" ", text))]


def strip_markers(sentence: str) -> str:
    return " ".join(MARKER.sub(" ", sentence).split()).replace(" .", ".").replace(" ,", ",")


# A negation right before where a quote starts, in the same sentence of the provision: the quote cut from it says
# the opposite of its provision, unless the sentence around the quote says the negation itself ("An employer may
# not \"dismiss …\"").
_NEGATION_BEFORE = re.compile(r"\b(?:no|not|never|neither|cannot)\W{0,3}$", re.I)
_SENTENCE_END = re.compile(r"[.;:]\s")
_SAYS_NEGATION = re.compile(
    r"\b(?:not|no|never|nobody|none|neither|nor|cannot|forbids?|forbidden|prohibits?|prohibited|bans?|banned|"
    r"offen[cs]es?|unlawful|illegal)\b|n['’]t\b",
    re.I,
)


# An exception or condition that opens right after a clause ("… a valid marriage except with the written permission
# of the Minister", "…, unless …"): a quote that stops before it states the clause as if it held without it.
_EXCEPTION_NEXT = re.compile(
    r"\s*[,;:]?\s*[—–-]?\s*(?P<words>(?:except|unless|save|provided\s+that|other\s+than|subject\s+to|only\s+if|if|"
    r"where|until)\b[^.;:]{0,200})",
    re.I,
)


def cut_before_exception(quote: str, provision: str, end: int, sentence: str) -> bool:
    """Whether a verbatim quote ends where its provision's clause goes on with an exception or condition
    (``_EXCEPTION_NEXT``) that the sentence does not state in its own words either; a quote marked as going on
    ("… a valid marriage …”", or ending on the colon or dash that opens a proviso or a list) says that it stops
    short."""
    if quote.rstrip().endswith(("…", "...", ":", "—", "–")):
        return False
    following = _EXCEPTION_NEXT.match(provision, end)
    if following is None:
        return False
    exception = content_terms(following.group("words"))
    said = content_terms(around_quotes(sentence, [quote]))
    return len(exception & said) * 2 < len(exception)


def _starts(quote: str, provision: str) -> list[int]:
    """Every place in ``provision`` where ``quote``'s first verbatim span starts."""
    spans = quote_spans(quote)
    starts: list[int] = []
    position = 0
    while spans and (found := locate_span(spans[0], provision, position)) is not None:
        starts.append(found[0])
        position = found[0] + 1
    return starts


_OTHER_CASES = re.compile(r"\bin\s+(?:any|every|each|all)\s+other\s+cases?\b", re.I)
# A sentence's own words that put what follows in a case ("where the debtor …, “…”", "In that case “…”").
_SAYS_CASE = re.compile(r"\b(?:if|where|when|whenever|unless|once|after|then|in\s+(?:that|such|which)\s+case)\b", re.I)
_NEGATED_SUBJECT = re.compile(r"^(?:no|nothing|neither|none)\b", re.I)
_VERB_FIRST = re.compile(r"^\W*(?:shall|may|must|will|can|could|should|is|are|was|were|be|has|have)\b", re.I)
STATED_SHARE = 0.5
"""Share of a case's words the sentence must say for it to state the case."""
STATED_IN_CASE_SHARE = 1 / 3
"""The same where the sentence's own words put what they quote in a case ("where …", "in that case")."""


def cut_from_condition(quote: str, provision: str, sentence: str, before: str = "") -> bool:
    """Whether every place ``quote`` starts in ``provision`` is right after the case its clause opens with ("Where an
    employee has no vacation leave accrued, ” + “he may be granted …”, or a list item's "in the original unopened
    packaging, ” under "if any goods returned are—") and neither the sentence nor the sentences ``before`` it in its
    paragraph state that case: the quote then gives as a rule what holds only in that case. A case is stated by
    ``STATED_SHARE`` of its words, or a third of them where the sentence's own words put the quote in a case."""
    starts = _starts(quote, provision)
    if not starts:
        return False
    own = around_quotes(sentence, [quote])
    said = content_terms(own) | content_terms(before)
    share = STATED_SHARE if _SAYS_CASE.search(own) is None else STATED_IN_CASE_SHARE
    for start in starts:
        lead, opening = clause_lead(provision, start)
        item_start = not content_terms(lead)  # the quote starts its list item (or the clause after the list)
        if item_start and bare_case(opening):
            # An item of a list that opens with only "If—" is part of the case, not a rule: said as a fact ("Under
            # section 17 “the creditor is a minor”"), it states what the provision only supposes.
            if _SAYS_CASE.search(own):
                return False
            continue
        if item_start and CONDITION_OPENS.match(opening.strip()):
            # A list item quoted from its start, under an opening that states the case every item holds in ("If an
            # offer … is accepted by the Commissioner — … (b) the goods shall …"): the case is the opening's first
            # clause (what follows its comma is the rule's subject, "Where …, the Minister may —").
            lead = case_words(opening) + ","
        elif not _ends_case(lead, provision[start : start + 1]):
            return False
        elif not (CONDITION_OPENS.match(lead.strip()) or CONDITION_IN.search(opening)):
            return False
        if _OTHER_CASES.match(lead.strip()):
            # "in any other case, …": every case but those stated before it, which a sentence says as "otherwise".
            if _OTHER_CASES.search(sentence) or re.search(r"\botherwise\b", sentence, re.I):
                return False
            continue
        case = content_terms(lead) - DRAFTING
        if len(case) < 2 or len(case & said) >= share * len(case):
            return False
    return True


def _ends_case(lead: str, after: str) -> bool:
    """Whether ``lead`` ends as a case that the clause's rule follows: at a comma, or at a full stop that the rule
    goes on from in lower case (a comma printed as a stop: a sentence never goes on in lower case after one)."""
    lead = lead.rstrip()
    return lead.endswith(",") or (lead.endswith(".") and after.islower())


# Words by which a sentence says a provision leaves something out, or an item is what is not done ("except",
# "excluded", "other than", "fails to", "without").
_SAYS_EXCLUSION = re.compile(
    r"\b(?:except\w*|exclu\w*|exempt\w*|other\s+than|outside|apart\s+from|fail\w*|without|refus\w*)\b", re.I
)


def cut_from_negation(quote: str, provision: str, around: str) -> bool:
    """Whether every place ``quote`` starts in ``provision`` follows a negation of the same sentence, or a subject
    the negation governs ("No boy … shall" quoted from "shall"), that the words around the quote (``around``) do not
    say themselves."""
    if _SAYS_NEGATION.search(around):
        return False
    starts = _starts(quote, provision)
    if not starts:
        return False
    for start in starts:
        before = provision[max(0, start - 24) : start]
        ends = list(_SENTENCE_END.finditer(before))
        if _NEGATION_BEFORE.search(before[ends[-1].end() :] if ends else before):
            continue
        lead, opening = clause_lead(provision, start)
        if not lead.strip() and negates_items(opening) and not _SAYS_EXCLUSION.search(around):
            # A list item quoted from its start under an opening that denies every item ("This section does not
            # apply to a transaction— (a) by way of an auction"): the item is what the rule is not.
            continue
        # The subject may follow words that set the rule's scope ("Subject to subsection (2), no person shall").
        subject = (lead.strip(), lead.rsplit(",", 1)[-1].strip())
        if not (any(_NEGATED_SUBJECT.match(part) for part in subject) and _VERB_FIRST.match(quote)):
            return False
    return True


def framing(sentence: str, quotes: list[str], provision: str, cited: Citation, terms: bool = True) -> str:
    """The sentence's own words beside its verified ``quotes``, without what names the provision ``cited``: its
    instrument's title and heading as written, the references by which it is named, and (``terms``) a term quoted
    in passing ("uses “civil partnership”, which …") that the provision has (its word, not a claim)."""
    rest = around_quotes(sentence, quotes)
    if terms:
        flat = " ".join(provision.lower().split())
        rest = around_quotes(rest, [t for t in quoted_spans(rest) if " ".join(t.lower().split()) in flat])
    for name in (cited.title, cited.heading):
        rest = _without_name(rest, name)
    return without_references(rest)


def _without_name(text: str, name: str) -> str:
    """``text`` without the instrument's title or heading ``name`` as written, spacing and case aside, with the year
    a title may be written with ("the Insurance Act, 1987")."""
    if not name.strip():
        return text
    return re.sub(r"\s+".join(map(re.escape, name.split())) + r"(?:,?\s+\d{4}\b)?", " ", text, flags=re.I)


def quote_carries(sentence: str, quotes: list[str], provision: str, cited: Citation) -> bool:
    """Whether a verified quote may stand for the sentence's meaning: what the sentence says around its quotes
    (``framing``) is itself supported by the provision, or says nothing of substance ("The Act provides": a few
    words, no figure). A true quote must not carry claims of its own beside it ("Pets are banned …, as “A landlord
    shall keep every deposit”"): read with the quote, they would be a few words among the many it shares with the
    provision."""
    rest = framing(sentence, quotes, provision, cited)
    named = identity(cited)
    claimed = content_terms(rest) - content_terms(named) - _SAYS
    if len(claimed) < MIN_CLAIM_TERMS and not _own_facts(rest, quotes):
        return True
    return support(rest, provision, identity=named).supported


# The words by which a sentence says what a provision it names does ("… deals with", "… sets out", "… provides") or
# how it stands to another ("referred to above (in terms of …)", "uses …, which the same law defines").
_SAYS = content_terms(
    "deals with sets out refers to provides states says reads defines referred to above cited in terms of subject to "
    "uses which the same law defines by the provision"
)


def only_names(sentence: str, quotes: list[str], provision: str, cited: Citation) -> bool:
    """Whether the words around a sentence's quotes only name the provision they come from (its title, section and
    heading) and say that it says them: no word or figure of their own that could qualify or deny them. A term they
    quote ("defines “farmer”: “means …”") is what the quote speaks of: the sentence is judged whole."""
    rest = framing(sentence, quotes, provision, cited, terms=False)
    own = content_terms(rest) - content_terms(identity(cited)) - _SAYS
    return not own and not _own_facts(rest, quotes) and not _DENIAL.search(rest)


def _own_facts(rest: str, quotes: list[str]) -> bool:
    """Whether the words beside a sentence's quotes state a figure, month or body of their own: one the quotes do
    not state themselves ("refers to it (in terms of section nine or thirteen): “… section nine or thirteen …”")."""
    said, quoted = facts(rest), facts(" ".join(quotes))
    return bool(said.numbers - quoted.numbers or said.months - quoted.months or said.bodies - quoted.bodies)


# Words by which a sentence relates two of its quotes ("“…” only when “…”", "“…” and then “…”"): a condition, a time
# or a consequence that the quoted words themselves cannot show.
_RELATION = re.compile(
    r"\b(?:only|when|whenever|if|unless|until|because|then|so|therefore|thus|after|before|once|where|provided|since|"
    r"while)\b",
    re.I,
)
MAX_JOIN_WORDS = 8
"""Most words between two quotes that a provision may hold between them to state them in that relation."""


def relation_unshown(sentence: str, quotes: list[str], provisions: Sequence[str]) -> bool:
    """Whether the sentence relates two consecutive quotes by a word of its own (``_RELATION``) that no provision
    states between them: each quote is verbatim, the relation is the sentence's claim, and it holds only where a
    provision has the second quote shortly after the first with that word between them."""
    placed = sorted((sentence.find(quote), quote) for quote in quotes if sentence.find(quote) >= 0)
    for (start, first), (end, second) in zip(placed, placed[1:], strict=False):
        said = {w.lower() for w in _RELATION.findall(strip_markers(sentence[start + len(first) : end]))}
        if not said:
            continue
        shown = False
        for text in provisions:
            one, two = locate_quote(first, text), locate_quote(second, text)
            if not one or not two or two[0][0] < one[-1][1]:
                continue
            gap = text[one[-1][1] : two[0][0]]
            if len(gap.split()) <= MAX_JOIN_WORDS and said <= {w.lower() for w in _RELATION.findall(gap)}:
                shown = True
                break
        if not shown:
            return True
    return False


def around_quotes(sentence: str, quotes: list[str]) -> str:
    """The sentence's own words: ``sentence`` with its quoted spans blanked out."""
    for quote in quotes:
        sentence = sentence.replace(quote, " ")
    return sentence


# Words that, around a quote, can turn what it says round ("the Act does not provide that “…”").
_DENIAL = re.compile(r"\b(?:not|never|no|neither|nor|cannot|nothing|none|without|unless|except)\b|n['’]t\b", re.I)


def framing_denies(sentence: str, quotes: list[str], title: str = "") -> bool:
    """Whether the words around a sentence's verified quotes deny or qualify them. The quoted words are the
    provision's own, checked verbatim, so they cannot say the opposite of it; read one clause at a time, a quote that
    runs over a rule and its exception ("includes …, but does not include …", "regardless of …") can seem to. Only the
    sentence's own words can turn its meaning round, so the opposite-meaning verdict stands only when they might; the
    instrument's ``title`` among them ("Amendment (No. 20) Act") names it and denies nothing."""
    return bool(_DENIAL.search(_without_name(around_quotes(sentence, quotes), title)))
