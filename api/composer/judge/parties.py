"""Who holds a duty, right, entitlement, order or penalty: a sentence must give it to a party its provision names.

"The tenant's family is entitled to the refund" shares nearly every word with "The lessee … shall be entitled to a
refund of the deposit …", and says nothing the other checks read as a changed fact or an opposite meaning; it gives
the refund to the wrong party. Two readings:

- ``wrong_holder``: the party a sentence says must, shall, may, can or is entitled to do something (the subject of
  its "must", "is entitled to", "has the right to", or the one a body "can order … to" do it) must be named among
  those the provision gives that same thing to: of the provision's holdings of the same kind (a duty, or a right or
  power), those whose words say most of what the sentence says is done (at least ``ACT_TERMS`` words and
  ``ACT_SHARE`` of them): the subjects of its "shall", "may", "is entitled to", the party after "the duty of", a
  passive's agent ("shall be given … by the occupier"), the one a body may "order" or "require" to act. A party
  counts as named by the provision's own words, a word of the same family, a term the provision defines by those
  words, or an everyday name for it (``api/data/parties.toml``, and the lay-term thesaurus
  ``api/data/lay_terms.toml``). Left alone: "you" and a party named by its tie to the asker ("your partner"), whom a
  plain-words answer puts for the party the law names; a passive ("must be given"); a prohibition or a duty denied
  (polarity's to read); "anyone", "a person", a pronoun, on either side (the provision gives it to anyone, or says
  to whom elsewhere); and a thing the provision's holder gives ("the summons must call upon …" against "shall issue
  a summons calling upon …").
- ``penalty_turned``: a sentence that orders one party to pay for what another did ("if your landlord kept the
  deposit without cause, the tribunal can order you to pay a penalty"), where the provision's clause orders the
  party whose conduct its condition names ("if … the lessor has without cause retained the deposit, order the
  lessor to pay a penalty"). Read only where one of the two is the asker ("you") and the other is not, so that two
  names for one party are never taken for two.
- A general holder described by its dealings with another party ("any person who … has paid to the lender … shall be
  entitled to recover …") holds it, not that party: a sentence giving it to the lender gives it to the wrong one.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from api.text.words import stem

from .meaning import content_terms, in_its_words

DATA = Path(__file__).resolve().parent.parent.parent / "data"


@dataclass(frozen=True, slots=True)
class PartyWords:
    same: tuple[tuple[frozenset[str], ...], ...]
    """Groups of names (each the stems of a word or phrase) of one party."""
    situational: frozenset[str]
    """Stems that name a party only by its tie to the asker."""
    lay: tuple[tuple[str, frozenset[str]], ...]
    """(lay phrase, the stems of the legal terms it maps to), from the lay-term thesaurus."""


def _stems(text: str) -> set[str]:
    words = (w.removesuffix("'s").removesuffix("’s") for w in re.findall(r"[a-z][a-z'’-]*", text.lower()))
    return {stem(part) for word in words for part in word.split("-") if part}


@lru_cache(maxsize=1)
def party_words(data: Path = DATA) -> PartyWords:
    """The everyday names for parties and the lay-term thesaurus's pairs, read once."""
    parties = tomllib.loads((data / "parties.toml").read_text(encoding="utf-8"))
    lay_terms = tomllib.loads((data / "lay_terms.toml").read_text(encoding="utf-8"))
    lay = tuple(
        (phrase.lower(), frozenset(_stems(" ".join(entry.get("legal", [])))))
        for entry in lay_terms.get("entry", [])
        for phrase in entry.get("lay", [])
    )
    return PartyWords(
        same=tuple(tuple(frozenset(_stems(name)) for name in group) for group in parties.get("same", [])),
        situational=frozenset(_stems(" ".join(parties.get("situational", [])))),
        lay=lay,
    )


# Words that name no party in particular, or only how a party is put: determiners, pronouns, "anyone".
_FILLER = frozenset(
    _stems(
        "a an the this that these those such any every each all no none both either neither another other same "
        "his her its their our my your you yours he she it they them him we i us who whom whose which what there "
        "person persons people anyone anybody someone somebody everyone everybody nobody one party parties "
        "also then only still now even just first alone itself himself herself themselves thereof concerned "
        "relevant appropriate said whole case and or nor but of in on at to by as for from with under into upon "
        "be is are was were been has have had may shall must can will would should could not"
    )
)
_YOU = re.compile(r"^\W*(?:you|you\s+yourself|yourself)\W*$", re.I)

