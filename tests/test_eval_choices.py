"""The multiple-choice evaluation: the committed question set, its loader, and `evaluate_choices` through the real
orchestrator on the sample corpus, without a model and with the scripted loopback model."""

import json
from collections import Counter
from pathlib import Path

import pytest

from api.evaluation.choices import (
    ChoiceOutcome,
    ChoiceQuestion,
    band_of,
    calibration_error,
    choices_report,
    evaluate_choices,
    load_choice_questions,
)
from api.orchestrators.query.choices import split_choices
from api.services import open_services
from api.settings import LLMSettings, Settings
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json
from tests.test_agent import DEPOSIT, QUOTE
from tests.test_cli import gweta

ROOT = Path(__file__).resolve().parent.parent
MC = ROOT / "evaluation" / "mc_questions.jsonl"
DEV = ROOT / "evaluation" / "dev_questions.jsonl"
TENANCY = {"law_id": "sample/act/2024/3", "section": "s3"}
MARRIAGE = {"law_id": "sample/act/2022/9", "section": "s3"}


def write(path: Path, *rows: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_committed_set_is_built_from_the_answerable_development_questions() -> None:
    questions = load_choice_questions(MC)  # every line well formed; a text block gives the listed choices
    dev = {r["id"]: r for r in map(json.loads, DEV.read_text().splitlines())}
    records = [json.loads(line) for line in MC.read_text().splitlines()]
    assert len(questions) >= 30 and len({q.qid for q in questions}) == len(questions)
    for record, question in zip(records, questions, strict=True):
        source = dev[record["source"]]
        assert source["kind"] != "unanswerable" and source["gold"] == record["gold"] and question.gold
        assert split_choices(question.question)[0] == source["question"]
        assert 3 <= len(question.choices) <= 4 and len(set(question.choices)) == len(question.choices)
    assert Counter(q.form for q in questions)["text"] >= 10
    letters = Counter(q.answer for q in questions)
    assert set(letters) == set("ABCD") and max(letters.values()) - min(letters.values()) <= len(questions) // 8


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"answer": "D"}, "not one of the choices' letters"),
        ({"choices": ["only one"], "answer": "A"}, "1 choices"),
        ({"form": "text"}, "does not give the listed choices"),
        ({"form": "table"}, "form 'table'"),
    ],
)
def test_a_malformed_question_is_refused_with_its_line(tmp_path: Path, row: dict[str, object], problem: str) -> None:
    good = {"id": "q1", "question": DEPOSIT, "choices": ["one month", "two months"], "answer": "B", "gold": []}
    path = write(tmp_path / "mc.jsonl", good, {**good, "id": "q2", **row})
    with pytest.raises(ValueError, match=f"line 2: .*{problem}"):
        load_choice_questions(path)


async def test_without_a_model_the_evidence_picks_and_the_report_counts_it(
    private_data_dir: Path, tmp_path: Path
) -> None:
    marriage = "What is the minimum age of marriage?"
    path = write(
        tmp_path / "mc.jsonl",
        {"id": "rent", "question": DEPOSIT, "choices": ["one month's rent", "two months' rent", "six months' rent"],
         "answer": "B", "gold": [TENANCY], "kind": "direct", "form": "list"},
        {"id": "age", "question": f"{marriage}\nAnswer choices:\nA. sixteen years\nB. eighteen years",
         "choices": ["sixteen years", "eighteen years"], "answer": "B", "gold": [MARRIAGE], "kind": "direct",
         "form": "text"},
        {"id": "trap", "question": DEPOSIT, "choices": ["one month's rent", "three months' rent"], "answer": "A",
         "gold": [TENANCY], "kind": "trap", "form": "list"},
    )  # fmt: skip
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        rent, age, trap = await evaluate_choices(services, load_choice_questions(path))
    assert rent.correct and rent.method == "evidence" and 0.5 < rent.confidence <= 1
    assert rent.cited_gold and rent.pick_on_gold and not rent.abstained and rent.ms > 0
    assert age.correct and age.cited_gold  # the choices were read from the question's text
    # Neither choice is what the provision says: nothing is supported, so it cannot tell, and that scores as wrong.
    assert trap.letter == "" and not trap.correct and trap.cited_gold and not trap.pick_on_gold
    report = choices_report("MC", [rent, age, trap], ["- note"])
    rows = {line.split("|")[1].strip(): line for line in report.splitlines() if line.startswith("| ")}
    assert "| 3 | 0.67 (2/3) | 1.00 (2/2) | 0.33 (1/3) | 0.00 (0/3) | 1.00 (3/3) | 1.00 (2/2) |" in rows["all"]
    assert "| 1 | 0.00 (0/1) | – | 1.00 (1/1) |" in rows["kind: trap"] and "form: text" in rows
    assert "| trap | trap | list | A | – ✗ |" in report


