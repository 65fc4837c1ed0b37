"""Issues 10 and 12 through the whole app: the question deadline and the stall watchdog, fragments never verified,
never worse than extractive, the route overruled by strong evidence, multiple choice, and answer re-evaluation.
The model is the scripted loopback OpenAI-protocol server; the app runs under uvicorn on the sample corpus."""

import time
from pathlib import Path
from typing import Any

import httpx

from api.main import create_app
from api.settings import LLMSettings, Settings
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json
from tests.sse import Event, collect
from tests.test_agent import DEPOSIT, QUOTE, codes
from tests.test_stream import assert_contract

OVERTIME = "How many hours of overtime can my boss make me work each week?"


async def ask(
    upstream: FakeOpenAI | None, data_dir: Path, *questions: str | dict[str, Any], deadline_s: float = 60.0, **llm: Any
) -> list[tuple[list[Event], float]]:
    """Each question (a string for GET, a dict for a POST body) in turn; its events and seconds taken."""
    runs = []

    async def run(base: str) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            for question in questions:
                start = time.monotonic()
                if isinstance(question, str):
                    params = {"q": question, "session_id": "wire-test"}
                    events = await collect(client, "GET", "/api/v1/query/stream", params=params)
                else:
                    body = {"session_id": "wire-test", **question}
                    events = await collect(client, "POST", "/api/v1/query/stream", json=body)
                runs.append((events, time.monotonic() - start))

    if upstream is None:
        with LiveServer(create_app(Settings(data_dir=data_dir, question_deadline_s=deadline_s))) as app:
            await run(app.url)
        return runs
    with LiveServer(upstream.app) as llm_server:
        cfg = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", **llm)
        with LiveServer(create_app(Settings(data_dir=data_dir, llm=cfg, question_deadline_s=deadline_s))) as app:
            await run(app.url)
    return runs


async def test_a_stalled_model_is_stopped_and_its_fragment_never_verified(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(["The landlord ", "may"], stall_after=1, stall_s=30.0)])
    ((events, took),) = await ask(upstream, private_data_dir, DEPOSIT, stall_timeout_s=1.0, timeout_s=60.0)
    final = assert_contract(events)
    assert took < 25 and "llm_stalled" in codes(events)  # the watchdog ended it, not the model 30 s later
    assert not final["answer"].startswith("The landlord may") and "The landlord may" not in final["answer"]
    assert final["verified"] and QUOTE in final["answer"]  # the verified extractive answer, never the fragment
    assert final["citations"][0]["section_id"] == "sample/act/2024/3#s3"
    assert upstream.streams_abandoned == 1  # the model's stream was closed: it stopped
    assert final["usage"]["llm_timeouts"] >= 1


async def test_a_slow_drip_model_ends_within_the_question_deadline(private_data_dir: Path) -> None:
    pieces = ["“A landlord shall not require a deposit that exceeds the rent payable for two months.” [1]\n\n"]
    pieces += [f"word{i} " for i in range(60)]  # 30 s of them
    upstream = FakeOpenAI([Reply(pieces, delay_s=0.5)])
    ((events, took),) = await ask(upstream, private_data_dir, DEPOSIT, deadline_s=12.0, stall_timeout_s=3.0)
    final = assert_contract(events)
    assert took < 12.0 + 2.0 and "deadline_reached" in codes(events)
    assert "word59" not in final["answer"] and final["verified"]
    assert QUOTE in final["answer"] and final["citations"]  # what was verified is kept


async def test_an_unsupported_model_answer_gives_way_to_the_verified_quotes(private_data_dir: Path) -> None:
    invented = "A landlord may require a deposit of up to 6 months' rent [1]."
    upstream = FakeOpenAI([Reply([invented]), Reply([invented])])
    ((events, _),) = await ask(upstream, private_data_dir, DEPOSIT)
    final = assert_contract(events)
    assert codes(events)[0] == "unsupported_statement" and "model_answer_unverified" in codes(events)
    assert final["research"][1]["kind"] == "corrective"
    assert "6 months" not in final["answer"] and QUOTE in final["answer"] and final["verified"]
    assert final["citations"] and not final["abstained"]  # never blank, never unverified
    assert upstream.skills_called.count("synthesize") == 2


async def test_the_corrective_step_searches_again_for_what_it_verifies(private_data_dir: Path) -> None:
    wrong = "“A landlord may increase the rent twice in any period of twelve months.” [1]"
    upstream = FakeOpenAI([Reply([wrong]), Reply(["A landlord shall give written notice [1]."])])
    ((events, _),) = await ask(upstream, private_data_dir, DEPOSIT)
    final = assert_contract(events)
    prompts = [r["messages"][1]["content"] for r, skill in zip(upstream.requests, upstream.skills_called, strict=True)
               if skill == "synthesize"]  # fmt: skip
    first, second = prompts
    # The first answer was given section 3 first; the corrective step searches again for what it verifies, from the
    # question and the cited provision, never from the rejected claim's words, and gives the model that evidence.
    assert "[1] Residential Tenancies Act, 2024, section 3" in first
    assert "Residential Tenancies Act, 2024, section 3" in second
    (corrective,) = [s for s in final["research"] if s["kind"] == "corrective"]
    assert corrective["query"].startswith(DEPOSIT.rstrip("?")) and "twice" not in corrective["query"]