# What gives a duty, a right or a power to the party before it: "must", "may", "is entitled to", "has the right to".
_HOLDS = re.compile(
    r"\b(?:(?:must|shall|may|can|could|should|will\s+have\s+to)\b(?!\s+be\s*[,;.)—–])"
    r"(?:\s+(?:also|only|still|then|not|never))?"
    r"(?:\s+be\s+(?:entitled|required|obliged|bound|liable|responsible|allowed|permitted|able|competent)\b)?"
    r"|(?:is|are|be)\s+(?:(?:also|only|still|then|not|now)\s+)?(?:entitled|required|obliged|bound|allowed|permitted|"
    r"responsible|liable)\s+(?:to|for)\b"
    r"|ha(?:s|ve)\s+(?:(?:also|only|still|then)\s+)?(?:to|(?:a|the)\s+(?:right|duty|obligation|responsibility)\s+to)\b"
    r"|needs?\s+to\b)",
    re.I,
)
# A right or a power, not a duty: what a "may", "can" or "is entitled to" gives.
_RIGHT = re.compile(r"\b(?:may|can|could|entitled|allowed|permitted|able|competent|right)\b", re.I)
# A passive after a modal names what is done, not who does it ("must be given", "may, on request, be extended"), and
# a perfect names what has happened ("which may have accrued").
_PASSIVE = re.compile(
    r"(?:\s*,[^,;]{0,120},)?\s+(?:not\s+)?(?:\w+ly\s+|also\s+|then\s+)?(?:be|have\s+been|have\s+\w+ed)\b", re.I
)
_DUTY_OF = re.compile(
    r"\s+be\s+(?:the\s+)?(?:duty|obligation|responsibility|right)\s+of\b(?P<who>.*?)\bto\s+(?=\w+)", re.I | re.S
)
_ORDER_WORDS = r"order|orders|ordering|direct|directs|directing|compel|compels|compelling|call(?:s|ing)?\s+upon"
_ORDERED = (
    r"\s+(?P<who>(?:the|a|an|any|such|that|your|his|her|their)\s+[^,;:.()]{1,60}?|you|him|her|them|it)"
    r"(?<!\bup)\s+to\s+(?=[a-z])"
)
_ORDERS = re.compile(rf"\b(?:{_ORDER_WORDS}){_ORDERED}", re.I)
# In a provision's words "require the holder to surrender it" orders too (in a plain sentence, "require a deposit of
# up to …" need not).
_PROVISION_ORDERS = re.compile(rf"\b(?:{_ORDER_WORDS}|require|requires|requiring){_ORDERED}", re.I)
_AGENT = re.compile(r"[^,;:—–]{0,60}?\bby\s+(?P<who>(?:the|a|an|any)\s+[^,;.()]{3,60})", re.I)
# Where a party's name ends before what is said of it: a relative clause or a prepositional phrase that describes it.
_HEAD_END = re.compile(
    r"\s(?:who|whom|whose|which|that|where|when|of|in|at|for|from|with|under|on|to|by|as|if|whether|other\s+than)\s"
    r".*$",
    re.I | re.S,
)
_CLAUSE_START = re.compile(
    r"[,;:()—–]|\b(?:but|so|then|that|if|when|where|whereas|while|because|unless|although|once|after|before|until|"
    r"as)\s",
    re.I,
)
_POSSESSOR = re.compile(r"\b[\w-]+['’]s?(?=\s+\w)", re.I)
_RELATIVE = re.compile(r"\b(?:who|whom|which|that)\s*$", re.I)
_QUOTED = re.compile(r"[“\"][^”\"]*[”\"]")
# A subsection's number opens a sentence ("(2) The owner …"); "subsection (9) of section seven" does not.
_SUBSECTION = r"\s\(\d{1,3}[A-Z]?\)\s(?=[A-Z])"
_STOP = re.compile(rf"[.;:—–]\s*|{_SUBSECTION}|\bprovided\s+that\b,?\s*", re.I)
_NEW_SUBJECT = re.compile(
    r"(?:\band|\bor|\bbut|,)\s+((?:the|a|an|every|any|each|no|such)\s+[^;:.,]{1,80}?)(?<!\band)(?<!\bor)\s*$", re.I
)
# "under no circumstances shall any person …": the party after the modal.
_INVERTED = re.compile(r"^\s+(?P<who>(?:any|no|every|each|a|the)\s+(?:other\s+)?\w+)", re.I)
_INVERTING = re.compile(r"\b(?:circumstances|case|event|nor|neither)\s*$", re.I)
# Where what a "shall" gives ends: the provision's next sentence or subsection (a lead-in's list runs on).
_ACT_END = re.compile(rf"\.\s+(?=[A-Z(])|{_SUBSECTION}")
# Where what a sentence's "must" gives ends: its next claim ("…, and from that date it stops …").
_SENTENCE_ACT_END = re.compile(r"[;.]|,\s+(?:and|but|while|whereas|so)\s")
_NEGATED = re.compile(r"\b(?:not|never)\b", re.I)
_DENIED = re.compile(r"\b(?:does|do|did|is|are)\s+not\s*$|\b(?:doesn't|don't|isn't|aren't)\s*$|\bneed\s+not\s*$", re.I)
ACT_SPAN = 500
"""Characters after a provision's "shall" read as what it gives (a lead-in's list may run on)."""
ACT_SHARE = 0.5
"""Share of the sentence's words of what is done that a provision's clause must state to be the same thing."""
ACT_TERMS = 3
"""Fewest words of what is done, shared, for a clause to count as saying the same thing."""


