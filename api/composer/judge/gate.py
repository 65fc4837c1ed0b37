"""The gate: split an answer into sentences, judge each against the provisions it cites, and decide.

- AttributionGate: every paragraph of the answer carries at least one [n] marker of a source it was given, and
  an answer cites at least two sources when it was given two or more that are relevant enough to quote.
- QuoteVerifier: every quoted span of 8 or more words occurs verbatim (spacing aside) in a cited provision.
- Every number, date and named body in a sentence with a marker occurs in a provision it cites.
- ``gate_model_answer``: the sentence-level AttributionGate for model answers (below), each claim judged by a
  ``ClaimJudge`` (``api.composer.judge.judge``); what the reader is then shown is ``api.composer.judge.choice``'s
  decision, and ``api.composer.judge.streaming`` runs the same gate as the answer streams.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from api.schemas.events import Citation
from api.text.instruments import instruments_named, names
from api.text.provisions import provision_at, provision_span, provision_starts
from api.text.schedules import unpinpointed
from api.text.sentences import sentence_spans, split_sentences

from ..citations import (
    MARKER,
    MIN_QUOTE_WORDS,
    find_references,
    locate_quote,
    resolve_reference,
    subsection_label,
)
from ..llm import ABSTAIN_PHRASE
from .conditions import states_condition
from .facts import facts, missing_facts, without_references
from .judge import ClaimJudge
from .meaning import SUPPORT_THRESHOLD, content_terms, points_at, provision_units
from .quotes import (
    MIN_CLAIM_TERMS,
    around_quotes,
    cut_before_exception,
    cut_from_condition,
    cut_from_negation,
    framing_denies,
    identity,
    only_names,
    quote_carries,
    quoted_spans,
    relation_unshown,
    strip_markers,
)
from .rules import RulesJudge, Support
from .topic import Topic

# A quoted span holds no opening curly mark: straight marks in a provision's heading or text (Meaning of " member ")
# must not pair with one in the lead and swallow its words up to the curly quote that opens the real passage.
_QUOTED = re.compile(r"[“\"]([^“”\"]{10,}?)[”\"]")


def _normal(text: str) -> str:
    return " ".join(text.replace("’", "'").replace("“", '"').replace("”", '"').split()).lower()


_ENDS_ELIDED = re.compile(r"^\s*(?:…|\.\.\.)\s*|\s*(?:…|\.\.\.)\s*$")


def _elided_in(quote: str, source: str) -> bool:
    """Whether ``quote`` is in ``source`` word for word; a "…" at its start or end only marks that the sentence goes
    on (words left out inside a quote are the gate's to judge, limb by limb)."""
    return _ENDS_ELIDED.sub("", quote) in source


@dataclass(slots=True)
class Verification:
    quotes_checked: int = 0
    quotes_failed: list[str] = field(default_factory=list)
    uncited_paragraphs: int = 0
    unknown_markers: list[int] = field(default_factory=list)
    too_few_sources: bool = False
    unsupported_facts: list[str] = field(default_factory=list)
    """Sentences stating a number, date or named body that none of the provisions they cite states."""

    @property
    def passed(self) -> bool:
        return not (
            self.quotes_failed
            or self.uncited_paragraphs
            or self.unknown_markers
            or self.too_few_sources
            or self.unsupported_facts
        )

    def summary(self) -> dict[str, int]:
        return {
            "quotes_checked": self.quotes_checked,
            "quotes_failed": len(self.quotes_failed),
            "uncited_paragraphs": self.uncited_paragraphs,
            "unknown_markers": len(self.unknown_markers),
            "too_few_sources": int(self.too_few_sources),
            "unsupported_facts": len(self.unsupported_facts),
        }


def verify_answer(
    answer: str, offered: Mapping[int, Citation], provisions: Mapping[str, str], relevant_sources: int = 1
) -> Verification:
    """``offered``: citations by marker; ``provisions``: section id -> full provision text to check quotes in;
    ``relevant_sources``: how many distinct provisions the evidence held that were judged relevant."""
    result = Verification()
    cited_sections = {offered[int(m)].section_id for m in MARKER.findall(answer) if int(m) in offered}
    result.too_few_sources = relevant_sources >= 2 and len(cited_sections) < 2
    for paragraph in (p for p in re.split(r"\n\s*\n", answer) if p.strip()):
        markers = [int(m) for m in MARKER.findall(paragraph)]
        result.unknown_markers += [m for m in markers if m not in offered]
        cited = [offered[m] for m in markers if m in offered]
        if not cited and len(paragraph.split()) >= MIN_QUOTE_WORDS:
            result.uncited_paragraphs += 1
        sources = [_normal(provisions.get(c.section_id, c.quote)) for c in cited] or [
            _normal(provisions.get(c.section_id, c.quote)) for c in offered.values()
        ]
        for sentence, _ in split_sentences(paragraph):
            # A marker is not support: the facts a cited sentence states must be in what it cites.
            cites = [offered[int(m)] for m in MARKER.findall(sentence) if int(m) in offered]
            cited_text = "\n".join(provisions.get(c.section_id, c.quote) for c in cites)
            if cites and missing_facts(sentence, cited_text, "\n".join(identity(c) for c in cites)):
                result.unsupported_facts.append(sentence)
        for span in _QUOTED.findall(paragraph):
            if len(span.split()) < MIN_QUOTE_WORDS:
                continue
            result.quotes_checked += 1
            if not any(_elided_in(_normal(span), source) for source in sources):
                result.quotes_failed.append(span)
    return result


# --- Sentence-level AttributionGate for model answers ---------------------------------------------------------------
#
# A model's [n] markers are hints, not proof. Each sentence about the law is checked on its own: its quotes must occur
# verbatim in an offered provision, and the provision it is attributed to (by marker, by a natural citation such as
# "section 3 of the Marriages Act", or located by its words when it names none) must state every fact in it and be
# close enough in meaning (``rules.support``), and speak of the question's topic words the sentence repeats. The
# gate attaches the citations itself and drops what fails.

MIN_GATE_QUOTE_WORDS = 3
MAX_REMOVED_SHARE = 0.5


_BULLET = re.compile(r"^\s*[-*•]\s+")
_NUMBERED = re.compile(r"^\s*\d{1,2}[.)]\s+")
_LIST_PREFIX = re.compile(f"{_BULLET.pattern}|{_NUMBERED.pattern}")
_NOT_A_CLAIM = re.compile(
    r"could not find|cannot find|can't find|not legal advice|consult (?:a|an|your) (?:lawyer|legal|attorney)|"
    r"seek legal advice|i hope this|let me know|here (?:is|are) (?:what|the)|based on the (?:sources|documents) "
    r"(?:provided|given)[,:]?$",
    re.I,
)

# Words that make even a short sentence a statement about the law: a verdict, a negation, an exception, a modal.
_ANSWER_WORD = re.compile(r"\b(?:yes|no|not|never|except|excepted|unless|only|may|shall|must|cannot|can)\b|n't\b", re.I)
_CLAUSE = re.compile(r"[,;:]\s+|\s+[-–—]\s+")


@dataclass(slots=True)
class SentenceCheck:
    """One sentence of a model answer and what the gate decided about it."""

    text: str
    separator: str
    """The whitespace that followed the sentence in the answer (kept when the answer is rebuilt)."""
    claim: bool = False
    markers: list[int] = field(default_factory=list)
    referenced: list[int] = field(default_factory=list)
    """Offered citations named in words ("section 3 of the Marriages Act")."""
    pinned: bool = False
    """The sentence names a provision in words: only that provision may support it (none, if it was not offered)."""
    cited: list[int] = field(default_factory=list)
    """The citations the gate attaches: the provisions that support it."""
    how: str = ""  # marker | reference | located | reattributed
    quotes: list[str] = field(default_factory=list)
    quotes_failed: list[str] = field(default_factory=list)
    missing_facts: list[str] = field(default_factory=list)
    opposite: bool = False
    """The provision that shares its words says the opposite (``api.composer.judge.polarity``)."""
    off_topic: list[str] = field(default_factory=list)
    """The question's topic words the sentence applies its provision to and the provision never mentions."""
    dropped: list[str] = field(default_factory=list)
    """The words of a condition the provision gives its rule under and the sentence leaves out
    (``api.composer.judge.conditions``)."""
    score: float = 0.0
    spans: dict[int, str] = field(default_factory=dict)
    """Verbatim span of each attached provision that supports the sentence (its quote, or its best window)."""
    quoted: set[int] = field(default_factory=set)
    """Attached provisions whose span is the sentence's own verified quote."""
    pending: tuple[int, str] | None = None
    """A provision that supports the sentence but for a condition it leaves out, and its span: the next sentence may
    state the condition (``condition_follows``)."""

    @property
    def verdict(self) -> str:
        if not self.claim:
            return "not_a_claim"
        if self.quotes_failed:
            return "unverified_quote"
        if self.cited:
            return "supported"
        return "unsupported" if (self.markers or self.referenced or self.pinned) else "uncited"


@dataclass(slots=True)
class GateResult:
    sentences: list[SentenceCheck]
    answer: str
    """The answer rebuilt from the sentences that passed, each carrying the markers of the provisions supporting it."""
    citations: list[Citation]
    """The attached citations in order of first use, each quoting a verbatim span of its provision."""
    abstained: bool = False
    headings: dict[int, str] = field(default_factory=dict)
    """The offered provisions' headings, by marker (what a corrective search adds to the question)."""

    @property
    def claims(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if s.claim]

    @property
    def failed(self) -> list[SentenceCheck]:
        return [s for s in self.claims if s.verdict != "supported"]

    @property
    def passed(self) -> bool:
        """Every sentence about the law is supported by a provision it was given, and every quote is verbatim."""
        return not self.failed and (bool(self.claims) or self.abstained)

    @property
    def usable(self) -> bool:
        """With the failed sentences removed, what is left still answers: a supported claim, most claims kept."""
        claims = self.claims
        supported = len(claims) - len(self.failed)
        return supported > 0 and len(self.failed) <= MAX_REMOVED_SHARE * len(claims)

    def summary(self) -> dict[str, int]:
        verdicts = [s.verdict for s in self.claims]
        quotes = [q for s in self.sentences for q in s.quotes]
        return {
            "claims": len(verdicts),
            "claims_supported": verdicts.count("supported"),
            "claims_unsupported": verdicts.count("unsupported"),
            "claims_uncited": verdicts.count("uncited"),
            "claims_missing_facts": sum(bool(s.missing_facts) and s.verdict != "supported" for s in self.claims),
            "claims_opposite": sum(s.opposite and s.verdict != "supported" for s in self.claims),
            "claims_off_topic": sum(bool(s.off_topic) and s.verdict != "supported" for s in self.claims),
            "claims_dropped_condition": sum(bool(s.dropped) and s.verdict != "supported" for s in self.claims),
            "quotes_checked": len(quotes),
            "quotes_failed": sum(len(s.quotes_failed) for s in self.sentences),
            "citations_located": sum(s.how == "located" for s in self.claims),
            "citations_from_references": sum(s.how == "reference" for s in self.claims),
            "citations_reattributed": sum(s.how == "reattributed" for s in self.claims),
        }


_COMPLETE = re.compile(r"(?:[.!?:;]|\]|[.!?][\"”’)]+)$")


def complete_sentences(text: str) -> str:
    """``text`` without a trailing fragment (a sentence the model had not finished: "The landlord may")."""
    pieces = split_sentences(text)
    while pieces and not _COMPLETE.search(pieces[-1][0]):
        pieces.pop()
    return "".join(sentence + separator for sentence, separator in pieces).strip()


def _is_claim(sentence: str, markers: list[int], quotes: list[str]) -> bool:
    """Whether a sentence says something about the law. A clause that only signs off ("This is not legal advice")
    does not, but it does not excuse the clause beside it ("…, but a landlord may cut off the electricity")."""
    if markers or quotes:
        return True
    body = _LIST_PREFIX.sub("", sentence)
    if not facts(body).empty:
        return True
    said = " ".join(c for c in _CLAUSE.split(body) if not _NOT_A_CLAIM.search(c))
    return len(content_terms(said)) >= MIN_CLAIM_TERMS or bool(_ANSWER_WORD.search(without_references(said)))


# A sentence about what its sources leave out ("… is not explicitly stated in the given sources", "the Act does not
# define …"): a negated verb of saying, with the sources, the law or the provision as what does not say it.
_NOT_SAID = re.compile(
    r"\b(?:(?:is|are|was|were)\s+not|isn['’]t|aren['’]t)\s+(?:\w+ly\s+)?(?:stated|defined|specified|mentioned|"
    r"set\s+out|addressed|spel[lt]\s+out)\b|\b(?:(?:does|do|did)\s+not|doesn['’]t|don['’]t|didn['’]t)\s+(?:\w+ly\s+)?"
    r"(?:state|define|specify|mention|say|set\s+out|address|spell\s+out)\b|\bmakes?\s+no\s+(?:\w+\s+)?mention\b",
    re.I,
)
_SOURCES = re.compile(
    r"\b(?:the|these|this|those)\s+(?:given\s+|provided\s+|available\s+|cited\s+|above\s+|quoted\s+)?(?:sources?|"
    r"documents?|texts?|provisions?|passages?|information|context|excerpts?)\b|\b(?:Act|section|subsection|law|"
    r"legislation|statute|Constitution|provision|Code|Regulations)\s*(?:\d+\w*(?:\(\w+\))*\s*)?"
    r"(?:(?:does|do|did|is|makes?)\b|doesn['’]t)|^\s*it\s+(?:is|does)\s+not\b|"
    # "The Act protects …, but it does not address …": an "it" that a conjunction joins to a sentence whose subject
    # is the law refers to that law.
    r"^\s*(?:the|this)\s+(?:act|law|legislation|statute|section|provision|code|constitution)\b[^.;]*?"
    r"\b(?:but|and|yet|though|although|however,?)\s+it\s+(?:(?:does|is)\s+not|doesn['’]t|isn['’]t)\b",
    re.I,
)


# The law itself said to lack something: "the Act does not provide a right to …", "section 34 makes no provision
# for …", "… is not provided for in the Act". Only with the law as the subject of "provide" (a contract, a will or a
# landlord that "does not provide" something is the law's subject matter).
_LAW = r"(?:Act|law|legislation|statute|Code|Constitution|Regulations|section|subsection|provision)"
# The law, then up to four words that open no clause of their own ("section 34 … does not provide").
_LAW_SUBJECT = (
    rf"\b{_LAW}(?:\s*\d+\w*(?:\(\w+\))*)?,?\s+(?:(?!(?:who|whom|that|which|if|where|when)\b)[\w,()]+\s+){{0,4}}?"
)
_LAW_LACKS = re.compile(
    rf"{_LAW_SUBJECT}(?:(?:does|do|did)\s+not|doesn['’]t|didn['’]t)\s+(?:\w+ly\s+)?provide\b"
    rf"|{_LAW_SUBJECT}makes?\s+no\s+(?:\w+\s+)?provision\b"
    rf"|\bnot\s+provided\s+for\s+(?:in|by|under)\s+(?:the|this|that|any)\s+(?:[A-Z][\w()'’-]*\s+){{0,5}}?{_LAW}\b",
    re.I,
)


def _says_sources_omit(sentence: str) -> bool:
    """Whether the sentence says what its sources or its provision do not state. Words that are there can show what
    a provision says, never what it leaves out, so no provision can support such a sentence; and a provision that
    shares its words (its subject) most likely states it, which makes the sentence false. A negation about the
    law's subject matter ("if the contract does not specify a period, …") is a claim judged as any other."""
    return bool(_NOT_SAID.search(sentence) and _SOURCES.search(sentence)) or bool(_LAW_LACKS.search(sentence))


# A verdict whose subject is only the asker's situation, pointed at ("Therefore, this action is not a crime under the
# law.", "That would be illegal."): it names nothing a provision could state.
_VERDICT_ON_FACTS = re.compile(
    r"^\W*(?:(?:so|therefore|thus|hence|accordingly|in\s+short|in\s+your\s+case),?\s+)?(?:this|that|it|such)"
    r"(?:\s+(?:action|conduct|act|behaviou?r|arrangement|situation|case|practice|transaction))?\s+"
    r"(?:is|was|would\s+be|will\s+be|may\s+be|could\s+be)\s+(?:(?:not|also|clearly|therefore|likely)\s+)*"
    r"(?:an?\s+)?(?:crime|criminal\s+offen[cs]e|offen[cs]e|legal|illegal|lawful|unlawful|allowed|permitted|"
    r"prohibited|forbidden)"
    r"(?:\s+(?:under|in\s+terms\s+of|according\s+to)\s+(?:the\s+)?(?:law|(?-i:[A-Z])[\w()',-]*(?:\s+(?:(?:and|of|the|for|on)\s+)?(?-i:[A-Z(])[\w()',-]*)*))?"
    r"[\s.!;:]*$",
    re.I,
)


def _uncheckable(sentence: str, quotes: list[str]) -> bool:
    """A bare verdict ("Yes.", "**No, legally.**", "Emergencies excepted.", "Therefore, this action is not a crime."):
    too few words for any provision to show it, or only the asker's situation pointed at, so no provision can be said
    to support it."""
    if not quotes and _VERDICT_ON_FACTS.match(strip_markers(sentence)):
        return True
    return not quotes and len(content_terms(sentence)) < MIN_CLAIM_TERMS and facts(sentence).empty and bool(
        _ANSWER_WORD.search(without_references(sentence)))  # fmt: skip


# Letters drawn like Latin ones: a reader sees "not" in "nоt" (its о Cyrillic), so the gate must read it so too.
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁАВЕКМНОРСТХІЈЅοαικρυχνΑΒΕΗΙΚΜΝΟΡΤΥΧΖ", "aeopcyxijsdABEKMHOPCTXIJSoaikpuxvABEHIKMNOPTYXZ"
)
_WORD_CHARS = re.compile(r"\w+")


