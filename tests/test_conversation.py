"""Follow-up questions answered from the conversation without a model: the rules of
``api/orchestrators/query/conversation.py`` on their own, and two-turn sessions through the real graph and app on
the sample corpus."""

from pathlib import Path

import httpx
import pytest

from api.main import create_app
from api.orchestrators.query.conversation import (
    Previous,
    defined_terms,
    elliptical,
    keeps_question,
    may_follow_up,
    names_a_law,
    resolve,
    subject_terms,
)
from api.settings import Settings
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json
from tests.sse import collect
from tests.test_agent import DEPOSIT as DEPOSIT_QUESTION
from tests.test_agent import VERBATIM, ask
from tests.test_stream import assert_contract

DEPOSIT = Previous(
    "How much deposit can a landlord require?",
    "“A landlord shall not require a deposit that exceeds the rent payable for two months.” [1]",
    ["Deposits"],
    defined_terms(['“ deposit ” means any money paid by a tenant; "landlord" means a person who lets a dwelling']),
)
DISMISSAL = Previous(
    "Can my employer dismiss me without a reason?",
    "“No employer shall dismiss an employee by reason of her pregnancy.” [1]",
    ["Maternity leave", "Unfair dismissal"],
    defined_terms(['"employee" means a person who works for another; "employer" means a person who employs']),
)


@pytest.mark.parametrize(
    ("question", "previous", "resolved"),
    [
        ("And can the landlord keep it when I leave?", DEPOSIT, "Can the landlord keep the deposit when I leave?"),
        ("How much notice is needed?", DISMISSAL, "How much notice is needed (employer, dismiss)?"),
        ("Is it the same for her?", DISMISSAL, "Is the employer the same for her (dismiss)?"),
        ("What about a deposit for a room?", DEPOSIT, "What about a deposit for a room (landlord)?"),
        ("And when must she be paid?", DISMISSAL, "When must she be paid (employer, dismiss)?"),
        # The subject is said already: nothing to add.
        ("Must the employer dismiss in writing?", DISMISSAL, "Must the employer dismiss in writing?"),
    ],
)
def test_a_follow_up_carries_the_previous_subject(question: str, previous: Previous, resolved: str) -> None:
    assert resolve(question, previous) == resolved


WILL = Previous(
    "At what age may a person make a will under the Wills Act?",
    "“Every person who is of or over the age of sixteen years may make a will.” [1] “A minor who is competent to "
    "make a will shall not require the assistance of any other person.” [2] “No will shall be valid unless…” [3]",
    ["Capacity to make a will"],
)
WAGES = Previous(
    "My boss still hasn't paid my last wages or my leave days. Am I owed that money?",
    "“An employee whose employment is terminated shall be paid his wages and the cash value of his leave.” [1]",
    ["Payment of wages and benefits on termination"],
)
THEFT = Previous(
    "Someone drove off with three of my goats at night. What crime is that?",
    "“Any person who takes stock knowing that another person is entitled to own it shall be guilty of stock "
    "theft.” [1]",
    ["Stock theft"],
)


@pytest.mark.parametrize(
    ("question", "previous", "resolved"),
    [
        # "it" is the thing the previous answer talked about, not the first subject word asked ("make").
        ("And what formalities must it comply with?", WILL, "What formalities must the will comply with?"),
        # A point of its own: the previous subject's words are not added (they would find the wages section again).
        ("And was he allowed to fire me without a hearing?", WAGES, "Was he allowed to fire me without a hearing?"),
        # "it" follows a thing the follow-up names itself: the car, not the goats.
        ("And if my neighbour took my car for the weekend and brought it back?", THEFT,
         "If my neighbour took my car for the weekend and brought it back?"),
        # One word of its own: the subject is carried.
        ("Is that an offence?", WAGES, "Is that an offence (wages)?"),
    ],
)  # fmt: skip
def test_how_much_is_carried_depends_on_what_the_follow_up_says_itself(
    question: str, previous: Previous, resolved: str
) -> None:
    assert resolve(question, previous) == resolved


def test_a_follow_up_that_says_little_is_tried_with_the_subject_first() -> None:
    assert elliptical("Is that an offence?", WAGES) and elliptical("And the penalty?", WAGES)
    assert not elliptical("And was he allowed to fire me without a hearing?", WAGES)


def test_the_subject_is_what_the_cited_provisions_are_about_else_what_was_quoted() -> None:
    assert subject_terms(DEPOSIT) == ["deposit", "landlord"]  # defined terms and the heading; not "require"
    quoted = Previous("Who may register the birth of a child?", "“The father or mother shall give notice of the birth”")
    assert subject_terms(quoted) == ["birth"]  # no headings or definitions: the question's words the answer quoted
    bare = Previous("Who decides disputes about boundaries?", "I could not find an answer.")
    assert subject_terms(bare) == ["decides", "disputes", "boundaries"]


