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
from functools import lru_cache

_CLAUSE_NEGATION = re.compile(
    r"\b(?:shall|may|must|will|can|could|should|would|need)\s+(?:not|never)\b"
    r"|\b(?:cannot|can't|mustn't|shan't|won't|needn't|mayn't)\b"
    r"|\b(?:is|are|was|were|be|been)\s+not\s+(?:permitted|allowed|entitled|required|obliged|lawful|valid|capable|"
    r"bound|liable|compelled)\b|\bunder\s+no\s+(?:obligation|duty)\b"
    r"|\b(?:does|do|did)\s+not\s+(?:apply|cover|extend|need|have\s+(?:a|the)\s+right|have\s+to)\b"
    r"|\b(?:doesn't|don't|isn't|aren't)\s+(?:apply|cover|extend|need|have\s+(?:a|the)\s+right|have\s+to|permitted|"
    r"allowed|entitled)\b"
    r"|\b(?:no|nobody|neither|nor|never)\b(?=[^.;:]{0,240}?\b(?:shall|may|must|can|will)\b)"
    r"|\bno\s+one\b|\bunder\s+no\s+circumstances\b|\bright\s+not\s+to\b"
    # A power or right denied: "has no power to reduce", "have no right to claim".
    r"|\b(?:has|have|had)\s+no\s+(?:\w+\s+)?(?:rights?|power|powers|authority|claim|duty|obligation)\b"
    r"|\bno\s+(?:\w+\s+){1,3}?to\s+be\b"  # a heading's prohibition: "No liquor to be consumed … later than …"
    # Denying a legal consequence: "is not a crime", "is not punishable", "not an offence".
    r"|\b(?:is|are|was|were|be|been)\s+not\s+(?:an?\s+)?(?:offen[cs]es?|crimes?|criminal|guilty|punishable|"
    r"compulsory|mandatory)\b"
    r"|\b(?:does|do|did|shall|will)\s+not\s+(?:affect|invalidate|impair|prejudice|make|render)\b"
    r"|\b(?:prohibited|forbidden|unlawful|illegal)\b|(?<!\bnot\s)\bonly\b",  # "not only X" restricts nothing
    re.I,
)
# Conditions and exceptions: "cannot … without a hearing" says what "must … have a hearing" says.
# "before" a body is where something is done ("bring the proceedings before the High Court"), not a condition.
_BEFORE_BODY = (
    r"before\s+(?:the|a|an|any|that|this)\s+(?:[\w-]+\s+){0,3}?(?:courts?|tribunals?|magistrates?|judges?|boards?|"
    r"registrars?|commissions?|committees?|officers?)\b"
)
_CONDITION = re.compile(
    rf"\b(?:without|unless|except|excepting|other\s+than|otherwise\s+than|until|(?!{_BEFORE_BODY})before)\b", re.I
)
# Quantity bounds: "may ask up to two months' rent" says what "shall not require more than two months' rent" says.
# "Within" bounds only a time or an amount ("within thirty days", "within a reasonable time", "within the prescribed
# period"); "within a period of vacation leave" or "within the family" says where, and bounds nothing.
_NUMBER_WORDS = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fourteen|fifteen|twenty|thirty|forty|fifty|"
    r"sixty|ninety|hundred)"
)
_BOUND = re.compile(
    r"\b(?:exceeds?|exceeding|more\s+than|less\s+than|fewer\s+than|later\s+than|earlier\s+than|longer\s+than|"
    r"greater\s+than|up\s+to|at\s+most|at\s+least|maximum|minimum|beyond)\b"
    # "within" a place in the law ("within section 12", "within the meaning of") bounds nothing.
    r"|\bwithin\s+(?!(?:the\s+|this\s+|that\s+)?(?:section|subsection|part|paragraph|schedule|meaning|scope|ambit)\b)"
    r"(?:(?:[\w'’-]+\s+){0,5}?(?:\d|" + _NUMBER_WORDS + r"\b(?!\s+of\b))"
    r"|(?:[\w'’-]+\s+){0,3}?(?:(?:days?|weeks?|months?|years?|hours?|minutes?|time|limits?)\b(?!\s+of\b)"
    r"|period\b(?!\s+of\b)|period\s+of\s+(?:the\s+)?notice\b))",
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


def permits_beyond(sentence: str, clause: str = "") -> bool:
    """Whether ``sentence`` grants leave to go past a limit ("may charge interest above the prescribed rate"). A
    permission on a condition counts only where ``clause`` (when given) states no condition or exception at all: a
    limit the clause sets without one ("no lender shall … receive … interest at a rate greater than the prescribed
    rate") is not lifted by a condition the sentence adds ("if the borrower agrees in writing")."""
    return (
        not forbids(sentence)
        and bool(_PERMISSION.search(sentence))
        and not _WITHIN.search(sentence)
        and not (_CONDITIONAL.search(sentence) and (not clause or _ANY_CONDITION.search(clause)))
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


@lru_cache(maxsize=8192)  # a clause is read against every sentence judged with it
def forbids(text: str) -> bool:
    """Whether ``text`` forbids or denies something (its main clause carries a negation)."""
    return bool(_CLAUSE_NEGATION.search(text))


# A duty the clause denies ("is not obliged to pay", "need not", "under no obligation"), and one a sentence imposes.
_NO_DUTY = re.compile(
    r"\b(?:is|are|be|been)\s+not\s+(?:obliged|required|bound|compelled)\b|\bneed\s+not\b|\bneedn't\b"
    r"|\bunder\s+no\s+(?:obligation|duty)\b|\b(?:does|do)\s+not\s+have\s+to\b"
    # The modal first ("shall not be obliged"), or the duty denied to everyone a subject names ("no medical
    # practitioner or nurse … shall be obliged to participate").
    r"|\b(?:shall|will|may)\s+not\s+be\s+(?:obliged|required|bound|compelled)\b"
    r"|(?<!\bif\s)(?<!\bwhere\s)(?<!\bwhen\s)(?<!\bunless\s)\bno\s+"
    r"(?:(?!(?:shall|will|may|must|is|are|was|were|has|have|be|been)\b)[\w-]+\s+){0,25}"
    r"(?:shall|will|may)\s+be\s+(?:obliged|required|bound|compelled)\b",
    re.I,
)
_DUTY = re.compile(
    r"\b(?:shall|must)\b(?!\s+not\b)|\b(?:is|are)\s+(?:obliged|required|bound)\s+to\b|\bha(?:s|ve)\s+to\b", re.I
)
# An exclusion from a rule ("subsection (1) does not apply where …"), and a sentence that extends the rule to it
# ("also covers a defect caused by the consumer's misuse"); only against an exclusion: "the prohibition covers every
# employer" says what "no employer shall …" says.
_EXCLUSION = re.compile(
    r"\b(?:does|do)\s+not\s+(?:apply|cover|extend)\b|\b(?:doesn't|don't)\s+(?:apply|cover|extend)\b"
    # A rule made void in a case ("shall … be void if the consumer has subjected the goods to misuse").
    r"|\b(?:be|is|are|becomes?)\s+void\s+(?:if|where|when)\b"
    # … or brought to an end by an event ("shall cease— (a) when the spouse dies or remarries").
    r"|\b(?:shall|will|must)\s+cease\b",
    re.I,
)


# A rule's reach denied ("this subsection shall not apply"), not an application refused ("may not apply for a
# licence", "shall not apply to the court").
_NOT_APPLIED = re.compile(
    r"\b(?:shall|will|does|do)\s+not\s+(?:apply|extend)\b(?!\s+(?:for|to\s+(?:the|a|any)\s+court)\b)", re.I
)


# A sentence giving a rule with its exception ("must …, unless …", "except where …").
_EXCEPTED = re.compile(r"\b(?:unless|except)\b", re.I)


def takes_out(text: str) -> bool:
    """Whether ``text`` denies a duty ("shall not be obliged to", "need not") or takes a case out of a rule ("does
    not apply", "this subsection shall not apply", "shall cease")."""
    return bool(_NO_DUTY.search(text) or _EXCLUSION.search(text) or _NOT_APPLIED.search(text))


def excludes(text: str) -> bool:
    """Whether ``text`` takes a case out of a rule ("this section shall not apply to …", "does not apply")."""
    return bool(_NOT_APPLIED.search(text) or _EXCLUSION.search(text))


# "also covers …", "applies even if the consumer has misused the goods".
_INCLUSION = re.compile(
    r"\b(?:covers?|extends?\s+to|appl(?:y|ies)\s+(?:also\s+|even\s+)?to)\b|\bappl(?:y|ies)\s+even\s+(?:if|where|when)\b"
    r"|\b(?:continues?|remains?|survives?|lasts?|stays?|carr(?:y|ies)\s+on)\b[^.;]{0,60}?\beven\s+(?:if|after|when|where|"
    r"though|once)\b",
    re.I,
)
# What the law makes of no effect, and a sentence that gives it effect ("shall be void" against "shall be valid").
_VOID = re.compile(r"\b(?:void|invalid|null|of\s+no\s+(?:force|effect))\b", re.I)
# A clause that denies an effect on validity ("does not affect the validity of the marriage").
_UNAFFECTED = re.compile(
    r"\b(?:does|do|did|shall|will|may)\s+not\s+(?:\w+\s+)?(?:affect|impair|prejudice)\s+(?:\w+\s+)?(?:the\s+)?"
    r"validity\b|\b(?:shall|will|does|do)\s+not\s+(?:\w+\s+)?(?:invalidate|render\s+\w+(?:\s+\w+)?\s+(?:void|invalid))",
    re.I,
)
_NOT_VOID = re.compile(r"\b(?:not|never|no\s+longer)\s+(?:\w+\s+){0,2}(?:void|invalid|null)\b", re.I)
_VALID = re.compile(r"\b(?:valid|lawful|binding|enforceable)\b", re.I)
# A clause that denies a criminal consequence ("shall not constitute an offence", "shall not be guilty of an
# offence"), and the consequence named anywhere: a sentence that gives it to what the clause takes out of it says
# the opposite, though it denies nothing itself.
_NO_OFFENCE = re.compile(
    r"\b(?:shall|does|do|is|are|will|would)\s+not\s+(?:\w+\s+){0,2}?(?:constitute|be|amount\s+to)\s+(?:an?\s+)?"
    r"(?:criminal\s+)?(?:offen[cs]es?|crimes?)\b|\bnot\s+(?:be\s+)?guilty\s+of\s+(?:an?\s+)?(?:offen[cs]es?|crimes?)\b"
    r"|\bno\s+(?:criminal\s+)?offen[cs]e\s+(?:is|shall\s+be)\s+committed\b|\bshall\s+not\s+be\s+(?:criminally\s+)?punishable\b"
    r"|\b(?:does|do|shall|will)\s+not\s+commit\s+(?:an?\s+|any\s+)?(?:criminal\s+)?offen[cs]e\b"
    r"|\bcommits?\s+no\s+(?:criminal\s+)?offen[cs]e\b|\bshall\s+not\s+be\s+liable\s+to\s+(?:criminal\s+)?prosecution\b",
    re.I,
)
_OFFENCE = re.compile(r"\b(?:offen[cs]es?|crimes?|criminal|guilty|punishable)\b", re.I)
# A sentence that makes something an offence in so many words ("is a criminal offence", "commits an offence", "is
# punishable"); one that denies it or exempts from it ("is not in itself a crime", "is immune from prosecution") does
# not.
_MAKES_OFFENCE = re.compile(
    r"\b(?:is|are|was|were|be|becomes?|constitutes?|amounts?\s+to|commits?|counts?\s+as)\s+(?:\w+\s+){0,2}?(?:an?\s+)?"
    r"(?:criminal\s+)?(?:offen[cs]e|crime)\b|\b(?:is|are|be)\s+(?:\w+\s+)?punishable\b|\bguilty\s+of\b",
    re.I,
)
_NOT_OFFENCE = re.compile(
    r"\b(?:not|no|never)\s+(?:[\w,]+\s+){0,3}?(?:offen[cs]es?|crimes?|criminal|guilty|punishable)\b"
    r"|\b(?:protected|immune|exempt|shielded|excluded|free)\s+from\b|\bno\s+longer\b"
    r"|\b(?:cannot|can['’]t|may\s+not)\s+be\s+(?:charged|prosecuted|convicted)\b",
    re.I,
)
# A sentence that says an act is no offence in so many words ("is not a crime", "you do not commit an offence",
# "cannot be prosecuted"), and a clause that makes one of contravening what a provision forbids.
_DENIES_OFFENCE = re.compile(
    rf"{_NO_OFFENCE.pattern}|\b(?:is|are|was|were|be)\s+not\s+(?:\w+\s+){{0,2}}?(?:an?\s+)?(?:criminal\s+)?(?:offen[cs]e|crime)\b"
    r"|\bnot\s+(?:a\s+)?criminal\b|\b(?:cannot|can['’]t|may\s+not|will\s+not)\s+be\s+(?:charged|prosecuted|convicted|punished)\b",
    re.I,
)
_GUILTY = re.compile(r"\b(?:shall\s+be|is|are)\s+guilty\s+of\s+an\s+offen[cs]e\b|\bcommits\s+an\s+offen[cs]e\b", re.I)


def denies_offence(sentence: str) -> str | None:
    """What ``sentence`` says is no offence (the sentence with its denial taken out), or None if it denies none."""
    found = _DENIES_OFFENCE.search(sentence)
    return None if found is None else sentence[: found.start()] + " " + sentence[found.end() :]


def makes_offence(clause: str) -> bool:
    """Whether ``clause`` makes an offence ("shall be guilty of an offence", "commits an offence")."""
    return bool(_GUILTY.search(clause))


def takes_out_of_offence(text: str) -> bool:
    """Whether ``text`` takes an act out of an offence ("shall not constitute an offence", "does not commit an
    offence")."""
    return bool(_NO_OFFENCE.search(text))


# A duty to give something back ("shall refund any payment received"), and a sentence letting it be kept ("may keep
# any payment received"); not where the clause itself lets part be kept ("refunded …, less any amount due for damage").
_GIVE_BACK = re.compile(r"\b(?:refund|return|repay|reimburse)(?:s|ed|ing)?\b|\b(?:give|pay|hand)\s+back\b", re.I)
_HOLD = re.compile(r"\b(?:keep|keeps|keeping|kept|retain\w*|withh\w*|forfeit\w*)\b", re.I)
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


def imposes_discretion(sentence: str, clause: str, closest: str | None = None) -> bool:
    """Whether ``sentence`` puts a duty ("must", "shall", "is required to", "has to") where ``clause`` only gives a
    discretion ("may", "is entitled to") and imposes no duty itself: a court that "may order" is not one that "must
    order". A sentence that sets the duty inside a deadline or a condition is left alone: "you must appeal within
    thirty days" is how a permission with a time limit is usually put. ``clause`` may be a window of several
    sentences; given the one among them closest to the sentence (``closest``), a prohibition elsewhere in the window
    ("(3) … shall not be responsible for any cost") does not hide the discretion ("(5) … he or she may (a) retain the
    goods or (b) return them"): only the closest one must not forbid."""
    duty = _DUTY.search(sentence)
    if not duty or _NO_DUTY.search(sentence) or _DUTY_SCOPE.search(sentence):
        return False
    if closest is not None and not forbids(closest) and _discretion_to(sentence[duty.end() :], closest):
        return True  # the closest clause leaves the very act to discretion ("may … grant"), whatever else is a duty
    return (
        bool(_DISCRETION.search(clause))
        and not _DUTY.search(_NO_DUTY.sub(" ", clause))
        and not forbids(clause if closest is None else closest)
    )


def _discretion_to(act: str, clause: str) -> bool:
    """Whether ``clause`` gives a discretion ("may", "is entitled to") and no duty, to do what ``act`` (the words
    after a sentence's "must") names: at least half its words (of four letters or more) are the clause's ("must grant
    assistance" against "the Director may, on application …, grant social welfare assistance"; "must send them back
    at the supplier's risk and expense" against "may (a) retain the goods; or (b) at the risk and expense of the
    supplier, return the goods")."""
    if not _DISCRETION.search(clause) or _DUTY.search(_NO_DUTY.sub(" ", clause)):
        return False
    words = {w[:5] for w in re.findall(r"[a-z]{4,}", act.lower())} - {"them", "they", "their", "there", "thing"}
    stated = {w[:5] for w in re.findall(r"[a-z]{4,}", clause.lower())}
    return bool(words) and 2 * len(words & stated) >= len(words)


# A list of what a decision-maker may weigh ("the circumstances … may include— (a) the duration …", "may have regard
# to"), and a sentence that makes something necessary ("must have", "requires", "is essential").
_MAY_WEIGH = re.compile(
    r"\bmay\s+(?:include|have\s+regard\s+to|take\s+into\s+account|consider|be\s+taken\s+into\s+account)\b", re.I
)
_NECESSARY = re.compile(
    r"\b(?:must|shall)\b(?!\s+not\b)|\b(?:has|have|need|needs)\s+to\b|\brequire[sd]?\b|\brequirements?\b"
    r"|\b(?:necessary|essential|compulsory|mandatory)\b|\bonly\s+if\b",
    re.I,
)


def requires_factor(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` makes necessary ("a couple must have a sexual relationship", "requires a shared home") what
    the provision only lists among the things a decision-maker may weigh ("the circumstances … may include— (c)
    whether a sexual relationship exists"): at least two words after the sentence's "must" (of four letters or
    more), at least half of them in that list and no fewer there than in the rest of the provision. A duty to weigh
    them ("the court must consider the duration") is ``imposes_discretion``'s."""
    necessary = _NECESSARY.search(sentence)
    if not necessary:
        return False
    after = sentence[necessary.end() :]
    if re.match(r"\s+(?:\w+\s+){0,2}(?:consider|weigh|regard|account|look)", after, re.I):
        return False
    words = {w[:5] for w in re.findall(r"[a-z]{4,}", after.lower())} - {
        "have",
        "show",
        "that",
        "they",
        "their",
        "there",
    }
    if len(words) < 2:
        return False
    for weigh in _MAY_WEIGH.finditer(provision):
        end = SUBSECTION_MARK.search(provision, weigh.end())
        listed = provision[weigh.end() : end.start() if end else len(provision)]
        if _DUTY.search(listed):
            continue
        rest = provision[: weigh.start()] + " " + provision[end.start() if end else len(provision) :]
        inside = words & {w[:5] for w in re.findall(r"[a-z]{4,}", listed.lower())}
        outside = words & {w[:5] for w in re.findall(r"[a-z]{4,}", rest.lower())}
        if 2 * len(inside) >= len(words) and len(inside) >= len(outside):
            return True
    return False


SUBSECTION_MARK = re.compile(r"\s\(\d{1,3}[A-Za-z]?\)\s")


# "shall be competent to witness", "shall be entitled to": a status the clause gives, not a duty it imposes.
_STATUS = re.compile(
    r"\b(?:shall|must)\s+be\s+(?:competent|entitled|eligible|capable|able|qualified|deemed|liable|free|"
    r"permitted|allowed)\b",
    re.I,
)
_PRONOUNS = frozenset("your their they them this that these those there what which".split())
_MAY_ACT = re.compile(r"\b(?:may|can)\s+(?:choose\s+(?:whether\s+)?(?:or\s+not\s+)?to\s+)?([a-z]{3,})\b", re.I)


def grants_discretion(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` leaves to discretion ("an employer may grant a further period") what ``clause`` makes a
    duty ("an employer shall, at the request of the employee …, grant a further period") and leaves to no one's
    discretion: the same act (the verb after "may", in the clause after its "shall"), the same party (the sentence's
    subject is named in the clause before its "shall")."""
    said = _MAY_ACT.search(_asserted(sentence))
    duty = _DUTY.search(_STATUS.sub(" ", clause))
    if said is None or duty is None or forbids(sentence) or forbids(clause) or _DISCRETION.search(clause):
        return False
    subject = {w.lower()[:5] for w in re.findall(r"[A-Za-z]{4,}", _asserted(sentence)[: said.start()])} - _PRONOUNS
    clause = _STATUS.sub(" ", clause)
    before, after = clause[: duty.start()].lower(), clause[duty.end() :].lower()
    verb = said.group(1).lower()[:5]
    return bool(subject) and any(w in before for w in subject) and bool(re.search(rf"\b{verb}", after))


def _conditions(text: str) -> set[str]:
    """The conditions and exceptions ``text`` states, by their first word ("without the consent" -> "without the
    consent")."""
    return {" ".join(m.group(0).lower().split()) for m in _CONDITION_OBJECT.finditer(text)}


# Every way a sentence or a clause may attach a condition, an exception or a scope to what it says.
_ANY_CONDITION = re.compile(
    r"\b(?:if|when|whenever|where|wherever|unless|except|excepting|without|provided|subject\s+to|only|with|once|"
    r"after|before|until|other\s+than|otherwise\s+than|as\s+long\s+as|so\s+long\s+as|in\s+the\s+case\s+of|save|"
    r"notwithstanding|in\s+(?:such\s+)?circumstances)\b",
    re.I,
)
# A condition put first ("If he cannot show that, …", "Where both parents have died or cannot do it, …"): a negation
# inside it is the condition's, not what the sentence asserts.
_LEADING_CONDITION = re.compile(
    r"^\W*(?:(?:yes|no)\s*[:,]\s*)?(?:if|where|when|whenever|once|unless|as\s+long\s+as)\b[^,;:]{3,}?,\s+(?=\w)", re.I
)
_TRAILING_CONDITION = re.compile(r",?\s+(?:if|where|when|whenever|once|unless)\b[^;:]*$", re.I)
# An exception a clause makes from its rule: "except in such circumstances as may be prescribed", "other than the
# parent or guardian", "unless he holds a certificate": the words of what is excepted, up to the clause's next stop.
_EXCEPTION = re.compile(
    r"\b(?:except|excepting|save|other\s+than|otherwise\s+than|unless|without)\s+"
    r"((?:(?!(?:of|shall|may|must|who|which|is|are|to)\b)[\w'’-]+\s*){1,6})",
    re.I,
)
_EXCEPTION_FILLER = frozenset(
    "a an the of in on to for by as such may be is are his her its their any or and that which who this with you "
    "your my our he she it they him them we i not no did does do if has have had was were "
    "prescribed provided".split()
)
# A clause that prohibits outright ("no parent … shall", "shall not", "may not"), not one that merely carries a
# negation somewhere ("show cause why an order should not be made").
_PROHIBITS = re.compile(r"\bno\b[^.;]{0,200}?\b(?:shall|may)\b|\b(?:shall|may|must)\s+not\b|\bprohibited\b", re.I)
# A party the sentence expressly includes in a rule ("not only the parent", "the child included", "including the
# child", "even the child"), for comparing with a party the clause excepts from it.
_INCLUDED = re.compile(
    r"\bnot\s+only\s+((?:[\w'’-]+\s*){1,5})|((?:[\w'’-]+\s+){1,4})included\b"
    # "even the child", not "even if …", "even without …", "even then"
    r"|\b(?:including|even(?!\s+(?:if|when|where|though|after|before|without|with|so|then|more|less|once)\b))\s+"
    r"((?:[\w'’-]+\s*){1,5})",
    re.I,
)
# A requirement a sentence waives ("does not need a medical certificate", "even without knowing", "whether or not
# it is registered"), and the clause's own waiver of it.
_WAIVED = re.compile(
    r"\b(?:(?:does|do|did)\s+not|doesn't|don't|need\s+not|needn't)\s+(?:need|require|have\s+to\s+(?:have|get|"
    r"show|produce|give))\s+((?:[\w'’-]+\s*){1,4})|\beven\s+without\s+((?:[\w'’-]+\s*){1,4})"
    r"|\bno\s+(?:need\s+for|requirement\s+of)\s+((?:[\w'’-]+\s*){1,4})"
    # "no burial order is needed", "a warrant is not required"
    r"|\bno\s+((?:[\w'’-]+\s+){1,3})(?:is|are)\s+(?:needed|required|necessary)\b"
    r"|((?:[\w'’-]+\s+){1,3})(?:is|are)\s+not\s+(?:needed|required|necessary)\b"
    # "may work … before obtaining a licence": leave to act before one has what the clause requires.
    r"|\b(?:may|can)\b[^.;]{0,80}?\bbefore\s+(?:obtaining|getting|having|holding|receiving|being\s+granted)\s+"
    r"((?:[\w'’-]+\s*){1,4})",
    re.I,
)
_CLAUSE_DISPENSES = re.compile(r"\b(?:need\s+not|not\s+(?:be\s+)?(?:required|necessary)|dispense\w*|waive\w*)\b", re.I)
_CLAUSE_WAIVER = re.compile(
    r"\b(?:(without)|whether\s+or\s+not|irrespective\s+of|regardless\s+of)\s+((?:[\w'’-]+\s*){1,6})", re.I
)
_WITHOUT = re.compile(r"\bwithout\s+((?:(?!(?:and|or|but|without)\b)[\w'’-]+\s*){1,4})", re.I)
# "X alone decides", "only X may decide", against "agreed by X and Y", "by agreement between": a choice the clause
# gives two parties together, which the sentence gives one of them.
_ALONE = re.compile(r"\b(?:alone|solely|unilaterally|sole\s+discretion|on\s+(?:his|her|its|their)\s+own)\b", re.I)
# A decision the clause makes with another party's say ("after consultation with the Chief Justice", "with the
# approval of the Minister") is no more one party's alone than an agreement is.
_JOINT = re.compile(
    r"\bagreed\s+(?:by|between|upon\s+by)\b|\bby\s+(?:mutual\s+)?agreement\b|\bjointly\b"
    r"|\b(?:after|in|upon|on)\s+consultation\s+with\b|\bwith\s+the\s+(?:prior\s+)?(?:approval|consent|concurrence|"
    r"agreement)\s+of\b|\bon\s+the\s+recommendation\s+of\b",
    re.I,
)


def _words(text: str) -> set[str]:
    """Lower-cased words of ``text``, a plural's "s" dropped, less filler: for comparing who or what two phrases
    name."""
    found = {w.lower().removesuffix("'s").removesuffix("’s") for w in re.findall(r"[\w'’-]+", text)}
    return {w.removesuffix("s") if len(w) > 3 else w for w in found if w not in _EXCEPTION_FILLER}


# A word's negative by prefix ("fair" "unfairly", "lawful" "unlawful", "legal" "illegal", "relevant" "irrelevant");
# never "in-" or "im-" ("form" "inform", "prove" "improve").
_NEGATIVE_PREFIX = re.compile(r"^(?:un|non-?|il(?=l)|ir(?=r))(\w{4,})$")
_NOT_NEGATIVES = frozenset("unless until under understand undertake undertaking uniform union unit unite united unity "
                           "universal university unlike".split())  # fmt: skip


def _negatives(text: str) -> set[str]:
    """The words ``text`` negates by a prefix, as their plain word's first four letters and more ("unfairly" ->
    "fairly")."""
    found = set()
    for word in re.findall(r"[a-z-]+", text.lower()):
        match = _NEGATIVE_PREFIX.match(word)
        if match and word not in _NOT_NEGATIVES and not word.startswith("under"):
            found.add(match.group(1))
    return found


# Words whose opposite is another word, not a prefix: what the law demands against what it leaves to choice.
_OPPOSED = ((frozenset({"compulsory", "mandatory", "obligatory"}), frozenset({"voluntary", "optional"})),)


def _opposed_words(said: set[str], stated: set[str]) -> bool:
    """One side uses a word of a pair's one half and the other a word of its other half, neither using both."""
    for one, other in _OPPOSED:
        for a, b in ((said, stated), (stated, said)):
            if a & one and b & other and not a & other and not b & one:
                return True
    return False


def antonym(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` uses a word plainly where ``clause`` uses its negative by prefix, or the reverse, and
    neither uses the other form: "the dismissal still counts as fair" against "an employee is unfairly dismissed"."""
    said_words = set(re.findall(r"[a-z]+", sentence.lower()))
    clause_words = set(re.findall(r"[a-z]+", clause.lower()))

    def turned(plain: set[str], plain_negatives: set[str], other: set[str], negatives: set[str]) -> bool:
        # A plain word on one side, its negative on the other; neither side also has the other form.
        return any(
            negative[:4] == word[:4] and (word.startswith(negative) or negative.startswith(word))
            and not any(n[:4] == word[:4] for n in plain_negatives) and word not in other
            for negative in negatives for word in plain if len(word) >= 4
        )  # fmt: skip

    said_neg, clause_neg = _negatives(sentence), _negatives(clause)
    if _opposed_words(said_words, clause_words):
        return True
    return turned(said_words, said_neg, clause_words, clause_neg) or turned(clause_words, clause_neg, said_words,
                                                                            said_neg)  # fmt: skip


# A main verb denied: "are not counted", "does not inherit", "is no longer", "has not been"; and the relative clause
# that keeps a negation from being the sentence's own ("a person who does not pay …").
_DENIED = re.compile(
    r"\b(?:is|are|was|were|be|been|does|do|did|has|have|had|will|would)\s+(?:not|no\s+longer)\s+(?!only\b)\w+"
    r"|\b(?:isn't|aren't|doesn't|don't|didn't|hasn't|haven't|wasn't|weren't|won't)\b",
    re.I,
)
_RELATIVE = re.compile(r"\b(?:who|which|that|whose|whom)\b(?:\W+\w+){0,5}\W*$", re.I)


def _denies(text: str) -> bool:
    """Whether ``text`` denies its main verb (a negation outside any relative clause)."""
    return any(not _RELATIVE.search(text[: m.start()]) for m in _DENIED.finditer(text))


def without_leading_condition(sentence: str) -> str:
    """``sentence`` less a condition put first ("If you are applying and you are not a close relative, …")."""
    return _LEADING_CONDITION.sub("", sentence, count=1)


def _asserted(sentence: str) -> str:
    """What a sentence asserts, a leading condition ("If he cannot show that, …") or a trailing one ("… is unfair if
    the employer cannot show …") left out."""
    main = _LEADING_CONDITION.sub("", sentence, count=1)
    trailing = _TRAILING_CONDITION.search(main)
    return main[: trailing.start()] if trailing and len(main[: trailing.start()].split()) >= 3 else main


# Who acts in a sentence: the words before its first "must", "may", "shall" … (a passive "must be given" names no
# actor); in a clause, also the party after "the duty of", and the agent of a passive ("shall be given … by the
# occupier").
_ACTS = re.compile(
    r"\b(?:must|shall|may|can|(?:is|are)\s+(?:required|obliged|entitled|allowed|permitted)\s+to|ha(?:s|ve)\s+to)\b",
    re.I,
)
_DUTY_OF = re.compile(
    r"\b(?:duty|obligation|responsibility)\s+of\b(?P<who>.*?)\bto\s+(?!the\b|a\b|an\b|any\b)\w+", re.I
)
_AGENT = re.compile(r"\bby\s+(?P<who>(?:the|a|an|any)\s+[^,;.]{3,60})", re.I)
_ACTOR_FILLER = frozenset("who person anyone someone everyone one duty also then only itself alone first".split())


# The party a clause has something done to or for: "give notice to the registrar", "deliver it with the clerk".
_RECIPIENT = re.compile(
    r"\b(?:to|with|upon)\s+(?:the|a|an|any|such)\s+([^.;:,]{1,40}(?:\s*,\s*(?:the|a|an)\s+[^.;:,]{1,40})*)", re.I
)
_STOP = re.compile(r"[.;:—–]\s*|\bprovided\s+that\b,?\s*", re.I)
_NEW_SUBJECT = re.compile(r"(?:\band|\bor|\bbut)\s+((?:the|a|an|every|any|each)\s+[^;:.]{1,80})$", re.I)
_NEW_SUBJECT_AFTER_COMMA = re.compile(r",\s+((?:the|a|an|every|any|each)\s+[^;:.,]{1,80})$", re.I)
ACTOR_WORDS = 3
# "shall be transmitted", "shall, as soon as possible …, be transmitted", "may also be served".
_PASSIVE = re.compile(r"(?:\s*,[^,;]{0,120},)?\s+(?:not\s+)?(?:\w+ly\s+|also\s+|then\s+)?(?:be|have\s+been)\b", re.I)


def _actor(sentence: str) -> set[str]:
    """The words naming who must or may act in ``sentence`` ("the registrar may give notice": {"registrar"}), empty
    for a passive, a pronoun, "any person" or a phrase of more than ``ACTOR_WORDS`` words (a description, not a
    party)."""
    main = _asserted(sentence)
    acts = _ACTS.search(main)
    if acts is None or re.match(
        r"\s+(?:not\s+)?(?:\w+ly\s+|also\s+|then\s+)?(?:be|have\s+been)\b", main[acts.end() :], re.I
    ):
        return set()
    before = re.split(r"[,;:]", main[: acts.start()])[-1]
    before = re.split(r"\b(?:the|a|an|every|each|any|no|such)\s+", re.sub(r"^\W*it\s+is\s+", "", before, flags=re.I))[
        -1
    ]
    actor = {w for w in _words(before) if len(w) >= 4} - _ACTOR_FILLER
    return actor if len(actor) <= ACTOR_WORDS else set()


def gives_to_another(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` puts on one party what ``clause`` puts on another, the sentence's party being named in the
    clause only as the one the other acts towards ("the registrar may give notice" against "it shall be the duty of
    any person … finding such child … to give to the registrar … notice"). Where the clause names the sentence's
    party before any of its "shall"s, as the one with a duty, or as a passive's agent, the party is the clause's
    too."""
    actor = _actor(sentence)
    if not actor:
        return False
    holders: set[str] = set()
    start = 0
    for acts in _ACTS.finditer(clause):
        # The subject of a "shall" since the last stop; "…, and shall send" shares the one before it, and a
        # passive's subject is what is done, not who does it.
        stops = [m.end() for m in _STOP.finditer(clause, start, acts.start())]
        subject = clause[stops[-1] if stops else start : acts.start()]
        if start and not stops:  # after another "shall": only a new subject ("…, and the supplier shall")
            new = _NEW_SUBJECT.search(subject) or _NEW_SUBJECT_AFTER_COMMA.search(subject)
            subject = new.group(1) if new else ""
        if not _PASSIVE.match(clause, acts.end()):
            holders |= _words(subject)
        start = acts.end()
    for match in (*_DUTY_OF.finditer(clause), *_AGENT.finditer(clause)):
        holders |= _words(match.group("who"))
    recipients = set().union(*(_words(m.group(1)) for m in _RECIPIENT.finditer(clause)))
    return bool(holders - _EXCEPTION_FILLER) and not actor & holders and actor <= recipients


def includes_excepted(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` brings into a rule the party its ``clause`` excepts: "Any adult, not only the child's
    parent or guardian, may give such an order" against "No person other than the parent or guardian of a child shall
    give a written order"; "anyone who takes part, the child included, commits an offence" against "any person, other
    than the child, who …"."""
    excepted = [_words(m.group(1)) for m in _EXCEPTION.finditer(clause)]
    for match in _INCLUDED.finditer(sentence):
        named = _words(next(g for g in match.groups() if g))
        if named and any(named & words for words in excepted):
            return True
    return False


def waives_requirement(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` waives what ``clause`` requires: "does not need a medical certificate" against "supported
    by a certificate signed by a registered medical practitioner", "even without knowing" against "knowing that the
    marriage still subsists", "can apply without the court's permission" against "shall seek the leave of the court
    to make an application without the consent of the complainant". The clause must name what is waived (at least
    half its words) and not do without it itself ("whether or not it", "without it", "need not")."""
    if _CLAUSE_DISPENSES.search(clause):
        return False
    stated = _words(clause)
    # What the clause itself does without ("without the consent of the complainant"): the sentence may say so too.
    # (A prohibition's "without" is a requirement: "no person shall import … without the authority of the Minister".)
    unneeded = set().union(
        *(_words(m.group(2)) for m in _CLAUSE_WAIVER.finditer(clause) if not (m.group(1) and _PROHIBITS.search(clause)))
    )
    phrases = [next(g for g in m.groups() if g) for m in _WAIVED.finditer(sentence)]
    # A permission to act "without" something is a waiver of it too ("can apply without the court's permission"); a
    # prohibition's "without" restates the requirement ("cannot be dismissed without a hearing").
    # Only a permission with no other condition: one that states the clause's exception ("… without the consent of
    # the data subject where the processing is necessary …") is the clause's rule in other words.
    unconditional = not _ANY_CONDITION.search(_WITHOUT.sub(" ", sentence))
    if unconditional and _PERMISSION.search(sentence) and not forbids(_asserted(sentence)):
        phrases += [m.group(1) for m in _WITHOUT.finditer(_asserted(sentence))]
    for phrase in phrases:
        waived = _words(phrase)
        if waived & stated and 2 * len(waived & stated) >= len(waived) and not waived & unneeded:
            return True
    return False


def blanket_permission(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` grants, with no condition of its own, what ``clause`` forbids save in an exception the
    sentence never mentions ("a parent may let a child stay away from school to work" against "Except in such
    circumstances as may be prescribed, no parent shall … permit the child … to absent himself from school …").
    A sentence that names what the clause excepts ("a legal practitioner may appear" against "no person other than
    a legal practitioner may appear") states the exception, and one with a condition may state it in other words."""
    if forbids(_asserted(sentence)) or not _PERMISSION.search(sentence) or _ANY_CONDITION.search(sentence):
        return False
    exceptions = list(_EXCEPTION.finditer(clause))
    if not exceptions or not _PROHIBITS.search(clause) or _BOUND.search(sentence):
        return False
    # The exception is named by its own words, not by those it shares with the rule it excepts from ("no patient …,
    # other than a private patient …": "patient" is the rule's, "private" the exception's).
    rule = _words(_EXCEPTION.sub(" ", clause))
    excepted = set().union(*(_words(m.group(1)) for m in exceptions))
    return not ((excepted - rule or excepted) & _words(sentence))


# A sentence that states its rule as holding without any condition ("always", "in every case", "whenever he asks",
# "whether or not anyone asks", "may never be refused"), and a clause that attaches one ("if", "unless", "subject to",
# "at the request of", "on application") or only gives a discretion ("may").
_ABSOLUTE = re.compile(
    r"\b(?:always|in\s+(?:every|all)\s+cases?|whether\s+or\s+not|regardless|irrespective|absolute(?:ly)?|"
    r"unconditional(?:ly)?|automatically|on\s+the\s+spot|whenever|no\s+matter|of\s+any\s+age|without\s+exception|"
    r"(?:can|may|shall|will|is|are)\s+never|never\s+(?:be|allowed|permitted|required))\b",
    re.I,
)
_QUALIFIED = re.compile(
    r"\b(?:if|unless|except|excepting|provided|subject\s+to|where|only|save|upon|may|on\s+condition|"
    r"at\s+the\s+request|on\s+(?:the\s+)?(?:request|application)|in\s+the\s+case\s+of)\b",
    re.I,
)


def overstates(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` states as absolute ("an employee is always entitled to a further ninety days", "a court
    may extend the order whenever a parent asks") a rule its ``clause`` makes conditional or discretionary ("if …
    the medical practitioner considers it probable", "may, on application, …"): a condition dropped in so many words.
    A clause that is itself absolute ("at any time", "whether or not …") is left alone."""
    return bool(_ABSOLUTE.search(sentence)) and bool(_QUALIFIED.search(clause)) and not _ABSOLUTE.search(clause)


# A permission the clause gives at any time ("shall at all times be entitled to pay"), and a sentence that makes it
# wait on someone's leave ("needs the seller's consent before paying").
_AT_ANY_TIME = re.compile(r"\bat\s+(?:all\s+times|any\s+time)\b", re.I)
_NEEDS_LEAVE = re.compile(
    r"\b(?:needs?|requires?|must\s+(?:first\s+)?(?:get|obtain|have|seek)|has\s+to\s+(?:get|obtain|have|seek)|only\s+with)"
    r"\b[^.;]{0,40}?\b(?:consent|permission|approval|leave|authority|agreement)\b",
    re.I,
)
_GRANTS = re.compile(r"\bentitled\b|\bmay\b(?!\s+not\b)", re.I)
_LEAVE_WORDS = re.compile(r"\b(?:consent|permission|approval|leave|authority|agreement|authori[sz]\w*)\b", re.I)


def needs_leave(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` makes wait on someone's consent what ``clause`` lets be done at any time and without
    anyone's leave ("a purchaser shall at all times be entitled to pay any instalment … before it is due")."""
    return (
        bool(_NEEDS_LEAVE.search(sentence))
        and bool(_AT_ANY_TIME.search(clause))
        and bool(_GRANTS.search(clause))
        and not _LEAVE_WORDS.search(clause)
    )


def opposite(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` says the opposite of ``clause``, by the mismatches the module describes."""
    if permits_beyond(sentence, clause) and limits(clause, sentence):
        return True
    if includes_excepted(sentence, clause) or waives_requirement(sentence, clause) or overstates(sentence, clause):
        return True
    if needs_leave(sentence, clause):
        return True  # "needs the seller's consent before paying" against "shall at all times be entitled to pay"
    if grants_discretion(sentence, clause):
        return True  # "an employer may grant" against "an employer shall … grant"
    if gives_to_another(sentence, clause):
        return True  # "the registrar may give notice" against "any person … finding such child … to the registrar"
    if _ALONE.search(sentence) and _JOINT.search(clause):
        return True  # "the day your employer alone decides" against "a day agreed by the employer and employee"
    # A negation inside a leading condition ("If he cannot show that, …") is not what the sentence asserts; read
    # without it only where the whole sentence's polarity differs from the clause's (whose own conditions may carry
    # a negation too: "where … unlawful intercourse").
    stated = forbids(clause)
    said = forbids(sentence)
    said = said if said == stated else forbids(_asserted(sentence))
    # A sentence may deny in words a clause never uses for a prohibition ("are not counted as vacation leave" against
    # "shall be counted"): read in what the sentence asserts, outside its relative clauses, against a clause that
    # denies nothing.
    said = said or (not stated and _denies(_asserted(sentence)))
    if said == stated and antonym(sentence, clause):
        return True  # "the dismissal counts as fair" against "an employee is unfairly dismissed"
    if not said and _UNAFFECTED.search(clause) and _VOID.search(sentence) and not _NOT_VOID.search(sentence):
        return True  # "makes the marriage invalid" against "does not affect the validity of the marriage"
    if (
        not said
        and _NO_DUTY.search(clause)
        and not _DUTY.search(_NO_DUTY.sub(" ", clause))
        and _DUTY.search(sentence)
        and not _NO_DUTY.search(sentence)
        and not _EXCEPTED.search(sentence)
    ):
        # "is obliged to pay" against "is not obliged to pay"; a clause that also imposes the duty ("shall be liable
        # to maintain …: Provided that … shall not be obliged to maintain …"), or a sentence that gives the duty with
        # its exception ("must maintain … unless the natural parents maintain the child"), is read by other checks.
        return True
    if not said and _VOID.search(clause) and _VALID.search(sentence) and not _VOID.search(sentence):
        return True  # "shall be valid" against "shall be void"
    if (
        not said and _NO_OFFENCE.search(clause) and not _OFFENCE.search(_NO_OFFENCE.sub(" ", clause))
        and _MAKES_OFFENCE.search(sentence) and not _NOT_OFFENCE.search(sentence) and not _EXCEPTED.search(sentence)
    ):  # fmt: skip
        return True  # "economic abuse is a criminal offence" against "the following … shall not constitute an offence"
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
    if said == stated or _BOUND.search(sentence):
        return False
    if conditional:
        return blanket_permission(sentence, clause)
    if said:  # the sentence forbids what the clause states plainly (a bound in the clause does not change that)
        return True
    return not _BOUND.search(clause) and bool(_PERMISSION.search(sentence))