def _as_read(text: str) -> str:
    """``text`` as a reader reads it: compatibility forms folded (NFKC), and in a word that mixes Latin letters with
    look-alikes from another script, the look-alikes read as the Latin letters they resemble (a word wholly in
    another script stays as it is)."""

    def latin(word: re.Match[str]) -> str:
        text = unicodedata.normalize("NFKC", word.group(0))  # words only: "…" stays one mark, not three stops
        folded = text.translate(_LOOKALIKES)
        mixed = folded != text and any("a" <= c.lower() <= "z" for c in text)
        return folded if mixed else text

    return _WORD_CHARS.sub(latin, text)


def _flat(text: str) -> str:
    """``text`` lower-cased, its spacing collapsed and none before a comma or a stop: a sentence's words, read with its
    markers stripped, match a provision that writes "section 51 , 61"."""
    return re.sub(r" ([,;:.)])", r"\1", " ".join(text.lower().split()))


REPEAT_WORDS = 6
"""Fewest words of a sentence whose second copy in one answer is held back (a short one may fairly recur)."""


def _said_before(context: str, sentence: str) -> bool:
    """Whether the answer so far (``context``, which ends with ``sentence``) has already said ``sentence``, word for
    word, markers aside."""
    body = strip_markers(sentence)
    if len(body.split()) < REPEAT_WORDS:
        return False
    at = context.rfind(sentence.strip())
    return at > 0 and body in strip_markers(context[:at])


