"""What a provision says of a case, read over the whole provision: a sentence that states as a fact what a clause only
supposes, gives leave for what it supposes is done, says a rule holds in a case a limb sets apart, says an act is no
offence that the provision makes one, turns an outcome round, makes a time to act within a wait, or states as a fact
what a power only lets someone declare. Each reading returns whether the sentence says the opposite of the
provision; ``api.composer.judge.rules.support`` asks them all."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from .facts import facts
from .limbs import subsection_spans
from .meaning import content_terms, in_its_words
from .polarity import (
    SUBSECTION_MARK,
    denies_offence,
    excludes,
    forbids,
    makes_offence,
    takes_out,
    takes_out_of_offence,
)

# Where a sentence joins two claims to be read one by one: a semicolon, or "but".
CLAIM_JOINS = re.compile(r";\s+|,?\s+but\s+")

# What a clause supposes rather than states: "… shall be valid notwithstanding that the witnesses were unaware of its
# contents" says nothing of whether they were; "even if", "where", "if" and "unless" suppose in the same way.
_SUPPOSES = re.compile(
    r"\b(?:notwithstanding\s+that|even\s+(?:if|though|where)|in\s+the\s+event\s+that|if|where|unless)\b", re.I
)
# A supposition ends at a clause's punctuation, or where the main clause's subject and modal begin without a comma
# ("If any child is found abandoned it shall be the duty of …").
_SUPPOSITION_END = re.compile(
    r"[,;:]\s|\s[—–-]\s|—"
    # Not after a word that leaves a phrase open ("at the time the will was made", "in the High Court shall apply"),
    # and "will" as a modal only after a pronoun.
    r"|(?<!\bof)(?<!\bin)(?<!\bat)(?<!\bon)(?<!\bto)(?<!\bby)(?<!\bfor)(?<!\bthat)(?<!\bfrom)(?<!\bwith)(?<!\bupon)"
    r"\s(?=(?:(?:it|he|she|they|there)\s+(?:shall|must|will)|(?:the|such)\s+[\w-]+(?:\s+[\w-]+)?\s+(?:shall|must))\b)",
    re.I,
)
_UNLESS = re.compile(r"\b(?:without|unless|except|until|provided\s+that|subject\s+to)\b", re.I)


def supposition_as_fact(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` states as a fact what ``clause`` only supposes: nearly all its words are the words of a
    supposition of the clause ("notwithstanding that …", "where …, …"), it shares at most one with the rest of the
    clause (the rule that says what follows), and it supposes nothing itself. Copied word for word, such a sentence
    still turns "valid even if the witnesses were unaware" into "the witnesses were unaware"."""
    said = content_terms(sentence)
    if len(said) < 3 or _SUPPOSES.search(sentence) or _UNLESS.search(sentence):
        return False
    for found in _SUPPOSES.finditer(clause):
        end = _SUPPOSITION_END.search(clause, found.end())
        supposed = clause[found.end() : end.start() if end else len(clause)]
        rest = content_terms(clause[: found.start()] + " " + (clause[end.start() :] if end else ""))
        held = said & content_terms(supposed)
        if 5 * len(held) >= 4 * len(said) and len(said & (rest - content_terms(supposed))) <= 1:
            return True
    return False


# A permission a sentence gives ("a lender may charge …", "you can keep …"), and the case a clause's rule is given
# for ("in respect of any loan at a rate exceeding the prescribed rate, the lender shall …").
_PERMITS = re.compile(
    r"\b(?:may|can|(?:is|are)\s+(?:allowed|permitted|free|entitled)\s+to)\s+(?!not\b|be\b|have\s+to\b)(?P<act>[^.;]+)",
    re.I,
)
_CASE_OPENS = re.compile(r"\b(?:in\s+respect\s+of|in\s+the\s+case\s+of|whenever|where|if)\b", re.I)
# Where a permission's act ends and the law it is said to come from begins ("… under the Moneylending Act").
_UNDER_LAW = re.compile(r"\s+(?:under|in\s+terms\s+of|according\s+to|as\s+provided\s+(?:in|by))\s+(?:the\s+)?(?=[A-Z])")
_CLAUSE_PERMITS = re.compile(
    r"\b(?:may(?!\s+be\b)|entitled|allowed|permitted|lawful)\b", re.I
)  # not "as may be prescribed"
PERMITTED_SHARE = 0.75
"""Share of a permission's words that must be the supposed case's for it to be read as turning the case into leave."""


