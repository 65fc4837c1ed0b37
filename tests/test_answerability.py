"""Answerability from evidence: features computed from a real retrieval, the packaged fitted model, and the file's
validation at load."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from api.composer.answerability import (
    ASKS_QUANTITY,
    CLIP,
    FEATURES,
    AnswerabilityModel,
    decide_answerable,
    evidence_features,
    load_answerability_model,
    meaning_words,
    missing_laws,
    number_near,
    pairs_near,
    rarity,
    topic_words,
)
from api.errors import ConfigError
from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import BM25Settings, RetrievalSettings, Settings
from api.text.words import stem, tokenize
from api.tools.bm25 import RankBM25Index
from api.tools.thesaurus import load_thesaurus

ANSWERABLE = "How much deposit can a landlord ask for?"
UNANSWERABLE = "Is bitcoin mining with cryptocurrency rigs legal?"


def test_meaning_words_leave_out_how_the_question_is_asked() -> None:
    assert meaning_words("Is it legal in Zimbabwe for my boss to sack me?") == ["boss", "sack"]
    assert meaning_words("What is the minimum age of marriage?") == ["minimum", "age", "marriage"]


def test_a_question_verb_in_another_tense_is_not_a_meaning_word() -> None:
    # "needed" asks as "need" does; a word the corpus seldom uses, it would pass for the question's rarest word.
    assert meaning_words("How much notice is needed?") == ["notice"]
    assert meaning_words("I was wanting to know the fee") == ["know", "fee"]
    # A plural is a word of its own: "wills" are testaments, not "will" the question word.
    assert meaning_words("Who can witness wills?") == ["witness", "wills"]


async def test_a_follow_up_asking_for_an_amount_finds_the_number_on_its_own_topic(private_data_dir: Path) -> None:
    # A follow-up ("How much notice is needed?") searched with the previous turn's subject carried. The amount asked
    # for is the notice's, stated in the notice provision the search ranks first; were "needed" a topic word, the
    # check would look for a number near "needed" or "dismiss" and pass or fail by which provisions rank next.
    asks = "How much notice is needed (employer, dismiss)?"
    # With BM25 at half weight the maternity provision (a number near "dismiss") drops out of the best three.
    retrieval = RetrievalSettings(cache_ttl_s=0, bm25_weight=0.5)
    async with open_services(Settings(data_dir=private_data_dir, retrieval=retrieval)) as services:
        retriever = services.orchestrator.deps.retriever
        result = await retriever.retrieve(asks)
        verdict = decide_answerable(asks, result, retriever.lexical, load_answerability_model(), retriever.thesaurus)
    assert result.hits[0].chunk.section_id == "sample/act/2023/7#s6"
    assert verdict.features["quantity"] == 1.0 and verdict.answerable, verdict.reason


def test_the_packaged_model_loads_and_is_consistent() -> None:
    model = load_answerability_model()
    assert model.version and 0 < model.threshold < 1 and len(model.weights) == len(model.features)
    assert set(model.features) <= set(FEATURES)
    # The fitted directions make sense: better evidence never lowers the probability.
    weight = dict(zip(model.features, model.weights, strict=True))
    for name in ("dense_top", "coverage", "coverage_idf", "key_covered"):
        assert weight.get(name, 1.0) > 0, name
    assert weight.get("unknown", -1.0) < 0


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"features": '["dense_top", "stars"]', "mean": "[0, 0]", "scale": "[1, 1]", "weights": "[1, 1]"},
            "features must be",
        ),
        (
            {"features": '["dense_top", "dense_top"]', "mean": "[0, 0]", "scale": "[1, 1]", "weights": "[1, 1]"},
            "features must be",
        ),
        ({"scale": "[1, 1, 1, 1, 1, 0]"}, "positive"),
        ({"threshold": "1.5"}, "threshold"),
        ({"weights": "[1, 2]"}, "one value per feature"),
        ({"veto": '["stars"]'}, "veto must name"),
    ],
)
def test_a_broken_model_file_is_refused(tmp_path: Path, change: dict[str, str], problem: str) -> None:
    values = {
        "version": '"t"', "features": str(list(FEATURES[:6])).replace("'", '"'), "mean": "[0, 0, 0, 0, 0, 0]",
        "scale": "[1, 1, 1, 1, 1, 1]", "weights": "[1, 1, 1, -1, 1, 1]", "bias": "0", "threshold": "0.5",
    }  # fmt: skip
    path = tmp_path / "answerability.toml"
    path.write_text("\n".join(f"{k} = {v}" for k, v in {**values, **change}.items()))
    with pytest.raises(ConfigError, match=problem):
        load_answerability_model(path)
    path.write_text("\n".join(f"{k} = {v}" for k, v in values.items()))
    assert load_answerability_model(path).threshold == 0.5


def test_probability_and_grade_move_the_right_way() -> None:
    model = AnswerabilityModel(
        "t", FEATURES[:6], (0.0,) * 6, (1.0,) * 6, (1.0, 1.0, 1.0, -1.0, 1.0, 1.0), 0.0, 0.5, 2.0
    )
    base = {**dict.fromkeys(FEATURES, 0.0), "key_covered": 1.0}
    assert model.probability(base) == pytest.approx(0.5)
    assert model.probability({**base, "coverage": 1.0}) == pytest.approx(1 / (1 + math.exp(-1)))
    assert model.probability({**base, "unknown": 1.0}) < 0.5
    # A grade raises the probability and never lowers it: the model's "irrelevant" does not overrule the evidence.
    assert model.probability(base, grade=1.0) > model.probability(base, grade=0.75) > 0.5
    assert model.probability(base, grade=0.0) == model.probability(base, grade=0.5) == model.probability(base)
    # Nor does it raise evidence that lacks the question's rarest word: the model's "relevant" is a topic neighbour.
    keyless = {**base, "key_covered": 0.0}
    assert model.probability(keyless, grade=1.0) == model.probability(keyless) == model.probability(base)
    refused = model.decide({**base, "unknown": 1.0})
    assert not refused.answerable and "unknown" in refused.reason
    assert model.decide({**base, "coverage": 1.0}).answerable


async def test_features_and_verdicts_from_a_real_retrieval(private_data_dir: Path) -> None:
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        good = await retriever.retrieve(ANSWERABLE)
        bad = await retriever.retrieve(UNANSWERABLE)
        model = load_answerability_model()
        yes = decide_answerable(ANSWERABLE, good, retriever.lexical, model, retriever.thesaurus)
        no = decide_answerable(UNANSWERABLE, bad, retriever.lexical, model, retriever.thesaurus)
        lay = evidence_features("My landlord wants a deposit", good, retriever.lexical, retriever.thesaurus)
    assert set(yes.features) == set(FEATURES)
    assert yes.features["coverage"] == 1.0 and yes.features["unknown"] == 0.0
    assert yes.features["dense_top"] > no.features["dense_top"] > 0
    # "bitcoin", "mining", "cryptocurrency", "rigs": words the sample statutes never use.
    assert no.features["unknown"] >= 0.75 and no.features["coverage"] <= 0.25
    # "A landlord shall not require a deposit…": the question's neighbouring words stand together in the provision.
    assert yes.features["pairs"] >= 0.5 and no.features["pairs"] == 0.0
    assert yes.features["key_covered"] == 1.0 and yes.features["coverage_idf"] > no.features["coverage_idf"]
    assert yes.probability > no.probability and yes.answerable and not no.answerable
    # "How much deposit…" asks for an amount, and the deposit provision states one ("two months' rent").
    assert yes.features["quantity"] == 1.0 and no.features["quantity"] == 1.0  # the second asks for none
    assert lay["coverage"] == 1.0  # "landlord" is covered by the thesaurus's "lessor" or by itself


def test_neighbouring_question_words_count_only_when_they_stand_together() -> None:
    text = "an employee adopting a child may apply for unpaid leave of absence under the general leave provisions"
    stems = [stem(t) for t in tokenize(text)]
    families = {w: {stem(w)} for w in ("adoption", "adopting", "leave", "child", "unpaid", "provisions")}
    # "adopting … leave" are five words apart here; "unpaid leave" stand together.
    assert pairs_near(["adopting", "leave"], families, stems) == 0.0
    assert pairs_near(["unpaid", "leave"], families, stems) == 1.0
    assert pairs_near(["child", "adopting", "provisions"], families, stems) == 0.5
    assert pairs_near(["adoption", "leave"], families, stems) == 0.0  # no word of its family at all
    assert pairs_near(["leave"], families, stems) == 1.0 and pairs_near([], families, stems) == 0.0
    # A thesaurus term of the word counts as the word.
    assert pairs_near(["adoption", "child"], {**families, "adoption": {"adopt"}}, stems) == 1.0


def test_an_amount_counts_only_near_the_question_topic() -> None:
    def near(text: str, topic: list[str]) -> bool:
        return number_near(topic, {w: {stem(w)} for w in topic}, tokenize(text))

    maternity = "a female employee shall be granted maternity leave on full pay for a period of ninety-eight days"
    assert near(maternity, ["maternity"]) and near("paid leave of 90 days for every adoption", ["adoption"])
    assert not near(maternity, ["adoption"])  # the topic is not there at all
    far = "an adoption order may be made on application " + "by the applicant " * 8 + "within thirty days"
    assert not near(far, ["adoption"])  # a number, but nowhere near the topic
    assert not near("no period is stated for adoption leave", ["adoption"])
    # Number words whose stems differ ("five" -> "fiv") and amounts written with a currency count too.
    assert near("five days of special leave on full pay", ["special"]) and near("a deposit of US$500", ["deposit"])
    assert near("twelve months after adoption", ["adoption"]) and near("one hundred dollars for adoption", ["adoption"])


def test_a_veto_abstains_whatever_the_probability() -> None:
    model = AnswerabilityModel("t", FEATURES[:6], (0.0,) * 6, (1.0,) * 6, (1.0,) * 6, 5.0, 0.5, 2.0, ("quantity",))
    strong = {**dict.fromkeys(FEATURES, 1.0), "unknown": 0.0}
    assert model.decide(strong).answerable and model.probability(strong) > 0.99
    refused = model.decide({**strong, "quantity": 0.0})
    assert not refused.answerable and "quantity" in refused.reason
    assert model.decide({k: v for k, v in strong.items() if k != "quantity"}).answerable  # no such feature: no veto


async def test_a_question_asking_for_an_amount_needs_a_number_on_its_topic(private_data_dir: Path) -> None:
    asks = "How many days of paternity leave is a father entitled to?"
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        result = await retriever.retrieve(asks)
        verdict = decide_answerable(asks, result, retriever.lexical, load_answerability_model(), retriever.thesaurus)
    # The sample statutes state periods of leave, but none near "paternity" or "father".
    assert verdict.features["quantity"] == 0.0 and not verdict.answerable and "quantity" in verdict.reason


async def test_the_penalty_quoted_is_the_one_for_what_the_question_asks_about(private_data_dir: Path) -> None:
    # "A landlord who contravenes subsection (1) …" is read with its subsection (1): section 6's penalty is for cutting
    # off the electricity; section 3's, which shares every other word, is for deposits (it was quoted instead).
    asks = "What is the penalty for a landlord who cuts off the electricity?"
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        events = [e async for e in services.orchestrator.stream(QueryRequest(q=asks, session_id="penalty"))]
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.verified and not final.abstained
    assert "level 7" in final.answer  # section 6(2)
    assert final.citations[0].section_id == "sample/act/2024/3#s6"
    deposits = final.answer.find("level 5")  # section 3's penalty may be quoted beside it, never before it
    assert deposits == -1 or final.answer.index("level 7") < deposits


COBE = "Companies and Other Business Entities Act"


def test_only_questions_asking_for_an_amount_expect_a_number() -> None:
    asks = ["How many days of leave?", "What is the minimum age of marriage?", "Is there a deadline to register?",
            "What is the maximum prison sentence for assault?", "What percentage of pay may be deducted?"]  # fmt: skip
    does_not = ["What are the minimum requirements to register a company?", "Who sets the deadline for objections?",
                "What interest does a surviving spouse have in the home?", "May my employer dismiss me?"]  # fmt: skip
    assert all(ASKS_QUANTITY.search(q) for q in asks) and not any(ASKS_QUANTITY.search(q) for q in does_not)


def test_a_named_law_counts_as_held_only_when_a_title_matches_it() -> None:
    titles = ["Labour Act", "Criminal Law (Codification and Reform) Act", "Consumer Protection Act", "Marriages Act"]
    assert missing_laws("What does the Road Traffic Act say about speeding?", titles) == ["Road Traffic Act"]
    assert missing_laws("How is redundancy pay worked out under the UK Employment Rights Act 1996?", titles) == [
        "UK Employment Rights Act"
    ]
    # Shortened and differently cased names of held laws, and sentences that start with a capital.
    assert missing_laws("What does the Criminal Law Code say about theft?", titles) == []
    assert missing_laws("Under Consumer Protection Act, may I return goods?", titles) == []
    assert missing_laws("Is this allowed under section 3 of the Marriages Act [Chapter 5:17]?", titles) == []
    assert missing_laws("Can my employer sack me without a hearing?", titles) == []
    # Not names of a law held elsewhere: two names joined by "and", a country's name, a possessive, a sentence's
    # first word, a title-cased question, initials, "the Principal Act".
    assert missing_laws("How do the Labour Act and the Consumer Protection Act differ?", titles) == []
    assert missing_laws("Under the Zimbabwe Labour Act, or Zimbabwe's Labour Act, can I be fired?", titles) == []
    assert missing_laws("Has Labour Act changed? What Is The Minimum Wage Under The Labour Act?", titles) == []
    assert missing_laws("What does the COBE Act say, and the Principal Act?", [*titles, COBE]) == []
    assert missing_laws("What does the XYZ Act say?", titles) == ["XYZ Act"]


def test_the_topic_is_the_questions_rare_words_with_their_legal_equivalents() -> None:
    texts = [f"The employer shall pay the employee wages for week {n}." for n in range(60)]
    texts += ["An employer shall not deduct anything from a student's remuneration.", "Interest on loans.",
              "A boss shouldn't be eighteen.", "Workers laid off."]  # fmt: skip
    index = RankBM25Index([f"c{i}" for i in range(len(texts))], [tokenize(t) for t in texts], BM25Settings())
    assert rarity(index, "fridge") > rarity(index, "student") == rarity(index, "loans") > rarity(index, "wages")
    question = "Can my boss deduct interest on student loans for a fridge from my wages?"
    topic = topic_words(question, index, load_thesaurus())
    # In one chunk of 64: the topic; in most chunks ("wages"): not; in none ("fridge"): the evidence judge's concern.
    assert set(topic) == {"boss", "deduct", "interest", "student", "loans"}
    assert "employer" in topic["boss"] and topic["student"] == frozenset()
    assert set(topic_words(question, index, None, max_share=0.0)) == set(topic)  # one chunk counts, however small
    assert set(topic_words(question, index, None, max_share=1.0)) == set(topic) | {"wages"}
    # Not the words that ask ("shouldn't"), nor an amount's; a lay phrase's legal terms count for its words.
    asked = topic_words("Shouldn't my boss pay eighteen loans when I was laid off?", index, load_thesaurus())
    assert "shouldn" not in asked and "eighteen" not in asked and "laid" in asked
    assert any("retrench" in term for term in asked["laid"]), asked["laid"]
    empty = RankBM25Index([], [], BM25Settings())
    assert topic_words(question, empty) == {}  # no index to judge rarity by: no topic check


def test_a_feature_far_outside_the_fitted_range_counts_as_far_not_as_certain() -> None:
    """A margin ten times any the fit saw (a handful of documents, the tenth best chunk unrelated) moves the logit
    by at most CLIP standard deviations' worth; within the range the model is the plain linear one."""
    model = AnswerabilityModel("t", ("dense_margin",), (0.1,), (0.05,), (1.0,), 0.0, 0.5)
    assert model.logit({"dense_margin": 0.15}) == pytest.approx(1.0)
    assert model.logit({"dense_margin": 5.0}) == pytest.approx(CLIP)
    assert model.logit({"dense_margin": -5.0}) == pytest.approx(-CLIP)