def _lead_in_markers(context: str, sentence: str) -> list[int]:
    """The markers of the lead-in a list item ``sentence`` stands under, in the answer so far (``context``, which
    ends with it): the nearest line before it that is not an item of the same kind, when that line ends in a colon
    (its markers aside); [] when the sentence is no list item, or its list has no cited lead-in."""
    at = context.rfind(sentence.strip())
    line_start = context.rfind("\n", 0, at) + 1
    if at < 0 or context[line_start:at].strip():
        return []  # not the start of a line: no list item
    kind = next((k for k in (_BULLET, _NUMBERED) if k.match(sentence)), None)
    if kind is None:
        return []
    for line in reversed(context[:line_start].splitlines()):
        if not line.strip() or kind.match(line):
            continue
        lead = strip_markers(line).rstrip()
        return [int(m) for m in MARKER.findall(line)] if lead.endswith(":") else []
    return []


def _paragraph_before(context: str, sentence: str) -> str:
    """The sentences of ``sentence``'s paragraph before it, in the answer so far (``context``, which ends with it)."""
    at = context.rfind(sentence.strip())
    written = context[:at] if at >= 0 else ""
    return strip_markers(written.rsplit("\n\n", 1)[-1])


def _check_sentence(
    check: SentenceCheck,
    offered: Mapping[int, Citation],
    texts: Mapping[int, str],
    flat: Mapping[int, str],
    context: str,
    topic: Topic,
    judge: ClaimJudge,
    repealed: Mapping[str, str],
) -> None:
    """Decide one sentence; ``flat``: each offered text as ``_flat`` reads it (read once per
    answer, for the words a sentence names a provision by); ``repealed``: the offered documents a later document of
    the corpus repeals (doc key -> what repeals it)."""
    sentence = _LIST_PREFIX.sub("", strip_markers(_as_read(check.text)))  # a list item's number states nothing
    check.markers = [int(m) for m in MARKER.findall(check.text)]
    # A marker written inside the closing quotation mark ("… partnership [1].”) cites the quote; it is not quoted.
    check.quotes = [strip_markers(q).rstrip() for q in quoted_spans(check.text)
                    if len(strip_markers(q).split()) >= MIN_GATE_QUOTE_WORDS]  # fmt: skip
    check.claim = _is_claim(sentence, check.markers, check.quotes)
    if not check.markers and (inherited := _lead_in_markers(context, check.text)) and content_terms(sentence):
        # An item of a list under a cited lead-in ("The requirements are [2]:" then "- Duration of the relationship")
        # states what the lead-in says of it: it is judged against the lead-in's provisions, not sent as no claim.
        check.markers, check.claim = inherited, True
    if not check.claim or _uncheckable(sentence, check.quotes):
        return
    if _said_before(context, check.text):
        # A model that loops writes the same sentence again and again; each copy would pass on its own.
        check.missing_facts = ["nothing new: the answer has said this already"]
        return
    if _says_sources_omit(around_quotes(sentence, check.quotes)):
        check.missing_facts = ["what the sources do not say (their words cannot show an absence)"]
        return
    # A sentence that names its provision in words ("under section 12B of the Labour Act", "the Consumer Protection
    # Act provides") is about that provision: supported by it, or not at all; never re-attributed to another one that
    # happens to share its words (a sentence about dismissal "under section 12B" must not pass on the strength of
    # another section that also mentions dismissal). A provision that itself contains the words ("in terms of
    # section 101(9)") may support it too: there the reference is content, not attribution.
    allowed: set[int] | None = None  # None: any offered provision
    carried: dict[int, list[str]] = {}  # provisions that only mention the provision the sentence points to: its name
    within: dict[int, list[str]] = {}  # the subsections a sentence names of a provision: "section 8(2)"
    pointed = points_at(sentence)
    for reference in find_references(sentence):
        surface = _flat(sentence[reference.start : reference.end])
        carriers = {i for i, text in flat.items() if surface in text}
        resolved = resolve_reference(reference, list(offered.values()), context)
        if not carriers:
            check.pinned = True
            check.referenced += [i for i in resolved if i not in check.referenced]
            if reference.subsections:
                pin = "".join(f"({s})" for s in reference.subsections)
                for i in resolved:
                    within.setdefault(i, []).append(offered[i].section_id + pin)
        allowed = (allowed if allowed is not None else set(offered)) & (set(resolved) | carriers)
        if pointed is not None and sentence[pointed : reference.start].strip().lower() in ("", "the"):
            for i in carriers - set(resolved):
                carried.setdefault(i, []).append(surface)
    for surface, words in instruments_named(sentence):
        written = _flat(surface)
        carriers = {i for i, text in flat.items() if written in text}
        titled = {i for i, citation in offered.items() if names(citation.title, words)}
        year = re.search(re.escape(surface) + r",?\s+(?:of\s+)?(\d{4})\b", sentence)
        if year is not None:
            # "the Marriages Act, 1964" is not the Marriages Act, 2022: a title that carries its year must carry the
            # year the sentence names it by.
            titled = {i for i in titled if _title_year(offered[i].title) in ("", year.group(1))}
        allowed = (allowed if allowed is not None else set(offered)) & (titled | carriers)
    named = [i for i in (*check.markers, *check.referenced) if i in offered]
    order = [i for i in check.referenced if i in offered] if check.pinned else list(dict.fromkeys([*named, *offered]))
    if allowed is not None:
        order = [i for i in order if i in allowed]
    # Quotes first: each must be a verbatim span (elisions: every span, in order) of some offered provision.
    quote_homes: dict[int, str] = {}
    home_of: dict[str, int] = {}
    for quote in check.quotes:
        home = next((i for i in order if locate_quote(quote, texts[i]) is not None), None)
        if home is None:
            check.quotes_failed.append(quote)
            continue
        spans = locate_quote(quote, texts[home]) or []
        longest = max(spans, key=lambda s: s[1] - s[0])
        if within.get(home) and not any(
            a <= longest[0] and longest[1] <= b
            for a, b in _places(texts[home], [], within[home], offered[home].section_id)
        ):
            # "Section 14A(5) provides: “…”" quoting subsection (3): the words are the provision's, the place the
            # sentence gives them is not (a citation labelled with one subsection while quoting another).
            check.missing_facts = [f"the quote in {' or '.join(within[home])}, where the sentence places it"]
            return
        quote_homes.setdefault(home, texts[home][longest[0] : longest[1]])
        home_of[quote] = home
        if cut_before_exception(quote, texts[home], spans[-1][1], sentence):
            check.dropped = ["the exception the provision states right after the quoted words"]
            check.missing_facts = ["the exception the provision states right after the quoted words"]
            return
        if cut_from_condition(quote, texts[home], sentence, _paragraph_before(context, check.text)):
            check.dropped = ["the case the provision's clause opens with, before the quoted words"]
            check.missing_facts = ["the case the provision's clause opens with, before the quoted words"]
            return
        if cut_from_negation(quote, texts[home], around_quotes(sentence, [quote])):
            # "person shall employ … a child" quoted from "No person shall employ … a child": verbatim, and saying
            # the opposite of the provision it comes from.
            check.opposite = True
            check.missing_facts = ["the negation the quote leaves out before its first word"]
            return
    if check.quotes_failed:
        return
    if relation_unshown(sentence, check.quotes, [texts[i] for i in order]):
        check.missing_facts = ["how the words between its quotes relate them (no provision states it so)"]
        return
    # Then the claim: the named provisions if one supports it, else any offered provision that does. A named
    # provision that speaks to the sentence (its words are there) but gives other figures or says the opposite is
    # contradicted, not mis-cited: the claim moves only to the provision its verbatim quote comes from, never to one
    # that happens to share its words and a figure ("up to three months' rent", cited to the deposit section's "two
    # months", once passed under the rent increase section's "three months' notice").
    best: tuple[float, int, Support] | None = None
    results: list[Support] = []
    # Quotes from several provisions, framed only by their names ("Sections 25 and 53 provide: “…” [1] and “…” [2]"):
    # each provision is judged on its own quotes, and the sentence stands only if every one supports them.
    homes = set(home_of.values())
    several = len(homes) > 1 and len(home_of) == len(check.quotes)
    supporting: set[int] = set()
    by_own_quotes: set[int] = set()
    contradicted = False
    conditional: tuple[int, Support] | None = None  # supported but for a condition the sentence leaves out
    for rank, index in enumerate(order):
        if contradicted and index not in named and index not in quote_homes:
            continue  # (a verbatim quote shows where its words come from: a mis-numbered marker is a slip)
        cited = offered[index]
        claims = [sentence]
        if index in quote_homes and only_names(sentence, check.quotes, texts[index], cited):
            # A verbatim quote whose framing only names where it comes from ("Section 60 of the Insurance Act
            # (Heading) provides: “…”") claims what the quote says: the quote is judged (marked as quoted, the
            # provision's own words), a sentence of it at a time as the provision states them, without the heading's
            # words read as a case or a rule of their own.
            own = [quote for quote in check.quotes if not several or home_of[quote] == index]
            claims = [f"“{part}”" for quote in own for part, _ in split_sentences(quote)]
            by_own_quotes.add(index)
        verdicts = [
            max(
                (
                    _shifted(judge.judge(claim, texts[index][a:b], identity=identity(cited), topic=topic,
                                         heading=cited.heading), a)
                    for a, b in _places(texts[index], carried.get(index, []), within.get(index, []),
                                        cited.section_id)
                ),
                key=lambda r: (r.supported, r.score),
            )
            for claim in claims
        ]  # fmt: skip
        result = next((verdict for verdict in verdicts if not verdict.supported), verdicts[0])
        if cited.doc_key in repealed and not says_not_in_force(sentence):
            # Later law wins: a repealed law's provision supports a sentence about the law only when the sentence
            # says it is no longer in force; stated as today's law, it is a fact the corpus contradicts.
            result = replace(result, missing=(*result.missing, f"in force (repealed by {repealed[cited.doc_key]})"))
        results.append(result)
        if index in quote_homes and result.opposite and not framing_denies(sentence, check.quotes, cited.title):
            result = replace(result, opposite=False)
        if index in quote_homes:
            if not quote_carries(sentence, check.quotes, texts[index], cited):
                result = replace(result, missing=(*result.missing, "what the words beside the quote say"))
            elif not result.missing:
                result = replace(result, score=max(result.score, SUPPORT_THRESHOLD))
        if not result.supported:
            if (
                conditional is None and result.dropped and result.score >= result.threshold
                and not (result.missing or result.opposite or result.off_topic)
            ):  # fmt: skip
                conditional = (index, result)
            if index in named and best is None:
                _record_failure(check, result)
                contradicted |= result.score >= result.threshold and bool(
                    result.missing or result.opposite or result.dropped
                )
            continue
        key = (1.0 if index in named else 0.0) + result.score
        if best is None or key > best[0]:
            best = (key, rank, result)
        supporting.add(index)
        if index in named and not (several and index in by_own_quotes):
            break  # a named provision that supports the sentence wins; no need to look further
    if best is None:
        if not named and results:  # nothing broke the loop: every offered provision was checked
            _record_failure(check, max(results, key=lambda s: s.score))
        if conditional is not None and check.dropped:
            index, result = conditional
            check.pending = (index, texts[index][result.span[0] : result.span[1]])
        return
    _, rank, result = best
    index = order[rank]
    check.cited = [index]
    if several and index in by_own_quotes:
        if not homes <= supporting:
            _record_failure(check, max(results, key=lambda s: s.score))
            check.missing_facts = check.missing_facts or ["what a quote says, in the provision it comes from"]
            return
        check.cited = [i for i in order if i in homes]
        for other in check.cited:
            check.spans[other] = quote_homes[other]
            check.quoted.add(other)
    check.score = result.score
    check.missing_facts, check.opposite, check.off_topic, check.dropped = [], False, [], []
    check.how = _how(check, index)
    check.spans[index] = quote_homes.get(index) or texts[index][result.span[0] : result.span[1]]
    if index in quote_homes:
        check.quoted.add(index)