def permits_supposed(sentence: str, clause: str) -> bool:
    """Whether ``sentence`` gives leave to do what ``clause`` only supposes is done: "a lender may charge interest
    above the prescribed rate" against "in respect of any loan … at a rate of interest exceeding the prescribed rate,
    the lender shall … supply a statement". A rule for a case someone brings about (a loan above the rate, a notice
    given late) says what follows from it, not that it is allowed. Read where at least ``PERMITTED_SHARE`` of the
    permission's words (three or more) are the supposed case's, and the clause gives no leave itself."""
    permission = _PERMITS.search(sentence)
    if permission is None or _CLAUSE_PERMITS.search(clause):
        return False
    act = content_terms(_UNDER_LAW.split(permission.group("act"))[0])
    if len(act) < 3:
        return False
    for opened in _CASE_OPENS.finditer(clause):
        end = _SUPPOSITION_END.search(clause, opened.end())
        case = content_terms(clause[opened.end() : end.start() if end else len(clause)])
        held = in_its_words(act, case) & case
        if len(held) >= 3 and len(held) >= PERMITTED_SHARE * len(act):
            return True
    return False


# A case a sentence says its rule holds in all the same ("even if …", "regardless of whether …"), or names as one of
# those it covers ("including a dealer buying for resale", "even of goods made to order").
_DESPITE = re.compile(
    r"\b(?:even\s+(?:if|though|where|when)|even(?=\s+(?!(?:so|more|less|further|greater|higher|lower|longer|shorter|"
    r"better|worse|then|now|still|just|only)\b)\w)|regardless\s+of\s+whether|whether\s+or\s+not|including)\b",
    re.I,
)
_DESPITE_IN_LAW = re.compile(
    r"\b(?:notwithstanding|even\s+(?:if|though|where|when)|whether\s+or\s+not|despite)\b"
    r"|\bwhether\b[^.;]{0,120}\bor\s+not\b",
    re.I,
)
# A provision's limbs: its clauses between full stops, semicolons, colons and dashes, where a proviso's exceptions
# stand apart.
_LIMB = re.compile(r"[;:—–]|\.\s")
# A proviso: it changes its rule in the case it names ("Provided that a creditor shall be deemed to have become aware
# … if he could have acquired knowledge … by exercising reasonable care"), perhaps after an amendment's note.
_PROVISO_OPENS = r"^\s*(?:\[[^\]]{0,200}\]\s*)?(?:and\s+)?provided\s+(?:further\s+|always\s+)?that\b"
_PROVISO = re.compile(_PROVISO_OPENS, re.I)
# A proviso's own case ("Provided that, if any person who is managing … is present …, he shall also be guilty"), and
# words that say only how it says what follows.
_PROVISO_CASE = re.compile(_PROVISO_OPENS + r"[,\s]*(?:if|where|when|in\s+the\s+case\s+of)\b[^,]*,", re.I)
_MODAL_WORDS = frozenset({"may", "shall", "must", "provid", "also"})
# A rule that is itself an ending ("an order … ends in several cases, including when the child is adopted"): the case
# it names is one of the ending's, not one set apart from it.
_ENDING = re.compile(
    r"\b(?:ends?|ended|ceas\w*|laps\w*|terminat\w*|expir\w*|stops?|stopped|loses?|lost|vacat\w*|extinguish\w*)\b", re.I
)
DESPITE_SHARE = 0.5
"""Share of the case's words (two or more) a limb that denies the rule must hold for the case to be its exception."""


