"""The real-model sentences labelled (evaluation/replay_labels.jsonl): shape, provisions that exist in the shared
corpus, sentences that the traces' answers hold, one line per (sentence, cited provisions), and verbatim labels whose
quotes are the provision's words."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "evaluation" / "replay_labels.jsonl"
TRACES = sorted((ROOT / "benchmarks" / "results").glob("eval_answers_local_llm*trace.jsonl"))
FIELDS = {"answer_id": str, "sentence": str, "law_id": str, "section": str, "supported": bool, "kind": str, "why": str,
          "cited": list}  # fmt: skip
SUPPORTED_KINDS = {"verbatim", "paraphrase", "application", "pointer", "summary"}
UNSUPPORTED_KINDS = {
    "wrong_provision", "unsupported_addition", "dropped_condition", "negation", "misread", "wrong_party",
    "permission_not_granted", "crossed_limbs", "wrong_term", "off_topic", "changed_number", "commentary", "fabricated",
    "no_content", "abstention_note", "permission_to_duty", "duty_to_permission", "contradicted", "garbled",
}  # fmt: skip
QUOTED = re.compile(r"[“\"]([^”\"]{20,})[”\"]")


def fold(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def labels() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def provisions(shared_data: Path) -> dict[str, list[str]]:
    """Each provision id and its text, named as ingestion names sections: ``law_id#ref``, and ``law_id#ref~2`` for the
    second section of a law with that ref (a schedule's paragraph 1 after the Act's section 1)."""
    out: dict[str, str] = {}
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as f:
        for line in f:
            act = json.loads(line)
            used: dict[str, int] = {}
            for section in act["sections"]:
                if not section["text"].strip():
                    continue
                key = f"{act['id']}#{section['ref']}"
                used[key] = used.get(key, 0) + 1
                out[key if used[key] == 1 else f"{key}~{used[key]}"] = section["text"]
    return out


def test_every_line_has_the_fields_the_claim_judges_read(labels: list[dict[str, Any]]) -> None:
    assert len(labels) >= 250
    for label in labels:
        assert {k: type(label.get(k)) for k in FIELDS} == FIELDS, label
        assert label["sentence"] == fold(label["sentence"]) and label["why"], label
        kinds = SUPPORTED_KINDS if label["supported"] else UNSUPPORTED_KINDS
        assert label["kind"] in kinds, label
    assert {False, True} <= {label["supported"] for label in labels}


def test_each_provision_is_a_section_of_the_corpus_and_among_those_cited(
    labels: list[dict[str, Any]], provisions: dict[str, str]
) -> None:
    for label in labels:
        provision = f"{label['law_id']}#{label['section']}"
        assert provision.split("~")[0] in label["cited"] and provision in provisions, label
        assert all(c in provisions for c in label["cited"]), label


def test_one_line_per_sentence_and_cited_provisions(labels: list[dict[str, Any]]) -> None:
    keys = [(label["sentence"], tuple(label["cited"])) for label in labels]
    assert len(keys) == len(set(keys))


def test_each_sentence_is_in_an_answer_the_model_wrote(labels: list[dict[str, Any]]) -> None:
    answers: dict[str, list[str]] = {}
    for path in TRACES:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            model = (record.get("answers") or {}).get("model") or {}
            if model.get("answer"):
                answers.setdefault(record["id"], []).append(fold(re.sub(r"\[\d+\]", "", model["answer"])))
    for label in labels:
        assert any(label["sentence"] in answer for answer in answers.get(label["answer_id"], [])), label


def test_a_verbatim_label_quotes_its_provision_word_for_word(
    labels: list[dict[str, Any]], provisions: dict[str, str]
) -> None:
    checked = 0
    for label in labels:
        if label["kind"] != "verbatim":
            continue
        text = fold(provisions[f"{label['law_id']}#{label['section']}"]).lower()
        for quote in QUOTED.findall(label["sentence"]):
            words = fold(quote).rstrip(" .;:—").lower()  # a quote may open with a capital
            assert words in text, (label["sentence"], words)
            checked += 1
    assert checked >= 50