NEAR_WORDS = 40


def _with_lead_in(provision: str, section_id: str, target: str) -> tuple[int, int]:
    """Where ``target`` runs, from the start of the subsection it sits in: a paragraph's words are read with the
    lead-in that gives them their subject ("(2) The Minister may prescribe— (a) the maximum rate …")."""
    start, end = provision_span(provision, section_id, target) or (0, len(provision))
    top = re.match(r"\(\w+\)", target[len(section_id) :])
    if top is not None and top.group(0) != target[len(section_id) :]:
        start = min(start, (provision_span(provision, section_id, section_id + top.group(0)) or (start, end))[0])
    return start, end


def _places(
    provision: str, surfaces: list[str], pins: Sequence[str] = (), section_id: str = ""
) -> list[tuple[int, int]]:
    """Where a provision may support a sentence: all of it; where the sentence names a subsection of it ("section
    8(2) prohibits …"), only that subsection, when the provision has it (a sentence that says what subsection (2)
    provides is false when subsection (1) provides it), and nowhere when it has subsections but not that one; or,
    when the sentence points to another provision that this one only mentions ("… is specified in section 159"),
    where it mentions it: the sentence or item that names it with the ones either side, or in a long one (a
    schedule's table, flattened into one run of text) the ``NEAR_WORDS`` words either side. A table listing
    "Unlawful entry into premises Section 131 … Permitting premises to be used for … drugs Section 159" says nothing
    of unlawful entry at section 159."""
    if not surfaces:
        starts = provision_starts(provision, section_id) if pins else []
        spans = []
        for pin in pins:
            tail = pin[len(section_id) :]
            # "section 8(a)" for the "(a)" under subsection (2): the one provision that ends so, when only one does.
            ending = {p for _, p in starts if p.endswith(tail)}
            named = pin if provision_span(provision, section_id, pin) is not None else next(iter(ending), "")
            if named and (named == pin or len(ending) == 1):
                spans.append(_with_lead_in(provision, section_id, named))
            elif tail[1:2].isdigit() and any(p[len(section_id) + 1 : len(section_id) + 2].isdigit() for _, p in starts):
                return [(0, 0)]  # a subsection the provision, which has subsections, does not have: nothing says so
        return spans or [(0, len(provision))]
    units = provision_units(provision) or [(0, len(provision))]
    places = []
    for surface in surfaces:
        for found in re.finditer(r"\s+".join(map(re.escape, surface.split())), provision, re.I):
            k = next((k for k, (a, b) in enumerate(units) if a <= found.start() < b), None)
            if k is None:
                continue
            a, b = units[k]
            words = list(re.finditer(r"\S+", provision[a:b]))
            if len(words) > 3 * NEAR_WORDS:
                at = next(n for n, w in enumerate(words) if a + w.end() > found.start())
                a, b = a + words[max(0, at - NEAR_WORDS)].start(), a + words[min(len(words) - 1, at + NEAR_WORDS)].end()
            else:  # with the sentences either side: a list's lead-in and its items
                a, b = units[max(0, k - 1)][0], units[min(len(units) - 1, k + 1)][1]
            places.append((a, b))
    return places or [(0, len(provision))]


