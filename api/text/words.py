"""Words as retrieval and verification read them: tokens without function words, and a small stemmer.

Retrieval (BM25, the evidence judge) and verification (claim support, topic words) must split and stem text the same
way, or a word the search matched would be a different word to the gate.
"""

from __future__ import annotations

import functools
import re

# Function words only: legal words such as "shall", "may", "not", "any" carry meaning and stay.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or so that the their then there these "
    "this those to was what when where which who whom why with do does did can my me we you your".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case word and number tokens, without function words; "12A" stays one token ("12a")."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


# Consonants a suffix doubles ("transferred", "committing", "programme"), undone in the stem; not l, s, f or z,
# which many words' own forms end with ("called", "passed", "staffed", "buzzed"), nor digits ("2022").
_UNDOUBLED = frozenset("bdgkmnprtv")
# (suffix, what replaces it, the shortest word it is taken from); the first that fits is taken. "-ees" loses only its
# "s": "employees" is the plural of "employee", not a form of "employ".
_SUFFIXES = (
    ("ies", "y", 7), ("ied", "y", 7), ("ees", "ee", 4), ("sses", "ss", 8), ("ing", "", 7), ("ed", "", 6),
    ("es", "", 6), ("s", "", 5),
)  # fmt: skip


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A deliberately small stemmer that puts a word's family under one key: 'deposits'~'deposit',
    'increase'~'increased'~'increases', 'reported'~'report', 'specify'~'specified'~'specifies',
    'employee'~'employees', 'transfer'~'transferred'~'transferring' (a final "e" is folded, as the suffixes remove
    it)."""
    for suffix, repl, shortest in _SUFFIXES:
        if len(word) >= shortest and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + repl
            break
    if len(word) > 3 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] and word[-1] in _UNDOUBLED else word