@dataclass(frozen=True, slots=True)
class Holding:
    who: str
    """The words naming the party (a sentence's: the head of its subject; a provision's: the whole subject)."""
    act: str
    """What the party must, may or is entitled to do or have."""
    right: bool
    """A right or a power ("may", "is entitled to"), not a duty ("must", "shall", "is required to")."""


def sentence_holdings(sentence: str) -> list[Holding]:
    """Each party ``sentence`` gives a duty, right, power or order to, with what it gives: the subject before a
    "must", "may", "is entitled to" (a passive's none), and the one a body may "order … to" do something. What it
    quotes is the law's own words, and a duty it denies ("does not have to") is given to nobody."""
    sentence = _QUOTED.sub(" ", sentence)
    found: list[Holding] = []
    for match in _HOLDS.finditer(sentence):
        if _PASSIVE.match(sentence, match.end()) and not re.search(r"\bbe\s+\w+$", match.group(0)):
            continue
        before = sentence[: match.start()]
        if _DENIED.search(before) or _RELATIVE.search(before) or _NEGATED.search(match.group(0)):
            continue  # a prohibition or a duty denied is polarity's to read; a relative clause's subject is before it
        who = _HEAD_END.sub("", f" {_CLAUSE_START.split(before)[-1].strip()} ").strip()
        who = re.sub(r"^(?:and|or|nor|then|also)\s+", "", who, flags=re.I)
        who = " ".join(_POSSESSOR.sub(" ", who).split()) or who  # "the tenant's family": the family
        act = _SENTENCE_ACT_END.split(sentence[match.end() :])[0]
        found.append(Holding(who, act, bool(_RIGHT.search(match.group(0)))))
    for match in _ORDERS.finditer(sentence):
        act = _SENTENCE_ACT_END.split(sentence[match.end() :])[0]
        found.append(Holding(_HEAD_END.sub("", f" {match.group('who')} ").strip(), act, False))
    return found


def provision_holdings(provision: str) -> list[Holding]:
    """Each party ``provision`` gives a duty, right, power or order to, with what follows it: the subject of each
    "shall", "may", "is entitled to" since the last stop ("…, and shall send" shares the one before it), the party
    after "it shall be the duty of" or an inverted "shall any person", a passive's agent, and the one a body may
    "order … to" do something."""
    found: list[Holding] = []
    matches = list(_HOLDS.finditer(provision))
    start, subject = 0, ""
    for k, match in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(provision)
        act = _ACT_END.split(provision[match.end() : min(end, match.end() + ACT_SPAN)])[0]
        right = bool(_RIGHT.search(match.group(0)))
        stops = [m.end() for m in _STOP.finditer(provision, start, match.start())]
        text = provision[stops[-1] if stops else start : match.start()]
        if start and not stops:  # after another "shall": only a new subject ("…, and the supplier shall")
            new = _NEW_SUBJECT.search(text.rstrip())
            text = new.group(1) if new else subject
        inverted = _INVERTED.match(act) if _INVERTING.search(text) else None
        subject = inverted.group("who") if inverted else text
        start = match.end()
        duty = _DUTY_OF.match(provision, match.end())
        if duty:
            act = _ACT_END.split(provision[duty.end() : duty.end() + ACT_SPAN])[0]
            found.append(Holding(duty.group("who"), act, bool(re.search(r"\bright\b", duty.group(0)))))
            continue
        passive = _PASSIVE.match(provision, match.end())
        if passive and not re.search(r"\bbe\s+\w+$", match.group(0)):
            # The agent of this passive, read from its "be" on: not a "by" inside a clause set off before it
            # ("may, if … would be defeated by the delay …, be arrested … by a police officer").
            agent = _AGENT.match(provision, passive.end())
            if agent:  # "shall be given … by the occupier"; a passive without one names nobody
                found.append(Holding(_HEAD_END.sub("", f" {agent.group('who')} ").strip(), act, right))
            continue
        found.append(Holding(subject, act, right))
    for match in _PROVISION_ORDERS.finditer(provision):
        act = _ACT_END.split(provision[match.end() : match.end() + ACT_SPAN])[0]
        found.append(Holding(match.group("who"), act, False))
    return found