def _title_year(title: str) -> str:
    """The year a title ends with ("Marriages Act, 2022"), or ""."""
    found = re.search(r",?\s+(\d{4})\s*$", title)
    return found.group(1) if found else ""


def _shifted(result: Support, offset: int) -> Support:
    return replace(result, span=(result.span[0] + offset, result.span[1] + offset)) if offset else result


def _record_failure(check: SentenceCheck, result: Support) -> None:
    check.missing_facts, check.score, check.opposite = list(result.missing), result.score, result.opposite
    check.off_topic, check.dropped = list(result.off_topic), list(result.dropped)


def _with_markers(sentence: str, indices: list[int]) -> str:
    body = strip_markers(sentence)
    if not indices:
        return body
    markers = "".join(f"[{i}]" for i in indices)
    match = re.search(r"[.!?:;]?[\"”’)]*$", body)
    cut = match.start() if match and match.group(0) and body[match.start()] in ".!?:;" else len(body)
    return f"{body[:cut].rstrip()} {markers}{body[cut:]}"


class SentenceGate:
    """Judge a model's sentences one at a time against the provisions it was offered, as they are written.

    ``offered``: the citations the model was shown, by marker; ``provisions``: section id -> full provision text (a
    citation whose provision is missing is checked against its own quote); ``topic``: the question's topic words
    (``api.composer.answerability.topic_words``), which a sentence may apply only a provision that mentions them to.
    A sentence is judged with the answer up to its end as its context (the titles named so far break a tie between
    two Acts' "section 3"), so judging the answer as it streams and judging it whole agree.
    """

    def __init__(
        self,
        offered: Mapping[int, Citation],
        provisions: Mapping[str, str],
        topic: Topic | None = None,
        judge: ClaimJudge | None = None,
        repealed: Mapping[str, str] | None = None,
    ) -> None:
        self.repealed = dict(repealed or {})
        judge = judge or RulesJudge()
        # A judge with a per-answer budget gets a fresh copy for this answer.
        per_answer = getattr(judge, "for_answer", None)
        self.judge_claim: ClaimJudge = per_answer() if per_answer is not None else judge
        self.blocking = judge.blocking
        self.offered = dict(offered)
        self.texts = {i: provisions.get(c.section_id) or c.quote for i, c in offered.items()}
        self.flat = {i: _flat(text) for i, text in self.texts.items()}
        self.topic: Topic = topic or {}

    def judge(self, sentence: str, separator: str, context: str) -> SentenceCheck:
        check = SentenceCheck(sentence, separator)
        _check_sentence(
            check, self.offered, self.texts, self.flat, context, self.topic, self.judge_claim, self.repealed
        )
        return check

    def shown(self, check: SentenceCheck) -> str:
        """The sentence as the reader is shown it: as written when its markers are those of the provisions that
        support it, else with those markers in place of its own."""
        return check.text if check.markers == check.cited else _with_markers(check.text, check.cited)

    def citation(self, check: SentenceCheck, index: int) -> Citation:
        """The citation a supported sentence attaches, quoting the span of the provision that supports it, and
        labelled with the subsection (or paragraph) that span is in."""
        offered, span, text = self.offered[index], check.spans[index], self.texts[index]
        section_label = unpinpointed(offered.section)
        at = text.find(span)
        if at < 0:
            return offered.model_copy(update={"quote": span})
        provision = provision_at(provision_starts(text, offered.section_id), at, offered.section_id)
        label = subsection_label(section_label, offered.section_id, provision)
        return offered.model_copy(update={"quote": span, "provision_id": provision, "section": label})


