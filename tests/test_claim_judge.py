"""The claim-judge seam: every judge behind ``ClaimJudge`` runs the same labelled cases, and its precision and recall
are pinned. The judges that need a model (a cross-encoder's weights, a chat model) run the same cases in
``tests/test_learned_judges.py`` on a model the tests build or script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.composer.judge import ClaimJudge, JudgeName, RulesJudge, build_claim_judge, reasons
from api.composer.verification import gate_model_answer
from api.schemas.events import Citation
from api.settings import GateSettings, Settings

DATA = Path(__file__).parent / "data"
PROVISIONS: dict[str, str] = json.loads((DATA / "provisions.json").read_text())
SUITES = {
    name: [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    for name in ("claim_support", "polarity")
}
# (precision, recall) per judge and suite: a change that lowers one is a regression to explain.
PINNED = {"rules": {"claim_support": (1.0, 1.0), "polarity": (23 / 25, 1.0)}}


def scores(judge: ClaimJudge, examples: list[dict[str, object]]) -> tuple[float, float]:
    said = [(judge.judge(str(e["sentence"]), PROVISIONS[str(e["provision"])], topic={}).supported, e["supported"])
            for e in examples]  # fmt: skip
    true_positive = sum(got and label for got, label in said)
    precision = true_positive / max(1, sum(got for got, _ in said))
    recall = true_positive / max(1, sum(bool(label) for _, label in said))
    return precision, recall


@pytest.mark.parametrize("name", ["rules"])
@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_judge_keeps_its_precision_and_recall_on_the_labelled_cases(name: JudgeName, suite: str) -> None:
    examples = SUITES[suite]
    assert sum(bool(e["supported"]) for e in examples) >= 10 and sum(not e["supported"] for e in examples) >= 10
    precision, recall = scores(build_claim_judge(GateSettings(judge=name)), examples)
    assert (precision, recall) >= PINNED[name][suite], (suite, precision, recall)


def test_the_setting_chooses_the_judge_and_the_rules_are_the_default() -> None:
    assert Settings().gate.judge == "rules"
    assert isinstance(build_claim_judge(Settings().gate), RulesJudge)


def test_a_verdict_names_why_it_fails() -> None:
    judge = RulesJudge()
    wrong_age = judge.judge("The minimum age of marriage is 16.", PROVISIONS["marriages_s3"], topic={})
    assert not wrong_age.supported and "missing_fact" in reasons(wrong_age)
    unrelated = judge.judge("The speed limit in urban areas is 60 km/h.", PROVISIONS["liquor_s34"], topic={})
    assert not unrelated.supported and "too_little" in reasons(unrelated)
    assert reasons(judge.judge("Child marriages are prohibited.", PROVISIONS["marriages_s3"], topic={})) == ()


class Refuses:
    """A judge that supports nothing: the gate must follow the judge it is given."""

    blocking = False

    def judge(self, sentence: str, provision: str, *, topic: object, identity: str = "", heading: str = "") -> object:
        return RulesJudge().judge("nothing at all here", provision, topic={})


def test_the_gate_asks_the_judge_it_is_given() -> None:
    citation = Citation(index=1, doc_key="d", title="Marriages Act", section_id="d#s3", section="section 3",
                        chunk_id="d#s3/c0", quote=PROVISIONS["marriages_s3"])  # fmt: skip
    answer = "Child marriages are prohibited [1]."
    assert gate_model_answer(answer, {1: citation}, {}).passed
    assert not gate_model_answer(answer, {1: citation}, {}, judge=Refuses()).passed  # type: ignore[arg-type]