_DEFINITION = re.compile(r"[\"“‘']([^\"”’'\n]{1,60})[\"”’']\s+(?:means|includes)\s+([^;\n]{1,400})", re.I)


def _named(who: str, words: PartyWords) -> set[str]:
    """The stems naming a party, with every everyday or legal name for it the data gives."""
    stems = {word for word in _stems(who) if len(word) > 2} - _FILLER
    named = set(stems)
    for group in words.same:
        if any(name <= named for name in group):
            stems |= set().union(*group)
    text = f" {who.lower()} "
    for phrase, legal in words.lay:
        if f" {phrase} " in text:
            stems |= legal - _FILLER
    return stems


# A provision's words put before its party: "Subject to section ten, no person …", "In the case of a still-birth, the
# medical practitioner …", a subsection's or a list item's number.
_LEADING = re.compile(
    r"^\W*(?:\(\w{1,4}\)\s*)*(?:(?:subject\s+to|notwithstanding|except|save|in\s+the\s+case\s+of|where|if|when)\b"
    r"[^,]*,\s*)?",
    re.I,
)
_FIRST_PARTY = re.compile(
    r"\b(?:(?P<det>the|a|an|any|every|each|no|such|all)\s+(?P<party>(?:other\s+)?[^,;:.()]{1,60})"
    r"|(?P<pronoun>he|she|it|they|him|his|her|its|their|them|whoever|anyone|anybody|everyone|everybody|someone|"
    r"somebody|nobody|nothing|none))\b",
    re.I,
)
_GENERAL = frozenset(_stems("person persons people one individual anyone everyone everybody other"))


def _general(who: str) -> bool:
    """Whether a provision gives something to anyone at all, anyone of a description, or a party it names by a
    pronoun ("no person other than a licensee", "any person who finds a child", "he or his estate"): the first party
    its subject names is "person", "one", "anyone", or a pronoun."""
    first = _FIRST_PARTY.search(_LEADING.sub("", who))
    if first is None:
        return False
    if first.group("pronoun"):
        return True
    if first.group("det").lower() == "the":
        return False  # "the person in charge of the land": one party, named by what it does
    head = _HEAD_END.sub("", f" {first.group('party')} ").split()
    head = [word for word in head if word.lower() != "other"]
    return bool(head) and bool(_stems(head[0]) & _GENERAL)


# The other party in a description of the holder: "any person who has paid to the lender", "… who leases from the
# owner".
_DESCRIBED = re.compile(
    r"\b(?:any|every|each|a|no)\s+(?:other\s+)?(?:person|one|individual)\s+who\b(?P<clause>.*)", re.I | re.S
)
_OTHER_PARTY = re.compile(r"\b(?:to|from|with|against)\s+(?:the|a|an|any|such|that)\s+([\w-]+)", re.I)


def _counterpart(who: str, named: set[str], words: PartyWords) -> bool:
    """Whether a general holder ("any person who has paid to the lender") is described by its dealings with the party
    ``named`` names (``_head_named``), as the other party of what it did, and is not named as that party itself. Only
    a party counts as the other one: a body one is appointed to or a fund one pays into ("any person who is appointed
    to the Board") is not ("a Board member")."""
    described = _DESCRIBED.search(who)
    if described is None or not named:
        return False
    clause = described.group("clause")
    others = {stem(m.group(1).lower()) for m in _OTHER_PARTY.finditer(clause) if _is_party(m.group(1), words)}
    first = _OTHER_PARTY.search(clause)
    before = _stems(clause[: first.start()]) if first else set()
    return bool(others & named) and not (before & named)