# Words by which a sentence says that what it states is no longer the law.
_NOT_IN_FORCE = re.compile(
    r"\b(?:repeal(?:s|ed|ing)?|no\s+longer|formerly|former|used\s+to|abolish(?:es|ed|ing)?|superseded|replaced\s+by"
    r"|was\s+(?:once\s+)?in\s+force|before\s+(?:its|the)\s+repeal)\b",
    re.I,
)


def says_not_in_force(sentence: str) -> bool:
    """Whether ``sentence`` says that what it states is no longer the law ("the repealed Act provided …")."""
    return bool(_NOT_IN_FORCE.search(sentence))


def only_points(check: SentenceCheck) -> bool:
    """A supported sentence that says only where the answer is ("This is stated in section 3 of the Act [1].",
    "The Act provides as follows [1]:"): its words, without its references and markers, state no fact. Sent alone,
    it would leave the reader without the answer's point."""
    body = without_references(strip_markers(_as_read(check.text)))
    return not check.quotes and facts(body).empty and len(content_terms(body)) < MIN_CLAIM_TERMS


def substantive(gate: GateResult) -> bool:
    """Whether a supported sentence of the answer states something, beyond saying where the answer is."""
    return any(check.verdict == "supported" and not only_points(check) for check in gate.claims)


def passes(check: SentenceCheck) -> bool:
    """Whether the reader may be shown the sentence: it states nothing about the law, or a provision supports it."""
    return not check.claim or check.verdict == "supported"


