"""Decide from the retrieved evidence whether the corpus answers a question, before anything is composed.

A loosely related quote is worse than "I could not find this": the extractive path used to quote whatever ranked
first. Instead, a few features of the evidence go through a small logistic model fitted on the development questions
(``benchmarks/answerability_fit.py``; parameters in the versioned ``api/data/answerability.toml``):

- ``dense_top``: the best dense cosine between the question and a chunk;
- ``bm25_norm``: the best BM25 score over the score a chunk holding each query term once would get (sum of idf);
- ``coverage``: the share of the question's meaning-bearing words the best provisions contain (a lay word counts
  as covered when one of its thesaurus terms is there);
- ``unknown``: the share of meaning-bearing words the corpus never uses at all ("bitcoin", "euthanasia");
- ``agreement``: how many sections the dense and BM25 top tens share;
- ``best_rank``: how high the fused best chunk stands in each backend's own list (mean of 1/rank);
- ``coverage_idf``: ``coverage`` with each word weighted by its idf, so the rare word that names the topic
  ("paternity" in "paternity leave") counts for more than the common ones around it;
- ``key_covered``: 1 when the question's rarest meaning-bearing word (or a thesaurus term for it) is in one of the
  best provisions, else 0;
- ``pairs``: the share of the question's neighbouring meaning-bearing words ("adoption leave", "minimum age") that
  one of the best provisions has within a few words of each other: a provision that says "adoption" in one place and
  "leave" in another is about something else;
- ``quantity``: for a question that asks for an amount ("how many days", "what is the minimum age", "how much"),
  1 when one of the best provisions states a number within a few words of one of the question's two rarest topic
  words, else 0 (1 for every other question): the expected answer type, as in classic question answering;
- ``dense_best``: the dense cosine of the fused best chunk (with the lay-term expansions, as the dense search
  embeds the question): how close in meaning the provision an answer would lead with is, whatever words it uses;
- ``dense_margin``: how far the best dense cosine stands above the tenth: a provision on the question's subject
  stands out from the rest, where a question the corpus does not settle finds many provisions equally far;
- ``heading_named``: 1 when the title or section heading of one of the best chunks names one of the question's two
  rarest meaning-bearing words or a thesaurus term for it (the provision is *about* the question's subject, as its
  heading or the Act's name says), else 0;
- ``act_focus``: the share of the ten best fused hits that come from the best hit's document: a question a law
  settles draws several of that law's provisions (its rule, the definitions, the exceptions), where a question
  nothing settles draws one provision each from many laws, none of them about it;
- ``named_law``: 0 when the question names a law ("under the Road Traffic Act") that no document title the caller may
  read matches, else 1: whatever provision the search finds, it is not from the law the question asks about.

The model file names the features it uses (any of these, in its own order), so a refit may drop or add one, and
the features that ``veto`` an answer: a check whose failure means abstention whatever the other features say
(``quantity`` and ``named_law``: a question asking "how many days" is not answered by a provision that states no
number on its topic, nor one naming a law by a provision of another).

With a model configured, the ``grade`` skill's verdict (share of passages judged relevant) can be added, and only
ever raises the probability: its weight is a stated prior, not fitted, and a small model's "irrelevant" overruled
evidence the judge found good. Over the 385 Acts (``eval_answers_local_llm_385_grade_both_ways.md`` in
``benchmarks/results``) a grade that could also lower it made the model path abstain on 5 of 45 answerable
questions (2 that the quotes answered, one from a gold provision) for one more unanswerable question caught; with a
model the answer must not be worse than without. Nor does the grade raise evidence that lacks the question's rarest
word (``key_covered`` 0): a small model called the interest on councils' loans "relevant" to "What interest is
charged on government student loans" (nowhere in the corpus), and the answer restated those sections faithfully and
passed the gate, in three of four real-model runs. Over the development and Zimbabwe QA questions' 112 parts, a full
grade would have raised 8 the judge leaves unanswered; 7 lack their rarest word, 4 of them unanswerable (paternity
leave, carbon credits, student loans, a private-sector retirement age), and the quote-only path abstains on all 7.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, model_validator

from api.composer.judge.facts import without_references
from api.composer.judge.topic import Topic
from api.composer.jurisdiction import JURISDICTION
from api.errors import ConfigError
from api.text.words import stem, tokenize
from api.tools.bm25 import LexicalIndex
from api.tools.retrieval import RetrievalResult
from api.tools.thesaurus import Thesaurus

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "answerability.toml"
FEATURES = (
    "dense_top", "bm25_norm", "coverage", "unknown", "agreement", "best_rank", "coverage_idf", "key_covered", "pairs",
    "quantity", "named_law", "dense_best", "dense_margin", "heading_named", "act_focus",
)  # fmt: skip
PAIR_WINDOW = 4
TOPIC_SHARE = 0.018
"""A question word names its topic when its family is in at most this share of the corpus's chunks (idf about 4), or
in one chunk at most however small the corpus: over the 385 Acts "student", "husband", "firearm", not "period",
"charge", "government" (``benchmarks/topic_check.py`` measures the choice)."""
QUANTITY_WINDOW = 12
# A question asking for an amount, a period, an age or a rate expects a number in the provision that answers it.
# "Minimum"/"maximum" only with a measurable noun ("the minimum age", "the maximum prison sentence"), not "the minimum
# requirements to register a company".
MEASURES = (
    "age|number|amount|sum|period|term|days?|weeks?|months?|years?|hours?|sentence|fine|penalty|wage|salary|pay|rate|"
    "percentage|fee|limit|leave|value|speed|distance|size|height|weight|depth|width|length|capacity|quantity"
)
ASKS_QUANTITY = re.compile(
    r"\bhow (?:many|much|long|old|soon|often)\b|\bwhat (?:percentage|proportion|share|amount|age|rate)\b"
    rf"|\bat what age\b|\b(?:minimum|maximum)\s+(?:[\w'-]+\s+){{0,2}}?(?:{MEASURES})\b"
    r"|\b(?:what is|is there) (?:a |the )?deadline\b|\bwithin how\b",
    re.I,
)
# The words that ask for the amount are not its topic ("maximum number of pupils": the topic is pupils).
QUANTITY_WORDS = frozenset(
    "minimum maximum number many much long old soon often amount percentage proportion share rate age period "
    "deadline days day weeks week months month years year hours hour time limit cap".split()
)
# A law named after "the", in title case: "the Road Traffic Act", "the Criminal Law (Codification and Reform) Act".
# Only after a lower-case "the", so that a sentence's first word ("Has Labour Act…"), a title-cased question or two
# names joined by "and" are not read as one name; a word of a name is never "Act", "Code" or "Ordinance" itself.
_NAME_WORD = r"(?!(?:Act|Code|Ordinance)\b)[A-Z][\w'’-]*"
_NAMED_LAW = re.compile(
    rf"(?<![\w-])the\s+((?:{_NAME_WORD}|\([^)]{{1,60}}\))(?:\s+(?:{_NAME_WORD}|\([^)]{{1,60}}\)|of|and|for|on|in|&))*"
    r"\s+(?:Act|Code|Ordinance))\b"
)
# Joining words, and words that stand for a law already named ("the Principal Act", "the amending Act").
_NAME_FILLER = frozenset("the of and for on in act acts code ordinance principal amending amendment said".split())
# The names of countries are not part of a law's name as people say it ("the Zimbabwe Labour Act", "the UK
# Employment Rights Act"); a question about another country's law is screened before retrieval anyway.
_COUNTRY = re.compile(
    "^(?:" + "|".join(map(re.escape, sorted(JURISDICTION.place_words | JURISDICTION.other_places))) + ")$"
)
_SECTION_NUMBER = re.compile(r"^\s*\d+[A-Za-z]{0,2}\.\s")
_AMOUNT = re.compile(r"[a-z]{0,3}\d+(?:st|nd|rd|th)?")  # 90, us500, 21st; not "68b" (a section) or "s12a"
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million half".split()
)
TOP = 10
COVERAGE_HITS = 3
# Words that say how a question is asked rather than what it is about.
QUESTION_WORDS = (
    frozenset(
        "able about according act acts allowed also am any anyone anything ask asked be been being but could did get "
        "gets getting give go going got he her here him his if is it law laws legal legally let like long many may me "
        "might more much must need needs not now our out over own person people required section sections shall she "
        "should someone something still such tell than them they under us very want wants was way were will would "
        "i'm it's can't don't doesn't".split()
    )
    | JURISDICTION.place_words
)

_QUESTION_STEMS = frozenset(stem(w) for w in QUESTION_WORDS)  # "needed" asks as "need" does
_CONTRACTION = re.compile(r"n['’]t\b|['’](?:s|m|re|ll|ve|d)\b", re.I)


def meaning_words(question: str) -> list[str]:
    """The question's meaning-bearing words, in order, once each (function and question words out). A question
    verb counts as one in its other tenses too ("needed", "wanting"): in a form the corpus seldom or never uses, it
    would otherwise pass for the question's rarest word, the one its topic is judged by (``key_covered``,
    ``quantity``). Only those endings: a plural may be a word of its own ("wills" is not "will")."""
    seen: list[str] = []
    for token in tokenize(question.replace("’", "'")):
        if (
            token not in QUESTION_WORDS
            and not (token.endswith(("ed", "ing")) and stem(token) in _QUESTION_STEMS)
            and not token.isdigit()
            and len(token) > 2
            and token not in seen
        ):
            seen.append(token)
    return seen


def rarity(lexical: LexicalIndex, word: str) -> float:
    """The idf of a word's family over the corpus's chunks (the rarest words name a question's topic)."""
    return math.log(1 + (len(lexical) + 0.5) / (lexical.family_frequency(word) + 0.5))


def legal_equivalents(question: str, words: Sequence[str], thesaurus: Thesaurus | None) -> dict[str, set[str]]:
    """For each of the question's ``words``, the legal terms the thesaurus gives for it; a lay phrase ("laid off") is
    an entry although its words are not, and its legal terms count for each of them."""
    terms: dict[str, set[str]] = {w: set() for w in words}
    if thesaurus is not None:
        for word in terms:
            terms[word] |= set(thesaurus.legal_terms(word))
        for phrase in thesaurus.expand(question).matched:
            for word in set(phrase.split()) & set(terms):
                terms[word] |= set(thesaurus.legal_terms(phrase))
    return terms


def topic_words(
    question: str, lexical: LexicalIndex, thesaurus: Thesaurus | None = None, max_share: float = TOPIC_SHARE
) -> Topic:
    """The question's meaning-bearing words rare enough in the corpus to name its topic (``TOPIC_SHARE``; not the
    words that ask for an amount, nor words it never uses), each with the legal terms the thesaurus gives for it or
    for a lay phrase holding it: what a sentence of the answer that repeats one must find in the provision it cites
    (``api.composer.judge.topic.off_topic``). Empty without a lexical index to judge rarity by."""
    if not len(lexical):
        return {}
    most = max(1.0, max_share * len(lexical))
    asked = _CONTRACTION.sub("", question)  # "shouldn't" asks as "should" does
    # A word the corpus never uses is the evidence judge's ("unknown"), not this check's: no provision could show it,
    # and the asker's own things ("the fridge") would fail every sentence that applies the law to them.
    words = [w for w in meaning_words(asked) if 0 < lexical.family_frequency(w) <= most
             and stem(w) not in _QUESTION_STEMS and w not in QUANTITY_WORDS | NUMBER_WORDS]  # fmt: skip
    return {w: frozenset(t) for w, t in legal_equivalents(asked, words, thesaurus).items()}


@dataclass(frozen=True, slots=True)
class Verdict:
    answerable: bool
    probability: float
    """The model's probability that the evidence answers the question."""
    threshold: float
    features: Mapping[str, float]
    reason: str
    """One plain sentence for logs and the abstention's "what I searched" note."""


def missing_laws(question: str, titles: Sequence[str]) -> list[str]:
    """The laws the question names that no title matches ("the UK Employment Rights Act"). A name matches a title
    holding each of its words or a word it begins or that begins it, so "the Criminal Law Code" finds the Criminal
    Law (Codification and Reform) Act and "the Labour Act" finds the Labour Act [Chapter 28:01]."""
    named = list(_NAMED_LAW.finditer(question))
    if not named:
        return []  # most questions name no law: the titles are not read
    ordered, held = _title_words(tuple(titles))
    missing = []
    for match in named:
        name = match.group(1)
        words = [
            w for w in re.findall(r"[a-z0-9]+", re.sub(r"[’']s\b", "", name.lower()))
            if w not in _NAME_FILLER and not _COUNTRY.match(w)
        ]  # fmt: skip
        if words and not any(all(_word_in(w, title) for w in words) for title in held) and not _initials(name, ordered):
            missing.append(name)
    return missing


@functools.lru_cache(maxsize=8)
def _title_words(titles: tuple[str, ...]) -> tuple[list[list[str]], list[set[str]]]:
    """Each title's words in order and as a set: read once per list of titles (a corpus version and tenant), not
    once per question that names a law."""
    ordered = [re.findall(r"[a-z0-9]+", t.lower()) for t in titles]
    return ordered, [set(words) for words in ordered]


def _initials(name: str, ordered: Sequence[list[str]]) -> bool:
    """An all-capitals short name ("the COBE Act") that is a held title's initials, with or without its joining
    words ("Companies and Other Business Entities Act")."""
    parts = name.split()
    if len(parts) != 2 or not parts[0].isupper() or not parts[0].isalpha():
        return False
    short = parts[0].lower()
    for words in ordered:
        named = [w for w in words if w not in ("act", "code", "ordinance") and not w.isdigit()]
        if short in ("".join(w[0] for w in named), "".join(w[0] for w in named if w not in _NAME_FILLER)):
            return True
    return False


def _word_in(word: str, title: set[str]) -> bool:
    if word in title:
        return True
    return len(word) >= 4 and any(len(t) >= 4 and (t.startswith(word) or word.startswith(t)) for t in title)


def evidence_features(
    question: str,
    result: RetrievalResult,
    lexical: LexicalIndex,
    thesaurus: Thesaurus | None = None,
    titles: Sequence[str] | None = None,
) -> dict[str, float]:
    """The features of one question's retrieved evidence (all in [0, 1] except bm25_norm, which is rarely above 1);
    ``titles`` are the corpus's document titles (``named_law`` is 1 without them)."""
    dense = result.stages.get("dense", [])
    bm25 = result.stages.get("bm25", [])
    dense_top = max((score for _, score in dense), default=0.0)
    terms = set(tokenize(f"{question} {' '.join(result.lay_terms)}"))
    total = max(1, len(lexical))
    idf = sum(math.log(1 + (total - df + 0.5) / (df + 0.5)) for t in terms if (df := lexical.document_frequency(t)) > 0)
    bm25_norm = (bm25[0][1] / idf) if bm25 and idf > 0 else 0.0

    words = meaning_words(question)
    # The single words of each legal term: a lay word counts as covered when one of them is there.
    legal = legal_equivalents(question, words, thesaurus)
    related = {w: {part for term in legal[w] for part in re.findall(r"[a-z0-9]+", term)} for w in words}
    weight = {w: rarity(lexical, w) for w in words}
    families = {w: {stem(w)} | {stem(r) for r in related.get(w, ())} for w in words}
    coverage = coverage_idf = key_covered = pairs = 0.0
    rarest = max(words, key=lambda w: weight[w]) if words else ""
    asks_quantity = bool(ASKS_QUANTITY.search(question))
    key_words = sorted((w for w in words if w not in QUANTITY_WORDS | NUMBER_WORDS), key=lambda w: -weight[w])[:2]
    quantity = 0.0 if asks_quantity and key_words else 1.0
    for hit in result.hits[:COVERAGE_HITS]:
        chunk = hit.chunk
        stems = [stem(t) for t in tokenize(f"{chunk.title} {chunk.section_heading} {chunk.text}")]
        have = set(stems)
        covered = {w for w in words if families[w] & have}
        if words:  # a question of only short, numeric or question words ("x", "123") covers nothing
            coverage = max(coverage, len(covered) / len(words))
            coverage_idf = max(coverage_idf, sum(weight[w] for w in covered) / sum(weight.values()))
        key_covered = max(key_covered, float(rarest in covered))
        pairs = max(pairs, pairs_near(words, families, stems))
        if quantity == 0.0:
            # "(2)", "section 12" and the section's own number ("68B. Pupil with disability") are not amounts.
            facts = tokenize(without_references(_SECTION_NUMBER.sub(" ", chunk.text)))
            quantity = float(number_near(key_words, families, facts))
    subject = sorted(words, key=lambda w: -weight[w])[:2]
    heading_named = 0.0
    for hit in result.hits[:COVERAGE_HITS]:
        named = {stem(t) for t in tokenize(f"{hit.chunk.title} {hit.chunk.section_heading}")}
        heading_named = max(heading_named, float(any(families[w] & named for w in subject)))
    dense_scores = dict(dense)
    dense_best = float(dense_scores.get(result.hits[0].chunk.chunk_id, 0.0)) if result.hits else 0.0
    tenth = dense[min(TOP, len(dense)) - 1][1] if dense else 0.0
    dense_margin = float(dense_top - tenth)
    plain = [w for w in words if not related.get(w)]
    unknown = sum(lexical.family_frequency(w) == 0 for w in plain) / len(words) if words else 0.0

    def sections(stage: Sequence[tuple[str, float]]) -> set[str]:
        return {cid.split("/c", 1)[0] for cid, _ in stage[:TOP]}

    agreement = len(sections(dense) & sections(bm25)) / TOP if dense and bm25 else 0.0
    fused = [cid for cid, _ in result.stages.get("fused", [])[:TOP]] or [h.chunk.chunk_id for h in result.hits]
    lead = result.hits[0].chunk.chunk_id.split("#", 1)[0] if result.hits else ""
    act_focus = sum(cid.split("#", 1)[0] == lead for cid in fused) / len(fused) if fused and lead else 0.0
    best_rank = 0.0
    if result.hits:
        ranks = result.hits[0].ranks
        best_rank = sum(1 / ranks[s] for s in ("dense", "bm25") if s in ranks) / 2
    return {
        "dense_top": float(dense_top), "bm25_norm": float(bm25_norm), "coverage": coverage, "unknown": unknown,
        "agreement": agreement, "best_rank": best_rank, "coverage_idf": coverage_idf, "key_covered": key_covered,
        "pairs": pairs, "quantity": quantity,
        "named_law": float(titles is None or not missing_laws(question, titles)), "dense_best": dense_best,
        "dense_margin": dense_margin, "heading_named": heading_named, "act_focus": act_focus,
    }  # fmt: skip


def pairs_near(words: Sequence[str], families: Mapping[str, set[str]], stems: Sequence[str]) -> float:
    """Share of neighbouring question words (w1, w2) that occur within PAIR_WINDOW words of each other in ``stems``
    (a one-word question counts as covered when its word is there)."""
    where: dict[str, list[int]] = {}
    for i, s in enumerate(stems):
        where.setdefault(s, []).append(i)

    def positions(word: str) -> list[int]:
        return sorted(i for family in families[word] for i in where.get(family, ()))

    if len(words) < 2:
        return float(bool(words) and bool(positions(words[0])))
    near = 0
    for first, second in zip(words, words[1:], strict=False):
        a, b = positions(first), positions(second)
        near += any(abs(i - j) <= PAIR_WINDOW for i in a for j in b)
    return near / (len(words) - 1)


def number_near(topic: Sequence[str], families: Mapping[str, set[str]], tokens: Sequence[str]) -> bool:
    """A number (digits, "US$500", or words) within QUANTITY_WINDOW words of one of the ``topic`` words (whose
    stem families are ``families``) in ``tokens``."""
    numbers = [i for i, t in enumerate(tokens) if t in NUMBER_WORDS or _AMOUNT.fullmatch(t)]
    if not numbers:
        return False
    for i, token in enumerate(tokens):
        if any(stem(token) in families[w] for w in topic) and any(abs(i - j) <= QUANTITY_WINDOW for j in numbers):
            return True
    return False


CLIP = 3.0
"""A feature counts at most this many standard deviations from its fitted mean. A linear model extrapolates without
limit, and some features' range depends on the corpus (``dense_margin`` is far larger over a handful of documents,
where the tenth best chunk is unrelated, than over hundreds): beyond what the fit saw, a feature says "far above
usual", not "certain"."""


def standard(value: float, mean: float, scale: float) -> float:
    """``value`` standardised by the fitted mean and scale, clipped to ±``CLIP``."""
    return max(-CLIP, min(CLIP, (value - mean) / scale))


class _ModelFile(BaseModel):
    version: str = Field(min_length=1)
    features: list[str]
    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float
    threshold: float = Field(gt=0, lt=1)
    related_threshold: float | None = Field(None, gt=0, lt=1)
    grade_weight: float = 0.0
    veto: list[str] = []

    @model_validator(mode="after")
    def _consistent(self) -> _ModelFile:
        unknown = [f for f in self.features if f not in FEATURES]
        if not self.features or unknown or len(set(self.features)) != len(self.features):
            raise ValueError(f"features must be distinct names from {list(FEATURES)}; got {self.features}")
        if any(f not in FEATURES for f in self.veto):
            raise ValueError(f"veto must name features from {list(FEATURES)}; got {self.veto}")
        if not len(self.mean) == len(self.scale) == len(self.weights) == len(self.features):
            raise ValueError("mean, scale and weights need one value per feature")
        if any(s <= 0 for s in self.scale):
            raise ValueError("every scale must be positive")
        if self.related_threshold is not None and self.related_threshold > self.threshold:
            raise ValueError("related_threshold must not be above threshold")
        return self


@dataclass(frozen=True, slots=True)
class AnswerabilityModel:
    """Logistic regression over standardised evidence features; answerable when the probability reaches threshold."""

    version: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    grade_weight: float = 0.0
    veto: tuple[str, ...] = ()
    """Features whose value 0 means abstain, whatever the probability."""
    related_threshold: float = 1.0
    """Evidence judged not to answer is still close enough to show as the closest provisions (the ``related``
    outcome) when its probability reaches this (at most ``threshold``; 1 never shows them). A model file without
    one shows them only where a veto stopped an answer the probability would give."""

    def logit(self, features: Mapping[str, float], grade: float | None = None) -> float:
        z = self.bias + sum(
            w * standard(features[name], m, s)
            for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        if grade is not None and features.get("key_covered", 1.0) > 0:
            z += self.grade_weight * max(0.0, min(1.0, grade) - 0.5)
        return z

    def probability(self, features: Mapping[str, float], grade: float | None = None) -> float:
        z = self.logit(features, grade)
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

    def decide(self, features: Mapping[str, float], grade: float | None = None) -> Verdict:
        p = self.probability(features, grade)
        vetoed = [name for name in self.veto if features.get(name, 1.0) == 0.0]
        answerable = p >= self.threshold and not vetoed
        if vetoed:
            reason = f"the evidence does not answer the question (failed: {', '.join(vetoed)}; p={p:.2f})"
        elif answerable:
            reason = f"the evidence answers the question (p={p:.2f} ≥ {self.threshold:.2f})"
        else:
            pulls = zip(self.features, self.mean, self.scale, self.weights, strict=True)
            weakest = min(pulls, key=lambda f: f[3] * standard(features[f[0]], f[1], f[2]))[0]
            reason = f"the evidence does not answer the question (p={p:.2f} < {self.threshold:.2f}; weakest: {weakest})"
        return Verdict(answerable, p, self.threshold, dict(features), reason)


def load_answerability_model(path: Path | None = None) -> AnswerabilityModel:
    """Read and validate the fitted parameters (the packaged file by default); ConfigError names the problem."""
    source = path or DEFAULT_PATH
    try:
        parsed = _ModelFile.model_validate(tomllib.loads(source.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ConfigError(f"answerability model {source} does not exist") from None
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"answerability model {source} is invalid: {exc}") from None
    return AnswerabilityModel(
        parsed.version, tuple(parsed.features), tuple(parsed.mean), tuple(parsed.scale), tuple(parsed.weights),
        parsed.bias, parsed.threshold, parsed.grade_weight, tuple(parsed.veto),
        parsed.threshold if parsed.related_threshold is None else parsed.related_threshold,
    )  # fmt: skip


def decide_answerable(
    question: str,
    result: RetrievalResult,
    lexical: LexicalIndex,
    model: AnswerabilityModel,
    thesaurus: Thesaurus | None = None,
    grade: float | None = None,
    titles: Sequence[str] | None = None,
) -> Verdict:
    """The graph's one call: features of this question's evidence, then the model's verdict."""
    return model.decide(evidence_features(question, result, lexical, thesaurus, titles), grade)