def _head_named(holder: str, words: PartyWords) -> set[str]:
    """The names of a sentence's party by its head noun ("a lender who was overpaid" is a lender)."""
    head = re.findall(r"[A-Za-z][\w'’-]*", _HOLDER_QUALIFIED.split(holder)[0])[-1:]
    return _named(head[0], words) if head else set()


# Where a sentence's party is qualified after its head noun: "a lender who was overpaid", "a tenant in arrears".
_HOLDER_QUALIFIED = re.compile(r"\s+(?:who|whom|whose|which|that|in|of|with|under|at|on|from|for)\b|,", re.I)


_AGENTS = re.compile(r"\bby\s+(?:the|a|an|any)\s+[\w-]+", re.I)
# Nouns of one who acts ("owner", "supplier", "employee", "assistant", "resident"): a party, not a thing.
_AGENT_NOUN = re.compile(r"(?:er|or|ee|ant|ent|ist|ian)s?$")


def _is_party(who: str, words: PartyWords) -> bool:
    """Whether ``who`` names a party rather than a thing: a name of the party data's, or a noun of one who acts (the
    lay-term thesaurus maps things as well as parties, so it does not say)."""
    stems = {word for word in _stems(who) if len(word) > 2} - _FILLER
    known = set().union(*(name for group in words.same for name in group))
    # The head noun only ("the lease agreement": an agreement), and never a noun of a thing done ("-ment").
    head = [w.lower() for w in re.findall(r"[A-Za-z]+", _HEAD_END.sub("", f" {who} "))][-1:]
    return bool(stems & known) or any(
        _AGENT_NOUN.search(w) and not w.endswith(("ment", "ments")) for w in set(head) - {"other", "order", "matter"}
    )


def _same_act(said: str, acts: list[str]) -> bool:
    """Whether the first word of what a sentence says is done or had (its verb, or what an entitlement is to) is in
    what the provision's closest holdings give: "must give notice" and "to give notice", "is entitled to the house"
    and "to receive … the house"; not "must meet minimum qualifications" and "shall make regulations prescribing the
    minimum qualifications"."""
    terms = set().union(*(content_terms(act) for act in acts))
    for word in re.findall(r"[\w'’-]+", said):
        found = content_terms(word)
        if found:
            return bool(in_its_words(found, terms) & terms)
    return False


def _family(a: str, b: str) -> bool:
    """Two stems of one word: equal, or one the other with at most three more letters ("parent" "parental");
    "employer" and "employee" are two parties, however alike."""
    short, long = sorted((a, b), key=len)
    return short == long or (len(short) >= 4 and long.startswith(short) and len(long) - len(short) <= 3)


def _shares(ours: set[str], theirs: set[str]) -> bool:
    return any(_family(a, b) for a in ours for b in theirs)


def wrong_holder(sentence: str, provision: str) -> list[str]:
    """The parties ``sentence`` gives a duty, right, power or order to that ``provision`` never gives it to (see the
    module's docstring): each named party of the sentence whose words of what it gives are closest to those of one or
    more of the provision's holdings of the same kind (a duty, or a right), at least ``ACT_TERMS`` of them and
    ``ACT_SHARE`` of its words, every one of which names a party in particular, none of them this one."""
    words = party_words()
    ours = sentence_holdings(sentence)
    if not ours:
        return []
    theirs = provision_holdings(provision)
    source = content_terms(provision)
    defined = [(_stems(term), _stems(meaning)) for term, meaning in _DEFINITION.findall(provision)]
    parties = set().union(*(_named(_LEADING.sub("", h.who), words) for h in theirs))
    wrong = []
    for holding in ours:
        if _YOU.match(holding.who) or _stems(holding.who) & words.situational:
            continue
        named = _named(holding.who, words)
        act = in_its_words(content_terms(holding.act), source)
        if not named or len(act) < ACT_TERMS or _general(holding.who):
            continue
        shared = [(len(act & content_terms(h.act)), h) for h in theirs if h.right == holding.right]
        most = max((n for n, _ in shared), default=0)
        if most < max(ACT_TERMS, ACT_SHARE * len(act)):
            continue
        # Every holding of the same kind that says as much of it counts: a rule may give one thing to several
        # parties in turn ("the duty of the father or the mother …; (6) a responsible person …").
        same = [h for n, h in shared if n >= max(ACT_TERMS, ACT_SHARE * len(act))]
        holders = [_named(_LEADING.sub("", h.who), words) for h in same]
        if any(_general(h.who) for h in same):
            # "Any person who … has paid to the lender … shall be entitled to recover": a holder described by its
            # dealings with the party the sentence names is that party's counterpart, not that party.
            head = _head_named(holding.who, words)
            if all(_general(h.who) and _counterpart(h.who, head, words) for h in same):
                wrong.append(holding.who)
            continue
        if not all(holders):
            continue
        nouns = {stem(w) for w in re.findall(r"[a-z]+", holding.who.lower()) if not re.search(r"(?:ed|ing)$", w)}
        if not _is_party(holding.who, words) and not _shares(nouns - _FILLER, parties):
            continue  # "the goods must carry a label": a thing, not a party
        if not _same_act(holding.act, [h.act for h in same]) and _shares(
            named, set().union(*(_stems(_AGENTS.sub(" ", h.act)) for h in same))
        ):
            continue  # "drivers must meet the standards" against "the Minister shall make regulations prescribing
            # the standards for drivers": the party is what the holding is about, not who holds it
        given = set().union(*holders)
        for term, meaning in defined:
            if _shares(term - _FILLER, given):
                given |= meaning - _FILLER
        if not _shares(named, given):
            wrong.append(holding.who)
    return wrong


