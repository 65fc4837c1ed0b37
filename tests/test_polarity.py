"""Polarity: a sentence that says the opposite of the provision it shares its words with is not supported by it."""

import json
from pathlib import Path

import pytest

from api.composer.judge.gate import gate_model_answer
from api.composer.judge.polarity import forbids, imposes_discretion, opposite
from api.composer.judge.rules import support
from api.schemas.events import Citation

DATA = Path(__file__).parent / "data"
PROVISIONS: dict[str, str] = json.loads((DATA / "provisions.json").read_text())
EXAMPLES = [json.loads(line) for line in (DATA / "polarity.jsonl").read_text().splitlines() if line.strip()]


def _judged() -> list[tuple[dict[str, object], bool]]:
    return [(e, support(str(e["sentence"]), PROVISIONS[str(e["provision"])]).supported) for e in EXAMPLES]


def test_no_supported_sentence_is_rejected_for_its_polarity() -> None:
    # Every sentence labelled supported, negated or not, worded like its clause or not, still passes.
    wrongly_rejected = [str(e["sentence"]) for e, supported in _judged() if e["supported"] and not supported]
    assert len([e for e in EXAMPLES if e["supported"]]) >= 10
    assert wrongly_rejected == []


def test_most_opposite_sentences_are_caught() -> None:
    # Two flips stay out of reach (the labour provision's clause is all exceptions: "unless otherwise lawfully
    # terminated", "not less favourable"); every other one is caught.
    flips = [e for e in EXAMPLES if not e["supported"]]
    missed = [str(e["sentence"]) for e, supported in _judged() if not e["supported"] and supported]
    assert len(flips) >= 12
    assert len(missed) <= 2, missed
    assert all("undertaking" in sentence for sentence in missed)


def test_the_mismatches_that_count_and_the_wordings_that_do_not() -> None:
    clause = "No person under the age of eighteen years may contract a marriage."
    assert forbids(clause) and not forbids("A marriage may be solemnised at any time.")
    assert opposite("A person under eighteen may marry.", clause)  # a permission the clause forbids
    assert opposite("The deposit need not be refunded.", "The deposit shall be refunded to the tenant.")
    assert not opposite("Nobody under 18 can marry.", clause)  # both forbid
    assert not opposite("The minimum age of marriage is 18.", clause)  # asserts nothing the clause denies
    # Conditions and bounds word the same rule either way round.
    assert not opposite("A landlord may ask for up to two months' rent.", "A landlord shall not require more than "
                        "two months' rent.")  # fmt: skip
    assert not opposite("An employee cannot be dismissed without a hearing.", "An employer shall give a hearing.")
    assert not opposite("A person may marry with consent.", "No person shall marry without consent.")
    # Leave to go past a limit the clause sets (a real small model's "may charge interest above the prescribed rate").
    limit = "No lender shall stipulate for, demand or receive interest at a rate greater than the prescribed rate."
    assert opposite("A lender may charge interest above the prescribed rate.", limit)
    assert opposite("A lender can receive interest at more than the prescribed rate.", limit)
    assert not opposite("A lender may charge interest up to the prescribed rate.", limit)  # within the limit
    assert not opposite("A lender may not charge more than the prescribed rate.", limit)  # both forbid
    deadline = "The other shall, not later than thirty days after the date of marriage, be transmitted."
    assert opposite("The entry may be sent later than thirty days after the marriage.", deadline)
    # Extending a rule to what the clause excludes from it; saying what a prohibition covers is not that.
    excluded = "Subsection (1) does not apply where the defect was caused by the consumer's misuse of the goods."
    assert opposite("The right also covers a defect caused by the consumer's misuse of the goods.", excluded)
    assert not opposite("The right does not cover a defect caused by the consumer's misuse.", excluded)
    assert not opposite("The prohibition covers every employer.", "No employer shall dismiss an employee for that.")


def test_the_gate_removes_a_sentence_that_reverses_its_cited_provision() -> None:
    text = PROVISIONS["marriages_s3"]
    offered = {1: Citation(index=1, doc_key="zw/act/2022/1", title="Marriages Act", section_id="zw/act/2022/1#s3",
                           section="section 3", chunk_id="zw/act/2022/1#s3/c0", quote=text[:120])}  # fmt: skip
    provisions = {"zw/act/2022/1#s3": text}
    reversed_ = gate_model_answer("A person under the age of eighteen years may contract a marriage [1].", offered,
                                  provisions)  # fmt: skip
    assert not reversed_.passed and reversed_.answer == ""
    assert reversed_.summary()["claims_opposite"] == 1
    kept = gate_model_answer("No person under the age of eighteen years may contract a marriage [1].", offered,
                             provisions)  # fmt: skip
    assert kept.passed and kept.summary()["claims_opposite"] == 0


@pytest.mark.parametrize(
    ("sentence", "window", "imposed"),
    [
        ("The Director must grant assistance to every applicant.", "The Director may grant assistance.", True),
        ("The court is required to order a refund.", "The court may order a refund.", True),
        # The window imposes a duty too: the sentence may restate it.
        (
            "The officer must acknowledge the request.",
            "(1) A person may apply. (2) The officer must acknowledge it.",
            False,
        ),
        # A deadline on using a permission is how it is usually put in plain words.
        ("You must appeal within thirty days.", "A person aggrieved may appeal within thirty days.", False),
        ("The Director may grant assistance.", "The Director may grant assistance.", False),
        ("The employer must pay the wages.", "The employer shall pay the wages.", False),
    ],
)
def test_a_duty_where_the_provision_gives_a_discretion_is_an_opposite_meaning(
    sentence: str, window: str, imposed: bool
) -> None:
    assert imposes_discretion(sentence, window) is imposed