async def test_strong_evidence_overrules_the_models_clarify(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([], {"route": [answer_json({"route": "clarify", "reason": "too vague"}),
                                         answer_json({"route": "out_of_scope", "reason": "cooking"})]})  # fmt: skip
    # Asked whatever the evidence (by default strong evidence settles the route without asking the model).
    (overtime, _), (cooking, _) = await ask(
        upstream, private_data_dir, OVERTIME, "Best sadza recipe?", route_timeout_s=3.0, skip_settled=False
    )
    final = assert_contract(overtime)
    assert overtime[0].json()["route"] == "rag_qa" and "route_overruled" in codes(overtime)
    assert final["citations"] and final["citations"][0]["section_id"] == "sample/act/2023/7#s3"
    assert cooking[0].json()["route"] == "out_of_scope"  # weak evidence: the model's route stands


async def test_multiple_choice_without_a_model_picks_by_evidence(private_data_dir: Path) -> None:
    choices = ["one month's rent", "two months' rent", "three months' rent", "six months' rent"]
    text = DEPOSIT + "\nAnswer choices:\nA. one month's rent\nB. two months' rent\nC. three months' rent"
    (listed, _), (inline, _), (plain, _) = await ask(
        None, private_data_dir, {"q": DEPOSIT, "choices": choices}, text, DEPOSIT
    )
    final = assert_contract(listed)
    choice = final["choice"]
    assert choice["letter"] == "B" and choice["method"] == "evidence" and 0 < choice["confidence"] <= 1
    assert [c["letter"] for c in choice["choices"]] == ["A", "B", "C", "D"]
    assert choice["choices"][1]["supported"] and not choice["choices"][0]["supported"]
    assert "Answer: B" in final["answer"] and final["citations"]
    assert final["research"][0]["query"] == DEPOSIT  # researched without the choices
    again = assert_contract(inline)
    assert again["choice"]["letter"] == "B" and len(again["choice"]["choices"]) == 3
    assert again["cached"]  # the research was remembered (under the question without its choices) and reused
    # QA memory keeps the research, never the letter: the same question without choices gets no "Answer: B".
    remembered = assert_contract(plain)
    assert remembered["cached"] and "Answer:" not in remembered["answer"] and remembered["choice"] is None


async def test_multiple_choice_with_a_model_gives_a_reason_per_choice(private_data_dir: Path) -> None:
    reasons = [
        {"letter": "A", "supported": False, "reason": "the Act says two months, not one", "citations": []},
        {"letter": "B", "supported": True, "reason": "section 3(1) caps it at two months' rent", "citations": [1]},
    ]
    upstream = FakeOpenAI(
        [Reply([f"“{QUOTE}.” [1]"])],
        {"choose": [answer_json({"letter": "B", "confidence": 0.9, "reasons": reasons})]},
    )
    ((events, _),) = await ask(upstream, private_data_dir, {"q": DEPOSIT, "choices": ["one month", "two months"]})
    final = assert_contract(events)
    assert final["choice"]["letter"] == "B" and final["choice"]["method"] == "model"
    assert final["choice"]["choices"][1]["citations"] == [1] and final["usage"]["calls_choose"] == 1
    assert upstream.skills_called[-1] == "choose"


async def test_an_uncovered_part_gets_one_refinement_then_is_said_plainly(private_data_dir: Path) -> None:
    question = "How much deposit can a landlord require, and what is the fee for a fishing licence?"
    ((events, _),) = await ask(None, private_data_dir, question)
    final = assert_contract(events)
    kinds = [s["kind"] for s in final["research"]]
    assert kinds.count("refinement") == 1 and kinds[-1] == "refinement"
    assert "fishing licence" in final["research"][-1]["query"]
    assert "I could not find in the documents an answer to" in final["answer"] and "fishing" in final["answer"]
    assert QUOTE in final["answer"] and "not_covered" in codes(events)


async def test_each_part_of_a_two_part_question_is_quoted_from_its_own_search(private_data_dir: Path) -> None:
    # Chosen from both parts' evidence at once, the quotes came from the first part's provisions only (the marriage
    # age) and the answer said the notice period was not found, although that part's own search had found it.
    question = "What is the minimum age of marriage, and how much notice must an employer give to end a contract?"
    ((events, _),) = await ask(None, private_data_dir, question)
    final = assert_contract(events)
    sections = [c["section_id"] for c in final["citations"]]
    age, notice = "sample/act/2022/9#s3", "sample/act/2023/7#s6"
    assert age in sections and notice in sections and sections.index(age) < sections.index(notice)
    assert [s["kind"] for s in final["research"]] == ["research", "research"] and "not_covered" not in codes(events)
    assert final["verified"] and not final["abstained"]


async def test_an_abstention_says_what_was_searched_and_suggests_nothing_the_documents_lack(
    private_data_dir: Path,
) -> None:
    ((events, _),) = await ask(None, private_data_dir, "What is the speed limit for lorries on highways?")
    final = assert_contract(events)
    assert final["abstained"] and not final["citations"]
    assert "Searches run: “What is the speed limit for lorries on highways?”" in final["answer"]
    # No provision found holds "speed", "limit", "lorries" or "highways": no Act is suggested for them.
    assert "say about" not in final["answer"] and final["answer"].count("I could not find") == 1