@pytest.mark.parametrize(
    ("question", "follows"),
    [
        ("How much notice is needed?", True),  # short, names no law
        ("And for a fixed-term contract of employment with a probation period of six months?", True),
        ("Can she appeal against that decision to a higher court of law in the meantime?", True),
        ("What is the penalty for unlawful entry into premises under the Criminal Law Code?", False),
        ("Which formalities must a will comply with to be valid when made by a soldier?", False),
    ],
)
def test_what_may_lean_on_the_previous_turn(question: str, follows: bool) -> None:
    assert may_follow_up(question) is follows


def test_a_named_law_is_recognised_but_not_the_act_just_discussed() -> None:
    assert names_a_law("What does the Labour Act say about leave?")
    assert names_a_law("Is it in the Criminal Law (Codification and Reform) Act?")
    assert not names_a_law("Can I sue under the Act?")


def test_a_models_rewrite_must_keep_what_the_follow_up_asks() -> None:
    question = "And can the landlord keep it when I leave?"
    assert keeps_question("Can the landlord keep the deposit when the tenant leaves?", question)
    assert not keeps_question("How much deposit can a landlord require?", question)


async def ask_in_one_session(data_dir: Path, *questions: str) -> list[dict[str, object]]:
    finals = []
    with LiveServer(create_app(Settings(data_dir=data_dir))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            for question in questions:
                params = {"q": question, "session_id": "conversation"}
                finals.append(assert_contract(await collect(client, "GET", "/api/v1/query/stream", params=params)))
    return finals


async def test_follow_ups_are_answered_from_the_conversation_without_a_model(private_data_dir: Path) -> None:
    first, notice, shift, deposit, refund = await ask_in_one_session(
        private_data_dir,
        "Can my employer dismiss me without a reason?",
        "How much notice is needed?",
        "What is the minimum age of marriage?",  # a new subject: answered on its own, not within the Employment Act
        "How much deposit can a landlord require?",
        "And can the landlord keep it when I leave?",
    )
    assert not first["abstained"]
    cited = [c["section_id"] for c in notice["citations"]]  # type: ignore[attr-defined]
    assert not notice["abstained"] and cited[0] == "sample/act/2023/7#s6"  # Notice of termination
    assert not shift["abstained"] and shift["citations"][0]["section_id"] == "sample/act/2022/9#s3"  # type: ignore[index]
    quotes = [c["quote"] for c in refund["citations"]]  # type: ignore[attr-defined]
    assert not deposit["abstained"] and any(q.startswith("Within fourteen days after the lease ends") for q in quotes)
    assert all(c["doc_key"] == "sample/act/2024/3" for c in refund["citations"])  # type: ignore[attr-defined]


async def test_a_follow_up_nothing_answers_is_shown_the_closest_provisions_of_the_act_just_discussed(
    private_data_dir: Path,
) -> None:
    # Nothing in the sample corpus says whether an employer may withhold a last week's pay. Searched across the
    # corpus, the closest provision was the Marriage Act's on refusing a marriage for want of payment; the follow-up
    # was asked about employment, so the closest provisions shown are the Employment Standards Act's.
    _, unpaid = await ask_in_one_session(
        private_data_dir,
        "Can my employer dismiss me without a reason?",
        "And can he refuse to pay me for the last week?",
    )
    assert unpaid["abstained"] and unpaid["outcome"] == "related", unpaid
    assert unpaid["citations"] and all(
        c["doc_key"] == "sample/act/2023/7"
        for c in unpaid["citations"]  # type: ignore[attr-defined]
    )


async def test_with_a_model_its_rewrite_is_taken_only_when_it_keeps_what_the_follow_up_asks(
    private_data_dir: Path,
) -> None:
    refund = "“Within fourteen days after the lease ends, the landlord shall refund the deposit.” [1]"
    upstream = FakeOpenAI([Reply([VERBATIM]), Reply([refund]), Reply([refund])], {"rewrite": [
        answer_json({"question": "How much deposit can a landlord require?"}),  # asks the first question again
        answer_json({"question": "When must a landlord refund the deposit after the lease ends?"}),
    ]})  # fmt: skip
    _, dropped, kept = await ask(
        upstream, private_data_dir, DEPOSIT_QUESTION, "And can the landlord keep it when I leave?",
        "And when must he give it back after the lease ends?",
    )  # fmt: skip
    assert upstream.skills_called.count("rewrite") == 2
    searched = [assert_contract(events)["research"][0]["query"] for events in (dropped, kept)]  # type: ignore[index]
    assert searched == ["Can the landlord keep the deposit when I leave?",
                        "When must a landlord refund the deposit after the lease ends?"]  # fmt: skip