# A sentence that opens by pointing back at the one before it: "This is a mandatory requirement.", "Such a marriage …".
_POINTS_BACK = re.compile(r"^\W*(?:this|that|these|those|such)\b", re.I)


def after_removed(check: SentenceCheck, previous: SentenceCheck | None) -> None:
    """A sentence that points back ("This is a mandatory requirement.") at a sentence the gate left out points at
    nothing the reader sees, and would read as if it stated that sentence's rule: it is left out too. A sentence
    with its own verified quote says what it points at in the law's words, and a list's item points at its lead-in,
    not at the item before it: both stay."""
    if (
        previous is not None and not passes(previous) and passes(check) and not check.quotes
        and not _LIST_PREFIX.match(check.text) and _POINTS_BACK.match(check.text)
    ):  # fmt: skip
        check.claim = True
        check.cited = []
        check.missing_facts = [*check.missing_facts, "what it points back to (a sentence left out)"]


def condition_follows(check: SentenceCheck, previous: SentenceCheck | None) -> None:
    """A sentence that states a rule without its condition, followed at once by one that states the condition ("A
    female employee gets ninety-eight days of maternity leave on full pay. She qualifies once she has served for at
    least one year."), says the rule with it: the earlier sentence is supported after all, by the provision both
    cite. The later one must pass on its own, cite that provision, and carry the condition's own words."""
    if previous is None or previous.pending is None or not passes(check) or not check.claim:
        return
    index, span = previous.pending
    if index not in check.cited or not states_condition(previous.dropped, strip_markers(_as_read(check.text))):
        return
    previous.cited, previous.spans[index], previous.pending = [index], span, None
    previous.missing_facts, previous.opposite, previous.off_topic, previous.dropped = [], False, [], []
    previous.how = _how(previous, index)


