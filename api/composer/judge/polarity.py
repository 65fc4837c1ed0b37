"""Does a sentence say the opposite of the provision clause it shares its words with?

"A person under eighteen may marry" shares nearly every word with "No person under the age of eighteen years may
contract a marriage", so a measure of shared words scores it as supported; it is the worst kind of wrong citation.
This module reads only what it can read reliably: whether a clause forbids or denies (``shall not``, ``may not``,
``cannot``, ``no person … shall``, ``prohibited``, ``need not``, ``the right not to``) and whether a sentence grants a
permission (``may``, ``can``, ``is entitled``, ``is allowed``).

These mismatches count:
- the sentence forbids or denies what its clause states without a negation ("need not refund" against "shall be
  refunded");
- the sentence grants a permission its clause forbids ("may contract a marriage" against "no person … may contract a
  marriage");
- the sentence lets something be kept that its clause obliges someone to give back ("may keep any payment received"
  against "shall refund any payment received"), unless the clause itself lets part be kept ("less any amount due");
- the sentence permits going past a limit its clause sets ("a lender may charge interest above the prescribed rate"
  against "no lender shall … receive … interest at a rate greater than the prescribed rate", or against "shall … be
  transmitted … not later than thirty days").

What it leaves to the meaning measure, because the same polarity can be worded either way:
- conditions and exceptions ("cannot be dismissed without a hearing" says what "must be given a hearing" says);
- other quantity bounds ("may ask up to two months' rent" says what "shall not require more than two months' rent"
  says: a permission within the limit);
- obligations against prohibitions ("must have two witnesses" against "no marriage without two witnesses").
"""

from __future__ import annotations

import re

_CLAUSE_NEGATION = re.compile(
    r"\b(?:shall|may|must|will|can|could|should|would|need)\s+not\b"
    r"|\b(?:cannot|can't|mustn't|shan't|won't|needn't|mayn't)\b"
    r"|\b(?:is|are|was|were|be|been)\s+not\s+(?:permitted|allowed|entitled|required|obliged|lawful|valid|capable|"
    r"bound|liable|compelled)\b|\bunder\s+no\s+(?:obligation|duty)\b"
    r"|\b(?:does|do|did)\s+not\s+(?:apply|cover|extend|need|have\s+(?:a|the)\s+right|have\s+to)\b"
    r"|\b(?:doesn't|don't|isn't|aren't)\s+(?:apply|cover|extend|need|have\s+(?:a|the)\s+right|have\s+to|permitted|"
    r"allowed|entitled)\b"
    r"|\b(?:no|nobody|neither|nor|never)\b(?=[^.;:]{0,240}?\b(?:shall|may|must|can|will)\b)"
    r"|\bno\s+one\b|\bunder\s+no\s+circumstances\b|\bright\s+not\s+to\b"
    r"|\bno\s+(?:\w+\s+){1,3}?to\s+be\b"  # a heading's prohibition: "No liquor to be consumed … later than …"
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
    r"|\bis\s+free\s+to\b|\bappl(?:y|ies)\b|\bcapable\s+of\b",
    re.I,
)


# Going past an upper limit, and staying within one ("not more than", "not exceeding", "up to").
_BEYOND = re.compile(
    r"\b(?:more|greater|higher|larger|longer|later)\s+than\b|\bexceed(?:s|ed|ing)?\b|\bin\s+excess\s+of\b"
    r"|\babove\b|\bbeyond\b",
    re.I,
)
_WITHIN = re.compile(
    r"\b(?:not|no)\s+(?:more|greater|higher|larger|longer|later)\s+than\b|\bnot\s+(?:to\s+)?exceed(?:s|ing)?\b"
    r"|\bup\s+to\b|\bat\s+(?:the\s+)?most\b|\bwithin\b|\bmaximum\s+of\b",
    re.I,
)
# A duty to act within a limit ("shall … not later than thirty days", "within fourteen days"); "shall grant … up to
# ninety days" limits what is granted, not what may be asked for, so it is not one.
_DEADLINE = re.compile(r"\bnot\s+(?:later|more|longer)\s+than\b|\bnot\s+(?:to\s+)?exceed(?:s|ing)?\b|\bwithin\b", re.I)
# Going past a time: what a deadline forbids.
_LATE = re.compile(
    r"\b(?:later|longer)\s+than\b"
    r"|\b(?:more\s+than|beyond|exceed(?:s|ed|ing)?|in\s+excess\s+of|above)\s+(?:the\s+)?(?:[\w-]+\s+){0,2}"
    r"(?:days?|weeks?|months?|years?|hours?|deadline|period|time(?:\s+limit)?)\b",
    re.I,
)
_OBLIGATION = re.compile(r"\b(?:shall|must)\b(?!\s+not\b)|\b(?:is|are)\s+required\s+to\b", re.I)
# A permission on a condition ("if you need more than this, you may request …") is no blanket leave past a limit.
_CONDITIONAL = re.compile(r"\b(?:if|when|whenever|where|unless|except|without|provided|subject\s+to)\b", re.I)