def despite_excepted(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` says its rule holds in a case ("you still have to pay even if the child's own parents
    are already supporting the child properly") that a limb of the provision takes out of it ("Provided that— (i) a
    step-parent shall not be obliged to maintain a step-child which is being adequately maintained by its natural
    parents"). Read where a limb that denies a duty or takes a case out of a rule (only the latter for a rule that
    itself forbids) holds at least ``DESPITE_SHARE`` of the case's words, unless a limb holding them keeps the rule in
    it ("notwithstanding that …", "whether or not …").

    A list's item is read with the list's opening ("Subsection (1) shall not apply to any vehicle which— (a) is
    acquired by any dealer …"), and must hold the word the case ends on, which says which of its kind it is (a
    foreign airline is not "any foreign government"). A proviso sets its case apart unless the sentence states what
    the proviso then says of it ("… including at a trial before a board of officers, where a member may represent
    him"). Left alone: a sentence whose own rule is an ending or an exclusion ("ends in several cases, including
    when the child is adopted"), whose cases are the ending's."""
    found = _DESPITE.search(sentence)
    if found is None:
        return False
    before = sentence[: found.start()]
    if takes_out(before) or _ENDING.search(before):
        return False
    # A rule that forbids ("cannot be granted … even if …") is turned round only by a limb that lifts it for the case
    # ("shall not apply in respect of …"); one that gives a duty or leave, by any limb that takes the case out.
    taken_out = excludes if forbids(before) else takes_out
    end = re.search(r"[,;:]", sentence[found.end() :])
    named = sentence[found.end() : found.end() + end.start() if end else len(sentence)]
    case = content_terms(named)
    if len(case) < 2:
        return False
    last = content_terms(" ".join(re.findall(r"[A-Za-z][\w'’-]*", named)[-1:]))
    said = content_terms(sentence)
    limbs = _limbs(provision)
    for limb, terms, opened in limbs:
        held = in_its_words(case, terms) & terms
        if len(held) < 2 or len(held) < DESPITE_SHARE * len(case):
            continue
        # The provision may itself keep its rule in the case ("notwithstanding that the agent has died").
        if _DESPITE_IN_LAW.search(limb):
            return False
        if taken_out(limb):
            return True
        if any(taken_out(opening) for opening in opened) and in_its_words(last, terms) <= terms:
            return True
        proviso = next((part for part in (limb, *opened) if _PROVISO.match(part)), None)
        if proviso is not None:
            # What the proviso says of its case beyond what the rule says ("… shall be entitled to be represented …
            # by a member"): a sentence that says it keeps the proviso.
            case_end = _PROVISO_CASE.match(proviso)
            consequence = proviso[case_end.end() :] if case_end else " ".join((limb, *opened))
            says = content_terms(consequence) - held - content_terms(provision.replace(proviso, " ")) - _MODAL_WORDS
            if 2 * len(in_its_words(said, says) & says) < len(says):
                return True
    return False


@lru_cache(maxsize=64)
def _limbs(provision: str) -> tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]:
    """The limbs of ``provision``, each with its words and the openings of the lists it is an item of (its
    subsection's first list and the nearest one, until a full stop or a new subsection ends them); an item's words
    are read with the nearest opening's, which names what the item is ("… any registered vehicle which— (a) is
    acquired by any dealer …"). Read once per provision: every sentence judged against it asks."""
    found: list[tuple[str, frozenset[str], tuple[str, ...]]] = []
    first = nearest = ""
    start = 0
    for cut in [*_LIMB.finditer(provision), None]:
        limb = provision[start : cut.start() if cut else len(provision)]
        if SUBSECTION_MARK.match(f" {limb.lstrip()}"):
            first = nearest = ""
        opened = tuple(dict.fromkeys(o for o in (first, nearest) if o))
        found.append((limb, frozenset(content_terms(f"{limb} {nearest}" if nearest else limb)), opened))
        if cut is None:
            break
        if cut.group().strip() in {"—", "–"}:
            first, nearest = first or limb, limb
        elif cut.group().startswith("."):
            first = nearest = ""
        start = cut.end()
    return tuple(found)


# What keeps an act out of an offence in a sentence's own words: a condition it is done under ("with a licence",
# "unless …") may be the provision's exception, so only a sentence that names the offence's own negative case
# ("without a licence", "not registered") or none is read against it.
_NEGATIVE_CASE = re.compile(
    r"\b(?:without|other\s+than|otherwise\s+than|not|no|never|un(?:licen[cs]ed|registered|authori[sz]ed|lawful\w*)"
    r"|illegal\w*)\b",
    re.I,
)
# The offence's own case in the forbidding text: the act is forbidden only without something ("unless he is
# registered", "other than a licensee"); the prohibition's own "no person shall" is not such a case.
_OFFENCE_CASE = re.compile(r"\b(?:without|other\s+than|otherwise\s+than|unless|except)\b", re.I)
# A case the act is spared in, in the sentence: "unless …", "except …", "with a licence", "if he holds …" ("tampering
# with a seal" is the act, not a case).
_SPARED = re.compile(
    r"\b(?:unless|except|with\s+(?:a|an|the|his|her|their|your|written|prior)\b"
    r"|if\s+(?:you|he|she|they|it)\s+(?:has|have|hold|holds|is|are))\b",
    re.I,
)
# The subsections an offence clause says are contravened, or the section itself ("contravenes this section").
_CONTRAVENES = re.compile(
    r"\b(?:contravenes?|fails?\s+to\s+comply\s+with)\s+(?:(?:the\s+)?provisions?\s+of\s+)?"
    r"(?:(?P<refs>sub-?sections?\s+\(\w+\)(?:\s*(?:,|or|and)\s*(?:sub-?section\s+)?\(\w+\))*)|(?P<whole>this\s+section))",
    re.I,
)
_REFERENCE = re.compile(r"\((\w+)\)")
# A sentence of the provision: an offence's clause may hold a list of the acts ("Any person who— (a) …; or (b) …;
# shall be guilty of an offence").
_PROVISION_SENTENCE = re.compile(r"\.(?:\s|$)")
# What lifts an offence from a case: "this section shall not apply to …", "nothing in this section shall apply to …",
# "it shall be a defence …".
_LIFTS = re.compile(
    r"\bnothing\s+in\s+this\s+(?:section|subsection|Act|Part)\b[^.;]{0,60}\b(?:shall|applies|apply)\b"
    r"|\bshall\s+be\s+a\s+(?:sufficient\s+|good\s+)?defence\b|\bit\s+is\s+a\s+defence\b",
    re.I,
)
OFFENCE_SHARE = 0.6
"""Share of the act's words (two or more) the forbidding text must hold for a denied offence to be its offence."""


def offence_denied(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` says an act is no offence ("Performing a scientific experiment without a licence is not a
    crime") that the provision makes one: a sentence of the provision that makes an offence ("shall be guilty of an
    offence") holds at least ``OFFENCE_SHARE`` of the act's words, or the subsections (or the section) it says are
    contravened do ("(2) No person other than a licensee shall perform a scientific experiment. … (4) Any person who
    contravenes subsection (2) … shall be guilty of an offence"). Left alone where the provision itself takes an act
    out of an offence, or lifts it from a case ("subsection (2) shall not apply to …", "nothing in this section shall
    apply to …") whose words the act has beyond the offence's; and where the sentence names a case the act is spared
    in ("with a licence", "unless …") rather than the offence's own."""
    rest = denies_offence(sentence)
    if rest is None or takes_out_of_offence(provision) or _SPARED.search(rest):
        return False
    act = content_terms(rest) - {"offenc", "offence", "crime", "criminal", "not", "no"}
    if len(act) < 2:
        return False
    numbered = {number: provision[start:end] for start, end, number in subsection_spans(provision)}
    forbidding: list[str] = []
    for clause in _PROVISION_SENTENCE.split(provision):
        if not makes_offence(clause):
            continue
        forbidding.append(clause)
        for found in _CONTRAVENES.finditer(clause):
            if found.group("whole"):
                forbidding.append(provision)
            else:
                forbidding += [numbered[n] for n in _REFERENCE.findall(found.group("refs")) if n in numbered]
    offence_words = set().union(*(content_terms(text) for text in forbidding))
    for limb, terms, opened in _limbs(provision):
        if excludes(limb) or _LIFTS.search(limb) or any(excludes(o) or _LIFTS.search(o) for o in opened):
            if (in_its_words(act, terms) & terms) - offence_words:
                return False
    for text in forbidding:
        words = content_terms(text)
        held = in_its_words(act, words) & words
        if len(held) >= 2 and len(held) >= OFFENCE_SHARE * len(act):
            # The offence's own negative case ("other than a licensee") must be the sentence's too.
            if not _OFFENCE_CASE.search(text) or _NEGATIVE_CASE.search(rest):
                return True
    return False


# Outcomes that exclude each other, by their own words (the thesaurus folds "the end of the lease" into "cease"): a
# request granted is not one refused; a right, duty, appointment or body that stays is not one the law ends. A
# provision also words them its own way ("shall issue" a licence, "may cancel" a registration, "shall vacate his
# office", "shall not relieve him from any liability"), which a sentence's word for the same outcome is read against,
# not the other way round.
_OUTCOMES = (
    (
        re.compile(r"\b(?:grant(?:s|ed)?|approv(?:e|es|ed)|accept(?:s|ed)?)\b", re.I),
        re.compile(r"\b(?:refus(?:e|es|ed|al)|reject(?:s|ed)?|denied|declin(?:e|es|ed))\b", re.I),
    ),
    (
        re.compile(
            r"\b(?:keeps?|kept|retain(?:s|ed)?|remain(?:s|ed)?|continu(?:e|es|ed)|surviv(?:e|es|ed)|stay(?:s|ed)?"
            r"|persist(?:s|ed)?)\b",
            re.I,
        ),
        re.compile(
            r"\b(?:extinguish(?:es|ed)?|ceas(?:e|es|ed)|laps(?:e|es|ed)|terminat(?:e|es|ed)|revok(?:e|es|ed)"
            r"|forfeit(?:s|ed)?|abolish(?:es|ed)?|ends|ended)\b",
            re.I,
        ),
    ),
)
_IN_LAW = (
    (re.compile(r"\b(?:(?:shall|may|to)\s+issue|issued)\b", re.I), None),
    (None, re.compile(r"\b(?:cancel(?:s|led)?|withdrawn|vacat(?:e|es|ed)|expir(?:e|es|ed)|reliev(?:e|es|ed))\b", re.I)),
)
_NEGATED = re.compile(r"\b(?:not|no|never|neither|nor|cannot)\b|n['’]t\b", re.I)
# A case that turns an outcome round in time or by exception ("continues until she remarries", "unless revoked",
# "remains a member as long as he holds office"): the sentence then says when the other outcome comes, which the
# provision may say too.
_TURNING_CASE = re.compile(
    r"\b(?:unless|until|except|before|other\s+than|till|while|whilst|(?:as|so)\s+long\s+as)\b", re.I
)
# The other outcome denied ("shall not relieve him from any liability"), or offered beside the sentence's ("may issue
# or refuse to issue"), or said to come only so ("shall cease to hold office only in terms of this Act").
_DENIED = re.compile(r"\b(?:not|no|never)\s+(?:be\s+|have\s+|\w+ly\s+)?(\w+)", re.I)
_EITHER = re.compile(r"\bor\s+(?:to\s+)?(?:refus|reject|declin)\w*|\b(?:refus|reject|declin)\w*\s+or\b", re.I)
_ONLY = re.compile(r"[^.;]{0,60}?\bonly\b", re.I)
# What a clause supposes ("if …", "where …", "that it should remain registered"): outcomes there are not its own.
_SUPPOSED = re.compile(r"\b(?:if|where|when|whenever|upon|unless|that)\b[^,;—–]*", re.I)
# "Keep … displayed", "keep … closed": a duty to keep a thing in a state, not a right or a status that stays.
_KEPT_SO = re.compile(
    r"\b(?:keep|keeps|kept|keeping|retain|retains|retained)\s+(?:[\w'’-]+,?\s+){0,8}?\w+(?:ed|en)\b", re.I
)
OUTCOME_SHARE = 0.5
"""Share of the sentence's other words (two or more) a provision's sentence must hold to be about what it says."""


def outcome_turned(sentence: str, provision: str, units: list[tuple[int, int]], unit_terms: list[set[str]]) -> bool:
    """Whether ``sentence`` gives an outcome ("the birth parents keep their duty to maintain the child", "the request
    is treated as granted") where a sentence of the provision about the same things (at least ``OUTCOME_SHARE`` of
    the sentence's other words) gives the one that excludes it ("all … duties … of the parents … shall be
    extinguished", "shall be deemed to have refused the request") and none of them gives the sentence's own. An
    outcome inside what a clause supposes ("… that it should remain registered") is not the clause's; one offered
    beside the sentence's ("may issue or refuse"), denied, or said to come only so, gives no turn. Left alone: a
    sentence that negates anything or says until when, as long as what, or unless what, its outcome holds.
    ``unit_terms``: each unit's words, as the caller read them."""
    if _NEGATED.search(sentence) or _TURNING_CASE.search(sentence):
        return False
    return any(_outcome_turned(part, provision, units, unit_terms) for part in CLAIM_JOINS.split(sentence))


def _outcome_turned(sentence: str, provision: str, units: list[tuple[int, int]], unit_terms: list[set[str]]) -> bool:
    kept_so = _KEPT_SO.search(sentence)
    for (first, second), (first_in_law, second_in_law) in zip(_OUTCOMES, _IN_LAW, strict=True):
        for own, other, own_in_law, other_in_law in (
            (first, second, first_in_law, second_in_law),
            (second, first, second_in_law, first_in_law),
        ):
            said = [found for found in own.finditer(sentence) if not (kept_so and kept_so.start() == found.start())]
            if not said or other.search(sentence):
                continue
            rest = content_terms(own.sub(" ", sentence)) - {"shall", "may", "must"}
            gives_own = _either(own, own_in_law)
            gives_other = _either(other, other_in_law)
            about = []
            for (a, b), terms in zip(units, unit_terms, strict=True):
                clause = provision[a:b]
                held = in_its_words(rest, terms) & terms
                if len(held) >= 2 and len(held) >= OUTCOME_SHARE * len(rest):
                    stated = _SUPPOSED.sub(" ", clause)
                    kept = (
                        any(gives_other(found.group(1)) for found in _DENIED.finditer(clause))
                        or bool(_EITHER.search(clause))
                        or any(_ONLY.match(stated, found.end()) for found in other.finditer(stated))
                    )
                    about.append((stated, kept))
            # One sentence about the same things giving the sentence's own outcome, or keeping it ("shall not relieve
            # him from any liability"), is enough for it.
            if (
                about
                and not any(gives_own(clause) or kept for clause, kept in about)
                and any(gives_other(clause) for clause, _ in about)
            ):
                return True
    return False


def _either(words: re.Pattern[str], in_law: re.Pattern[str] | None) -> Callable[[str], bool]:
    """Whether a provision's text gives the outcome ``words`` name, or its own wording of it ``in_law``."""
    return lambda text: bool(words.search(text) or (in_law is not None and in_law.search(text)))


# A sentence that makes a time a wait before an act ("a period of one year … before it can be renounced", "must wait
# six months before they can apply"), and a provision that makes it the time within which the act must be done
# ("unless, before the expiry of that period, he has renounced …", "within six months").
_WAIT_BEFORE = re.compile(
    r"\b(?:period|wait\w*|after)\b[^.;]{0,120}?\bbefore\s+(?:\w+\s+){0,3}?(?:can|may|could|is\s+allowed\s+to)\s+"
    r"(?:be\s+)?(?P<act>[^.;,]{3,80})",
    re.I,
)
# A provision that itself makes a time a wait ("may apply … after a period of five years", "shall not … before").
_WAIT_IN_LAW = re.compile(
    r"\bmay\b[^.;]{0,80}?\bafter\s+(?:a\s+period\s+of\s+)?(?:[\w-]+\s+){0,3}(?:days?|weeks?|months?|years?)\b"
    r"|\bafter\s+(?:a\s+period\s+of\s+)?(?:[\w-]+\s+){0,3}(?:days?|weeks?|months?|years?)\b[^.;]{0,80}?\bmay\b"
    r"|\b(?:shall|may)\s+not\s+(?:\w+\s+){0,4}(?:before|until)\b",
    re.I,
)
_WITHIN_LIMIT = re.compile(r"\b(?:before\s+the\s+(?:expiry|end|lapse)\s+of|within)\b(?P<rest>[^.;]{0,200})", re.I)


def waits_for_deadline(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` turns a period within which an act must be done into one that must pass before it may be:
    "a period of one year after the acquisition … before it can be renounced" against "shall cease to be a citizen …
    one year after … unless, before the expiry of that period, he has effectively renounced …". Read where the act's
    words (two or more, or all of a shorter act) follow the provision's "before the expiry of" or "within" in a
    sentence of the provision that states the sentence's period, and the provision makes no time a wait itself."""
    wait = _WAIT_BEFORE.search(sentence)
    if wait is None:
        return False
    figures = facts(sentence).numbers
    if not figures or _WAIT_IN_LAW.search(provision):
        return False
    act = content_terms(wait.group("act"))
    if not act:
        return False
    for limit in _WITHIN_LIMIT.finditer(provision):
        terms = content_terms(limit.group("rest"))
        held = in_its_words(act, terms) & terms
        # The limit must be the sentence's period: stated in the same sentence of the provision.
        start = max(provision.rfind(". ", 0, limit.start()), provision.rfind("; ", 0, limit.start())) + 1
        end = min((at for at in (provision.find(". ", limit.end()), provision.find("; ", limit.end())) if at >= 0),
                  default=len(provision))  # fmt: skip
        if len(held) >= min(2, len(act)) and figures & facts(provision[start:end]).numbers:
            return True
    return False


# A power to declare something to be of a kind ("the President may declare that the day … shall be deemed to be a
# non-business day", "the Minister may, by notice, declare any area to be a controlled area").
_DECLARES = re.compile(
    r"\bmay\b[^.;:]{0,120}?\b(?:declare|designate|proclaim)s?\b[^.;:]{0,160}?\b(?:to\s+be|as|be\s+deemed\s+to\s+be)\s+"
    r"(?P<kind>(?:an?\s+|the\s+)?[\w-]+(?:\s+[\w-]+){0,3}?)(?=\s+(?:for|of|in|under|within|and|or|with)\b|[.,;:]|$)",
    re.I,
)
# What says a kind is given by a decision, not by the law: a modal, a decision's verb, or its maker.
_DECIDED = re.compile(
    r"\b(?:may|might|can|could|if|when|where|once|declare[sd]?|declaring|declaration|designate[sd]?|designation|"
    r"proclaim(?:s|ed)?|proclamation|notice|power|decides?|decided)\b",
    re.I,
)


def declared_as_fact(sentence: str, provision: str) -> bool:
    """Whether ``sentence`` says a thing is of a kind that the provision only empowers someone to declare it:
    "Independence Day is a non-business day" against "the President may declare that the day … shall be deemed to be
    a non-business day". Read where the sentence names no decision ("may", "if", "declares", "notice" …), holds
    every word of the kind, and the provision states the kind nowhere but in such a power."""
    said = content_terms(sentence)
    for words, kind in _declared_kinds(provision):
        # The kind's own words may be a decision's ("a designated country"); the rest of the sentence names none.
        if kind <= in_its_words(said, set(kind)) and not _DECIDED.search(re.sub(words, " ", sentence, flags=re.I)):
            return True
    return False


@lru_cache(maxsize=64)
def _declared_kinds(provision: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The kinds ``provision`` only empowers someone to declare a thing to be (a pattern matching the kind's words,
    and its terms), read once per provision: every sentence of an answer citing it is judged against it."""
    out = []
    for power in _DECLARES.finditer(provision):
        kind = content_terms(power.group("kind"))
        if not kind:
            continue
        words = re.escape(power.group("kind").strip()).replace(r"\ ", r"\s+")
        # Stated elsewhere, not as what is declared ("the person so declared as an agent"), the kind is the law's.
        plain = any(
            not power.start() <= m.start() < power.end()
            and not _DECIDED.search(provision[max(0, m.start() - 40) : m.start()])
            for m in re.finditer(words, provision, re.I)
        )
        if not plain:
            out.append((words, frozenset(kind)))
    return tuple(out)
