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
NAMED_LAW = re.compile(
    r"\b[A-Z][\w'’-]*(?:\s+(?:[A-Z(][\w'’()-]*|of|and|for|on|in|the|&))*\s+(?:Act|Code|Ordinance|Regulations)\b"
)
DEFINITION = re.compile(r"[\"“]\s*([^\"”]{2,60}?)\s*[\"”]\s+(?:means|includes|has the meaning)\b")
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


def resolve(question: str, previous: Previous, carry: bool = True) -> str:
    """``question`` made self-contained from ``previous``: a leading joining word dropped, a pronoun for a thing
    replaced by the subject, and (``carry``) the subject's words it still lacks added in brackets."""
    subject = subject_terms(previous)
    if not subject:
        return question if carry else _LEADING.sub("", question.strip())
    own = content_terms(question)
    missing = [w for w in subject if not any(_in(s, own) for s in content_terms(w))]
    text = _LEADING.sub("", question.strip())
    text = text[:1].upper() + text[1:]
    if missing and THING_PRONOUN.search(text):
        text = THING_PRONOUN.sub(f"the {missing[0]}", text, count=1)
        missing = missing[1:]
    if missing and carry:
        end = len(text.rstrip("?.! "))
        text = f"{text[:end]} ({', '.join(missing)}){text[end:]}"
    return text


def keeps_question(rewrite: str, question: str) -> bool:
    """A model's rewrite of a follow-up keeps what the follow-up itself asks: at least half of its topic words, by
    family (a rewrite may put a legal word for a lay one; one that asks the previous question again keeps few)."""
    kept = content_terms(rewrite)
    own = topic_terms(question)
    return 2 * sum(_in(stem, kept) for stem in own) >= len(own)
