"""Does a sentence say the opposite of the provision clause it shares its words with?

"A person under eighteen may marry" shares nearly every word with "No person under the age of eighteen years may
contract a marriage", so a measure of shared words scores it as supported; it is the worst kind of wrong citation.
This module reads only what it can read reliably: whether a clause forbids or denies (``shall not``, ``may not``,
``cannot``, ``no person … shall``, ``prohibited``, ``need not``, ``the right not to``) and whether a sentence grants a
permission (``may``, ``can``, ``is entitled``, ``is allowed``).

Two mismatches count:
- the sentence forbids or denies what its clause states without a negation ("need not refund" against "shall be
  refunded");
- the sentence grants a permission its clause forbids ("may contract a marriage" against "no person … may contract a
  marriage").

What it leaves to the meaning measure, because the same polarity can be worded either way:
- conditions and exceptions ("cannot be dismissed without a hearing" says what "must be given a hearing" says);
- quantity bounds ("may ask up to two months' rent" says what "shall not require more than two months' rent" says);
- obligations against prohibitions ("must have two witnesses" against "no marriage without two witnesses").
"""

from __future__ import annotations

import re

_CLAUSE_NEGATION = re.compile(
    r"\b(?:shall|may|must|will|can|could|should|would|need)\s+not\b"
    r"|\b(?:cannot|can't|mustn't|shan't|won't|needn't|mayn't)\b"
    r"|\b(?:is|are|was|were|be|been)\s+not\s+(?:permitted|allowed|entitled|required|obliged|lawful|valid|capable)\b"
    r"|\b(?:does|do|did)\s+not\s+(?:apply|need|have\s+(?:a|the)\s+right|have\s+to)\b"
    r"|\b(?:doesn't|don't|isn't|aren't)\s+(?:apply|need|have\s+(?:a|the)\s+right|have\s+to|permitted|allowed|entitled)\b"
    r"|\b(?:no|nobody|neither|nor|never)\b(?=[^.;:]{0,240}?\b(?:shall|may|must|can|will)\b)"
    r"|\bno\s+one\b|\bunder\s+no\s+circumstances\b|\bright\s+not\s+to\b"
    r"|\b(?:prohibited|forbidden|unlawful|illegal|only)\b",
    re.I,
)
# Conditions and exceptions: "cannot … without a hearing" says what "must … have a hearing" says.
_CONDITION = re.compile(r"\b(?:without|unless|except|excepting|other\s+than|otherwise\s+than|until|before)\b", re.I)
# Quantity bounds: "may ask up to two months' rent" says what "shall not require more than two months' rent" says.
_BOUND = re.compile(
    r"\b(?:exceeds?|exceeding|more\s+than|less\s+than|fewer\s+than|later\s+than|earlier\s+than|longer\s+than|"
    r"greater\s+than|up\s+to|at\s+most|at\s+least|maximum|minimum|beyond|within)\b",
    re.I,
)
# What a sentence grants or asserts in a way a forbidding clause contradicts.
_PERMISSION = re.compile(
    r"\b(?:may|can|could)\b(?!\s+not\b)"
    r"|\b(?:entitled|allowed|permitted)\b|\bit\s+is\s+(?:lawful|legal)\b|\bhas\s+(?:a|the)\s+right\s+to\b"
    r"|\bis\s+free\s+to\b|\bappl(?:y|ies)\b",
    re.I,
)


def forbids(text: str) -> bool:
    """Whether ``text`` forbids or denies something (its main clause carries a negation)."""
    return bool(_CLAUSE_NEGATION.search(text))


def opposite(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` says the opposite of ``clause``, by the two mismatches the module describes."""
    said, stated = forbids(sentence), forbids(clause)
    if said == stated or _CONDITION.search(sentence) or _BOUND.search(sentence) or _CONDITION.search(clause):
        return False
    if said:  # the sentence forbids what the clause states plainly (a bound in the clause does not change that)
        return True
    return not _BOUND.search(clause) and bool(_PERMISSION.search(sentence))