# A condition naming whose conduct triggers what follows: "if (the court finds that) your landlord kept …".
_CONDITION = re.compile(r"\b(?:if|where|when|whenever|once)\b(?P<cond>[^;.]*?),?\s*$", re.I)
_PARTY = re.compile(
    r"\b(?P<who>you|he|she|they|(?:the|a|an|your|his|her|their|my|any|such)\s+(?:[\w'’-]+\s+){0,2}?[\w'’-]+?)"
    r"(?=\s+(?:has|have|had|is|are|was|were|did|does|do|has\s+not|\w+ed|\w+s)\b)",
    re.I,
)
_PRONOUN = frozenset({"he", "she", "they", "him", "her", "them", "it"})


def _trigger(condition: str) -> str:
    """The party whose conduct a condition names: the subject after its last "that" ("the court finds that your
    landlord kept …": "your landlord"), else its first."""
    tail = re.split(r"\bthat\b", condition, flags=re.I)[-1]
    party = _PARTY.search(tail)
    return party.group("who") if party else ""


def _is_you(who: str) -> bool:
    return bool(re.fullmatch(r"\s*you\s*", who, re.I))


def penalty_turned(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` orders the asker to do what the provision orders the party whose conduct its condition
    names (or the reverse): the sentence's condition names one party and its order another, one of them "you", and
    the provision's clause closest to that condition (sharing at least ``ACT_TERMS`` of its words and half of them)
    orders the very party whose conduct it names."""
    for order in _ORDERS.finditer(sentence):
        cond = _CONDITION.search(sentence[: order.start()].rsplit(",", 1)[0] + ",")
        if cond is None:
            continue
        trigger, ordered = _trigger(cond.group("cond")), order.group("who")
        if not trigger or ordered.lower() in _PRONOUN or trigger.lower() in _PRONOUN:
            continue
        if _is_you(trigger) == _is_you(ordered):
            continue
        wanted = content_terms(cond.group("cond"))
        best, shared = None, 0
        for theirs in _ORDERS.finditer(provision):
            start = max(provision.rfind(";", 0, theirs.start()), provision.rfind(":", 0, theirs.start()), 0)
            their_cond = _CONDITION.search(provision[start : theirs.start()].rsplit(",", 1)[0] + ",")
            if their_cond is None:
                continue
            n = len(wanted & content_terms(their_cond.group("cond")))
            if n > shared:
                best, shared = (their_cond.group("cond"), theirs.group("who")), n
        if best is None or shared < max(ACT_TERMS, ACT_SHARE * len(wanted)):
            continue
        their_trigger, their_ordered = _trigger(best[0]), best[1]
        if their_ordered.lower() in _PRONOUN or (
            their_trigger and _stems(their_ordered) - _FILLER == _stems(their_trigger) - _FILLER
        ):
            return True
    return False


def party_faults(sentence: str, provision: str) -> list[str]:
    """What ``sentence`` gives to a party ``provision`` does not give it to, as a verdict's missing facts."""
    faults = [f"the party: {who} (the provision gives this to another)" for who in wrong_holder(sentence, provision)]
    if penalty_turned(sentence, provision):
        faults.append("the party the provision orders: the one whose conduct it names")
    return faults
