"""The question's topic: a sentence must not apply a provision to a subject the provision never speaks of.

A sentence that carries one of the question's rare words ("student" in "What interest is charged on student loans?")
must cite a provision that speaks of it (or of a legal term the lay-term thesaurus gives for it), in its text, title
or heading. A rate copied from a section on loans to councils is not the rate of a student loan, however many of the
section's words the sentence repeats. The caller says which words are the question's topic
(``api.composer.answerability.topic_words``: rarity needs the corpus).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .meaning import content_terms, folded_stem

QUESTION_FILLER = frozenset(
    "about much many need needed needs allowed happen happens happened get gets got still just really want wants "
    "know tell possible legal lawful okay ok right way ways thing things".split()
)
"""Words of how a question is asked rather than what it is about: never a subject, never a topic to suggest."""


def topic_terms(text: str) -> set[str]:
    """The content stems of ``text`` less the words of how a question is asked (``QUESTION_FILLER``)."""
    return content_terms(text) - {stem for word in QUESTION_FILLER for stem in content_terms(word)}


Topic = Mapping[str, frozenset[str]]
"""The question's rare words, each with the legal terms the lay-term thesaurus gives for it, any of which shows it in
a provision as well as it does itself ("boss": "employer"; "lawyer": "legal practitioner", both words)."""


def same_family(a: str, b: str) -> bool:
    """Two stems of one word family: equal, or the shorter (four letters or more) begins the longer but for at most
    its last letter ("evict" "eviction", "possess" "possession", "tenant" "tenancy"; not "govern(ment)" "governor",
    "customer" "customary"). The stemmer is deliberately small; a suffix must not fail a sentence."""
    if a == b:
        return True
    short = min(a, b, key=len)
    return len(short) >= 4 and len(os.path.commonprefix([a, b])) >= max(4, len(short) - 1)


def _shown(stems: set[str], terms: set[str]) -> bool:
    """Every stem is in ``terms``, by family."""
    return bool(stems) and all(term in terms or any(same_family(term, t) for t in terms) for term in stems)


def off_topic(sentence: str, provision: str, topic: Topic) -> list[str]:
    """The question's topic words that ``sentence`` carries and ``provision`` never mentions, by itself or by a legal
    equivalent (every word of one); empty when the provision is about what the sentence applies it to. The caller
    adds the provision's title and heading to ``provision`` (``support`` does)."""
    return topic_strays(content_terms(sentence), content_terms(provision), topic) if topic else []


def topic_strays(said: set[str], source: set[str], topic: Topic) -> list[str]:
    """``off_topic`` over content terms already read: those the sentence ``said`` and those of its ``source``."""
    missing = []
    for word, equivalents in topic.items():
        if not _shown({folded_stem(word)}, said):
            continue
        if not any(_shown(terms, source) for terms in [{folded_stem(word)}, *map(content_terms, equivalents)]):
            missing.append(word)
    return missing