def _how(check: SentenceCheck, index: int) -> str:
    """How the sentence came to cite provision ``index``: named in words, by its own marker, moved from another
    marker, or found for a sentence with none."""
    if index in check.referenced and index not in check.markers:
        return "reference"
    if index in check.markers:
        return "marker"
    return "reattributed" if check.markers else "located"


def abstains_aside(check: SentenceCheck) -> bool:
    """A sentence that says the documents do not hold the answer ("I could not find this in the documents I have.")
    and states nothing else: beside claims that pass, it contradicts the answer the reader is given, so it is shown
    only when nothing else is (a model may write it first out of habit and answer after it)."""
    return not check.claim and ABSTAIN_PHRASE in check.text.lower()


def gate_model_answer(
    answer: str,
    offered: Mapping[int, Citation],
    provisions: Mapping[str, str],
    topic: Topic | None = None,
    judge: ClaimJudge | None = None,
    repealed: Mapping[str, str] | None = None,
) -> GateResult:
    """Check a model's answer sentence by sentence (``SentenceGate``, its claims judged by ``judge``, the rules by
    default) and rebuild it from what passes, citations attached."""
    gate = SentenceGate(offered, provisions, topic, judge, repealed)
    checks = [gate.judge(text, sep, answer[:end]) for text, sep, end in sentence_spans(answer)]
    for k in range(1, len(checks)):
        condition_follows(checks[k], checks[k - 1])
        after_removed(checks[k], checks[k - 1])
    kept: list[str] = []
    used: dict[int, Citation] = {}
    quoted: set[int] = set()
    answers = any(check.claim and passes(check) for check in checks)
    for check in checks:
        if not passes(check) or (answers and abstains_aside(check)):
            continue
        kept.append(gate.shown(check) + check.separator)
        for index in check.cited:
            # The citation quotes what the answer quoted, if it quoted this provision; else the first supporting span.
            # (Streamed, a citation goes out with the first sentence it supports, quoting that sentence's span.)
            if index not in used or (index in check.quoted and index not in quoted):
                used[index] = gate.citation(check, index)
                quoted |= check.quoted & {index}
    rebuilt = "".join(kept).strip()
    abstained = ABSTAIN_PHRASE in answer.lower()
    headings = {i: c.heading for i, c in offered.items() if c.heading}
    return GateResult(checks, rebuilt, list(used.values()), abstained, headings)


def unsent_tail(gate: GateResult) -> str:
    """What follows the last sent claim of a gated answer that states nothing about the law (its closing
    words), each sentence after the whitespace that followed the one before: what a streamed answer held back."""
    passed = [k for k, check in enumerate(gate.sentences) if check.claim and passes(check) and not only_points(check)]
    if not passed:
        return ""
    tail, separator = "", gate.sentences[passed[-1]].separator
    for check in gate.sentences[passed[-1] + 1 :]:
        if gate.failed and ABSTAIN_PHRASE in check.text.lower():
            continue  # "I could not find this …" after statements removed: a note on what was removed, a fragment
        if not check.claim:
            tail += separator + strip_markers(check.text)
            separator = check.separator
    return tail