async def test_with_a_model_its_letter_and_stated_confidence_are_scored(private_data_dir: Path, tmp_path: Path) -> None:
    def pick(letter: str, confidence: float) -> Reply:
        reasons = [{"letter": x, "supported": x == letter, "reason": "section 3 says so", "citations": [1]}
                   for x in "AB"]  # fmt: skip
        return answer_json({"letter": letter, "confidence": confidence, "reasons": reasons})

    path = write(
        tmp_path / "mc.jsonl",
        *({"id": f"q{n}", "question": DEPOSIT, "choices": ["one month", "two months"], "answer": "B",
           "gold": [TENANCY], "kind": "direct", "form": "list"} for n in (1, 2)),
    )  # fmt: skip
    upstream = FakeOpenAI([Reply([f"“{QUOTE}.” [1]"])], {"choose": [pick("B", 0.96), pick("A", 0.92)]})
    with LiveServer(upstream.app) as llm:
        settings = Settings(data_dir=private_data_dir, llm=LLMSettings(backend="openai", base_url=f"{llm.url}/v1",
                                                                      model="m-1"))  # fmt: skip
        async with open_services(settings) as services:
            right, wrong = await evaluate_choices(services, load_choice_questions(path))
    assert upstream.skills_called.count("choose") == 2
    assert right.correct and right.method == "model" and right.confidence == 0.96 and right.pick_on_gold
    assert wrong.letter == "A" and not wrong.correct and wrong.confidence == 0.92
    assert wrong.cached  # the second asking reused the researched answer; the model still chose again
    report = choices_report("MC", [right, wrong], [])
    assert "| [0.9, 1.0] | 2 | 0.94 | 0.50 (1/2) |" in report  # sure of both, right about one: not calibrated
    assert "expected calibration error (questions with a letter): 0.44" in report


def test_calibration_error_is_the_gap_between_stated_confidence_and_accuracy() -> None:
    question = ChoiceQuestion("q", "?", ("a", "b"), "A", frozenset(), "direct", "list")

    def outcome(letter: str, confidence: float) -> ChoiceOutcome:
        return ChoiceOutcome(question, letter, confidence, "evidence", False, False, False, False, 1.0)

    assert [band_of(c) for c in (0.0, 0.59, 0.6, 0.95, 1.0)] == [0, 0, 1, 4, 4]
    assert calibration_error([outcome("A", 0.75), outcome("A", 0.75), outcome("B", 0.75), outcome("B", 0.75)]) == 0.25
    assert calibration_error([outcome("A", 1.0), outcome("", 0.0)]) == 0.0  # no letter: not a stated confidence


def test_the_command_writes_the_report_and_refuses_a_malformed_file(private_data_dir: Path, tmp_path: Path) -> None:
    row = {"id": "rent", "question": DEPOSIT, "choices": ["one month's rent", "two months' rent"], "answer": "B",
           "gold": [TENANCY], "kind": "direct"}  # fmt: skip
    questions, out = write(tmp_path / "mc.jsonl", row), tmp_path / "report.md"
    done = gweta("eval", "choices", "--questions", str(questions), "--out", str(out), data_dir=private_data_dir)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == done.stdout and "LLM: none (choice by evidence support)" in done.stdout
    assert "| all | 1 | 1.00 (1/1) |" in done.stdout and "| rent | direct | list | B | B |" in done.stdout
    bad = gweta("eval", "choices", "--questions", str(write(tmp_path / "bad.jsonl", {**row, "answer": "C"})),
                data_dir=private_data_dir)  # fmt: skip
    assert bad.returncode == 2 and "line 1: answer 'C' is not one of the choices' letters" in bad.stderr
