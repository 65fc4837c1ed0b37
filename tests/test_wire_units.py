"""The pure parts of the issue 10/12 wiring: multiple-choice parsing and selection by evidence, coverage of the
question's parts, unfinished sentences, and the evidence-strength fallback."""

from api.composer.judge.gate import complete_sentences
from api.orchestrators.query.choices import by_evidence, choice_text, from_model, split_choices
from api.orchestrators.query.evidence import searched_note, suggestions, uncovered_parts
from api.schemas.documents import Chunk

DEPOSITS = (
    "(1) A landlord shall not require a deposit that exceeds the rent payable for two months.\n"
    "(2) A landlord shall keep every deposit in an interest-bearing account with a registered bank."
)


def test_an_answer_choices_block_is_split_from_the_question() -> None:
    question = "How much deposit may a landlord require?"
    text = question + "\nAnswer choices:\nA. one month's rent\nB) two months' rent\n(C) any"
    assert split_choices(text) == (question, ["one month's rent", "two months' rent", "any"])
    assert split_choices("What are the choices: a tenant has?") == ("What are the choices: a tenant has?", [])
    assert split_choices("Which? Answer choices: A. only one") == ("Which? Answer choices: A. only one", [])


def test_without_a_model_the_choice_the_provision_states_wins() -> None:
    picked = by_evidence("deposit", ["one month's rent", "two months' rent", "six months' rent"], {1: DEPOSITS})
    assert picked.letter == "B" and picked.method == "evidence" and picked.confidence > 0.5
    assert [c.supported for c in picked.choices] == [False, True, False] and picked.choices[1].citations == [1]
    assert "Answer: B. two months' rent" in choice_text(picked)
    nothing = by_evidence("deposit", ["a goat", "a car"], {1: DEPOSITS})
    assert nothing.letter == "" and nothing.confidence == 0.0 and "none of the choices" in choice_text(nothing)


def test_a_models_pick_must_be_well_formed_and_cite() -> None:
    reasons = [{"letter": "A", "supported": False, "reason": "no", "citations": []},
               {"letter": "B", "supported": True, "reason": "s 3(1)", "citations": [1, 9]}]  # fmt: skip
    picked = from_model({"letter": "b", "confidence": 0.8, "reasons": reasons}, ["one", "two"], [1])
    assert picked is not None and picked.letter == "B" and picked.choices[1].citations == [1]  # [9] was not cited
    assert from_model({"letter": "C", "reasons": reasons}, ["one", "two"], [1]) is None  # no such choice
    assert from_model({"letter": "A", "reasons": reasons}, ["one", "two"], [1]) is None  # its pick unsupported
    assert from_model({"letter": "B", "reasons": reasons[1:]}, ["one", "two"], [1]) is None  # a reason missing
    assert from_model(None, ["one", "two"], [1]) is None


def test_uncovered_parts_are_those_the_answer_does_not_address() -> None:
    parts = ["How much deposit can a landlord require", "what is the fee for a fishing licence"]
    assert uncovered_parts(parts, "The landlord may require at most two months' rent [1].", [DEPOSITS]) == [parts[1]]
    assert uncovered_parts(parts[:1], "", [DEPOSITS]) == []


def test_an_unfinished_sentence_is_dropped() -> None:
    assert complete_sentences("The landlord may") == ""
    assert complete_sentences("A deposit is capped [1]. The landlord may") == "A deposit is capped [1]."
    assert complete_sentences("“A landlord shall not.” [1]") == "“A landlord shall not.” [1]"
    assert complete_sentences("It is so [1]\n\nNext the") == "It is so [1]"


def test_an_abstention_names_its_searches_and_a_narrower_question() -> None:
    assert searched_note(["speed limit", "speed limit", " lorries "]) == "Searches run: “speed limit”; “lorries”."
    assert searched_note([]) == ""


def chunk(title: str, number: str, heading: str, text: str) -> Chunk:
    return Chunk(chunk_id=f"{title}{number}", doc_key=title, section_id=f"{title}#s{number}", section_number=number,
                 section_heading=heading, title=title, text=text, ordinal=0)  # fmt: skip


def test_an_abstention_suggests_only_what_the_search_found_in_the_questions_own_words() -> None:
    notice = chunk("Employment Act", "6", "Notice of termination", "A contract may be terminated on giving notice.")
    data = chunk("Data Protection Act", "2", "Interpretation", "“data subject” means a person.")
    suggestion = suggestions("How much notice is needed?", [data, notice])
    assert suggestion == (
        "The nearest provisions I found are section 6 of the Employment Act (Notice of termination). You could ask, "
        "for example, “What does the Employment Act say about notice?”"
    )  # not "say about much", and not the Data Protection Act, which holds none of the question's words
    assert suggestions("What is the speed limit for lorries?", [data, notice]) == ""