def permits_beyond(sentence: str) -> bool:
    """Whether ``sentence`` grants leave to go past a limit ("may charge interest above the prescribed rate")."""
    return (
        not forbids(sentence)
        and bool(_PERMISSION.search(sentence))
        and not _WITHIN.search(sentence)
        and not _CONDITIONAL.search(sentence)
        and bool(_BEYOND.search(sentence))
    )


def limits(clause: str, sentence: str) -> bool:
    """Whether ``clause`` sets an upper limit ``sentence`` could go past: forbids going past something ("no lender
    shall … receive … interest at a rate greater than", "shall not require a deposit that exceeds"), or obliges
    within a time ("shall … not later than thirty days"), when the sentence goes past a time ("later than", "more than
    thirty days"; "damage beyond fair wear and tear" is no lateness)."""
    past = bool(_BEYOND.search(_WITHIN.sub(" ", clause)))
    if forbids(clause) and past:
        return True
    deadline = bool(_DEADLINE.search(clause)) and bool(_OBLIGATION.search(clause))
    return deadline and bool(_LATE.search(sentence))


def forbids(text: str) -> bool:
    """Whether ``text`` forbids or denies something (its main clause carries a negation)."""
    return bool(_CLAUSE_NEGATION.search(text))


# A duty the clause denies ("is not obliged to pay", "need not", "under no obligation"), and one a sentence imposes.
_NO_DUTY = re.compile(
    r"\b(?:is|are|be|been)\s+not\s+(?:obliged|required|bound|compelled)\b|\bneed\s+not\b|\bneedn't\b"
    r"|\bunder\s+no\s+(?:obligation|duty)\b|\b(?:does|do)\s+not\s+have\s+to\b",
    re.I,
)
_DUTY = re.compile(
    r"\b(?:shall|must)\b(?!\s+not\b)|\b(?:is|are)\s+(?:obliged|required|bound)\s+to\b|\bha(?:s|ve)\s+to\b", re.I
)
# An exclusion from a rule ("subsection (1) does not apply where …"), and a sentence that extends the rule to it
# ("also covers a defect caused by the consumer's misuse"); only against an exclusion: "the prohibition covers every
# employer" says what "no employer shall …" says.
_EXCLUSION = re.compile(
    r"\b(?:does|do)\s+not\s+(?:apply|cover|extend)\b|\b(?:doesn't|don't)\s+(?:apply|cover|extend)\b", re.I
)
_INCLUSION = re.compile(r"\b(?:covers?|extends?\s+to|appl(?:y|ies)\s+(?:also\s+|even\s+)?to)\b", re.I)
# What the law makes of no effect, and a sentence that gives it effect ("shall be void" against "shall be valid").
_VOID = re.compile(r"\b(?:void|invalid|null|of\s+no\s+(?:force|effect))\b", re.I)
_VALID = re.compile(r"\b(?:valid|lawful|binding|enforceable)\b", re.I)
# A duty to give something back ("shall refund any payment received"), and a sentence letting it be kept ("may keep
# any payment received"); not where the clause itself lets part be kept ("refunded …, less any amount due for damage").
_GIVE_BACK = re.compile(r"\b(?:refund|return|repay|reimburse)(?:s|ed|ing)?\b|\b(?:give|pay|hand)\s+back\b", re.I)
_HOLD = re.compile(r"\b(?:keep|keeps|kept|retain\w*|withh\w*|forfeit\w*)\b", re.I)
_LESS = re.compile(r"\b(?:less|minus|deduct\w*|set[- ]off)\b", re.I)
_CONDITION_OBJECT = re.compile(
    r"\b(?:without|unless|except|excepting|other\s+than|otherwise\s+than|until|before)\s+((?:the\s+|a\s+|an\s+)?\w+)",
    re.I,
)


