"""Follow-up questions resolved by rule against the session's previous turn, with or without a model.

A short message in a conversation often leans on the one before: "How much notice is needed?" after a question about
dismissal, "And can the landlord keep it when I leave?" after one about deposits. The rules here make such a
question self-contained from what the previous turn already established:

- whether it reads as a follow-up: it opens with a joining word ("and", "what about", …), refers back ("it", "that",
  "she", …), or is short and names no law;
- the previous turn's subject: the words of its question that the provisions its answer cited are about (their
  headings) or that their Acts define ("“deposit” means …"), else the question's words its answer quoted;
- the question resolved: a pronoun that stands for a thing ("it", "them") becomes that subject, and the subject's
  words it lacks are added, so both searches and the quote choice see them.

Where to answer it is decided by the node (``contextualize``): within the Act(s) the previous answer cited when
their provisions answer the resolved question, else across the corpus. Pure functions over text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from api.composer.judge.meaning import content_terms
from api.composer.judge.topic import same_family, topic_terms

FOLLOW_UP_START = re.compile(
    r"^\s*(and|but|also|so|or|then|what if|what about|how about|and if|in that case|if so|same for)\b", re.I
)
BACK_REFERENCE = re.compile(r"\b(she|he|they|it|that|this|those|these|her|him|them|his|their|there|such|same)\b", re.I)
THING_PRONOUN = re.compile(r"\b(it|them)\b", re.I)
"""Pronouns that stand for a thing already discussed: replaced by the previous turn's subject."""
SHORT_WORDS = 8
"""A question of at most this many words that names no law may lean on the previous turn."""
SUBJECT_TERMS = 3
"""At most this many of the previous question's words are carried into a follow-up."""
ELLIPTICAL_TERMS = 1
"""A follow-up with at most this many topic words of its own (beyond the previous subject's) says too little to be
searched by itself: the previous subject's words are carried into it, and its carried wording is tried first."""
NAMED_LAW = re.compile(
    r"\b[A-Z][\w'’-]*(?:\s+(?:[A-Z(][\w'’()-]*|of|and|for|on|in|the|&))*\s+(?:Act|Code|Ordinance|Regulations)\b"
)
DEFINITION = re.compile(r"[\"“]\s*([^\"”]{2,60}?)\s*[\"”]\s+(?:means|includes|has the meaning)\b")
_FRAME = content_terms("shall may must can cannot not no without if when person someone anyone somebody anybody")
"""Words that frame a question (who may, whether not, if, without) rather than say what it is about."""
_DETERMINED = re.compile(r"\b(?:a|an|the|my|his|her|their|our|your|this|that|these|those)\s+([A-Za-z][\w'’-]*)", re.I)
_LEADING = re.compile(r"^\s*(and|but|also|so|then)\b[\s,]*", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


@dataclass(frozen=True, slots=True)
class Previous:
    """What a follow-up inherits from the turn before it."""

    query: str
    """The previous turn's self-contained question (itself resolved, when it was a follow-up)."""
    answer: str
    headings: Sequence[str] = ()
    """The headings of the provisions its answer cited."""
    defined: frozenset[str] = frozenset()
    """Terms the cited Acts define, as content stems."""


def names_a_law(question: str) -> bool:
    """True when the question names a law ("under the Labour Act"): it says itself where to look."""
    return NAMED_LAW.search(question) is not None


def reads_as_follow_up(question: str) -> bool:
    """True when the wording leans on what came before: a joining word first, or a word that refers back."""
    return FOLLOW_UP_START.match(question) is not None or BACK_REFERENCE.search(question) is not None


def may_follow_up(question: str) -> bool:
    """True when the question may lean on the previous turn: it reads as a follow-up, or it is short and names no
    law (whether it does is then decided by where it is answered)."""
    return reads_as_follow_up(question) or (len(question.split()) <= SHORT_WORDS and not names_a_law(question))


def defined_terms(texts: Iterable[str]) -> frozenset[str]:
    """The content stems of the terms a statute defines ("“deposit” means …", "\"employer\" includes …")."""
    found: set[str] = set()
    for text in texts:
        for match in DEFINITION.finditer(text):
            found |= content_terms(match.group(1))
    return frozenset(found)


def _in(stem: str, stems: Iterable[str]) -> bool:
    return any(same_family(stem, other) for other in stems)


def subject_terms(previous: Previous) -> list[str]:
    """The previous question's words that say what it was about, in its own order: those the cited provisions'
    headings or their Acts' definitions hold; else those its answer quoted; else its content words."""
    words: dict[str, str] = {}  # stem -> the word as asked, first occurrence
    for word in _WORD.findall(previous.query):
        for stem in topic_terms(word):
            words.setdefault(stem, word.lower())
    topical = content_terms(" ".join(previous.headings)) | previous.defined
    answered = content_terms(previous.answer)
    for pool in (topical, answered, None):
        chosen = [w for s, w in words.items() if pool is None or _in(s, pool)]
        if chosen:
            return chosen[:SUBJECT_TERMS]
    return []


def thing_meant(subject: Sequence[str], previous: Previous) -> str:
    """Which subject word a pronoun for a thing ("it") stands for: the one the previous answer and its provisions'
    headings name most often (what was talked about, "will" rather than "make" after "make a will"); a tie goes to
    the word asked first."""
    said = [stem for word in _WORD.findall(f"{previous.answer} {' '.join(previous.headings)}")
            for stem in content_terms(word)]  # fmt: skip

    def mentions(word: str) -> int:
        own = content_terms(word)
        return sum(any(same_family(stem, s) for s in own) for stem in said)

    return max(subject, key=lambda w: (mentions(w), -subject.index(w))) if subject else ""


def new_terms(question: str, subject: Sequence[str]) -> set[str]:
    """The follow-up's own topic words that are not the previous subject's (by word family)."""
    carried = {stem for word in subject for stem in content_terms(word)}
    return {stem for stem in topic_terms(question) - _FRAME if not _in(stem, carried)}


def elliptical(question: str, previous: Previous) -> bool:
    """Whether the follow-up says little of its own (at most ``ELLIPTICAL_TERMS`` new topic words: "And sick
    leave?", "Is that an offence?"): its own words alone are too few to search by, so the previous subject's words
    come first."""
    return len(new_terms(question, subject_terms(previous))) <= ELLIPTICAL_TERMS


def resolve(question: str, previous: Previous, carry: bool = True) -> str:
    """``question`` made self-contained from ``previous``: a leading joining word dropped, a pronoun for a thing
    replaced by the subject word it stands for, and (``carry``) the subject's words it still lacks added in brackets.

    The pronoun is left alone when the follow-up names a thing of its own before it ("… took my car and brought it
    back": "it" is the car). The subject's words are carried only into a follow-up that says too little of its own
    (at most ``ELLIPTICAL_TERMS`` new topic words, ``new_terms``): into one with a point of its own they pull the
    search toward the previous provision instead ("And was he allowed to fire me without a hearing?" after a
    question on unpaid wages)."""
    subject = subject_terms(previous)
    text = _LEADING.sub("", question.strip())
    if not subject:
        return question if carry else text
    text = text[:1].upper() + text[1:]
    own = content_terms(question)
    missing = [w for w in subject if not any(_in(s, own) for s in content_terms(w))]
    said = new_terms(question, subject)
    pronoun = THING_PRONOUN.search(text)
    if missing and pronoun and not _names_a_thing(text[: pronoun.start()], said):
        meant = thing_meant(missing, previous)
        text = THING_PRONOUN.sub(f"the {meant}", text, count=1)
        missing = [w for w in missing if w != meant]
    if missing and carry and len(said) <= ELLIPTICAL_TERMS:
        end = len(text.rstrip("?.! "))
        text = f"{text[:end]} ({', '.join(missing)}){text[end:]}"
    return text


def _names_a_thing(text: str, new: set[str]) -> bool:
    """Whether ``text`` names a thing of its own ("my car", "the contract") that a pronoun after it may stand for:
    a determiner before one of the follow-up's new topic words (``new``)."""
    return any(content_terms(m.group(1)) & new for m in _DETERMINED.finditer(text))


def keeps_question(rewrite: str, question: str) -> bool:
    """A model's rewrite of a follow-up keeps what the follow-up itself asks: at least half of its topic words, by
    family (a rewrite may put a legal word for a lay one; one that asks the previous question again keeps few)."""
    kept = content_terms(rewrite)
    own = topic_terms(question)
    return 2 * sum(_in(stem, kept) for stem in own) >= len(own)