# A discretion the clause gives ("may", "is entitled to", "at the discretion of", "it shall be lawful for … to").
_DISCRETION = re.compile(
    r"\bmay\b(?!\s+not\b)|\bis\s+entitled\s+to\b|\bat\s+(?:its|his|her|their|the)\s+(?:\w+\s+)?discretion\b"
    r"|\bit\s+shall\s+be\s+lawful\b",
    re.I,
)
# What keeps a duty sentence from reading as one: a deadline or a condition on using the discretion ("must appeal
# within thirty days", "to claim it, you must apply"), which restates a limit, not a new duty.
_DUTY_SCOPE = re.compile(
    r"\b(?:within|before|not\s+later\s+than|by|if|when|where|unless|to\s+(?:claim|get|obtain|keep|use|do\s+so)|"
    r"in\s+order\s+to)\b",
    re.I,
)


def imposes_discretion(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` puts a duty ("must", "shall", "is required to", "has to") where ``clause`` only gives a
    discretion ("may", "is entitled to") and imposes no duty itself: a court that "may order" is not one that "must
    order". A sentence that sets the duty inside a deadline or a condition is left alone: "you must appeal within
    thirty days" is how a permission with a time limit is usually put."""
    return (
        bool(_DUTY.search(sentence))
        and not _NO_DUTY.search(sentence)
        and not _DUTY_SCOPE.search(sentence)
        and bool(_DISCRETION.search(clause))
        and not _DUTY.search(_NO_DUTY.sub(" ", clause))
        and not forbids(clause)
    )


def _conditions(text: str) -> set[str]:
    """The conditions and exceptions ``text`` states, by their first word ("without the consent" -> "without the
    consent")."""
    return {" ".join(m.group(0).lower().split()) for m in _CONDITION_OBJECT.finditer(text)}


def opposite(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` says the opposite of ``clause``, by the mismatches the module describes."""
    if permits_beyond(sentence) and limits(clause, sentence):
        return True
    said, stated = forbids(sentence), forbids(clause)
    if not said and _NO_DUTY.search(clause) and _DUTY.search(sentence) and not _NO_DUTY.search(sentence):
        return True  # "is obliged to pay" against "is not obliged to pay"
    if not said and _VOID.search(clause) and _VALID.search(sentence) and not _VOID.search(sentence):
        return True  # "shall be valid" against "shall be void"
    if (
        not said and _DUTY.search(clause) and _GIVE_BACK.search(clause)
        and not (_LESS.search(clause) or _HOLD.search(clause))
        and _PERMISSION.search(sentence) and _HOLD.search(sentence) and not _GIVE_BACK.search(sentence)
        and not _CONDITIONAL.search(sentence)
    ):  # fmt: skip
        return True  # "may keep any payment received" against "shall refund any payment received"
    if not said and _EXCLUSION.search(clause) and _INCLUSION.search(sentence):
        return True  # "also covers a defect caused by misuse" against "does not apply where the defect was caused by …"
    # A condition both state ("without the consent") is no reason the sentence's polarity may differ, when the
    # sentence has no condition of its own (its "where the processing is necessary" may be the clause's exception).
    conditional = bool(_CONDITION.search(sentence) or _CONDITION.search(clause))
    own = _conditions(sentence)
    if conditional and own and own <= _conditions(clause) and len(_CONDITIONAL.findall(sentence)) == len(own):
        conditional = False
    if said == stated or conditional or _BOUND.search(sentence):
        return False
    if said:  # the sentence forbids what the clause states plainly (a bound in the clause does not change that)
        return True
    return not _BOUND.search(clause) and bool(_PERMISSION.search(sentence))
