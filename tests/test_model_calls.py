"""Which model calls a question makes before its answer: the router's, expansion's and grade's are skipped when the
question's own search settles what they would decide, and expansion and grade run at once when they are needed.
Pure decisions first, then the real evidence judge on the sample corpus, then the app under uvicorn with a scripted
loopback model."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.composer.structured import LLMCall, TimeoutPause
from api.main import create_app
from api.orchestrators.query.evidence import settled, strong_evidence
from api.orchestrators.query.orchestrator import llm_timings
from api.orchestrators.query.routing import research_calls, route_call
from api.orchestrators.query.screening import is_unsure
from api.orchestrators.query.state import QueryState
from api.services import Services, open_services
from api.settings import LLMSettings, RetrievalSettings, Settings
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json
from tests.sse import collect
from tests.test_agent import VERBATIM, ask, codes
from tests.test_stream import assert_contract

SETTLED = "How much deposit can a landlord ask for?"
UNSETTLED = "Can I cancel a contract I signed after a sales call?"
UNSURE_BUT_STRONG = "How is overtime paid?"  # no legal word: the rules alone would ask the router


def state(**values: Any) -> QueryState:
    return QueryState(question=SETTLED, **values)


@pytest.mark.parametrize(
    ("values", "calls_left", "is_settled", "expected"),
    [
        ({}, 4, False, "expand_and_grade"),
        ({}, 4, True, "none"),  # the grade could not change the verdict: neither call is made
        ({}, 0, False, "none"),  # no model
        ({}, 1, False, "none"),  # only the answer's call is left
        ({}, 2, False, "grade"),  # room for one more: the grade, which can change the verdict
        ({"rewrites": 1}, 4, False, "grade"),  # a retry is graded without expansions
        ({"step_kind": "corrective"}, 4, False, "none"),  # its one call is the new answer
        ({"step_kind": "refinement"}, 4, False, "none"),
    ],
)
def test_research_calls(values: dict[str, Any], calls_left: int, is_settled: bool, expected: str) -> None:
    assert research_calls(state(**values), calls_left, is_settled) == expected


def test_the_router_is_asked_only_when_the_rules_are_unsure_and_the_evidence_is_not_strong() -> None:
    assert route_call(has_model=True, unsure=True, strong=False) == "model"
    assert route_call(has_model=True, unsure=True, strong=True) == "rules"
    assert route_call(has_model=True, unsure=False, strong=False) == "rules"
    assert route_call(has_model=False, unsure=True, strong=False) == "rules"


def test_model_time_is_reported_per_skill() -> None:
    def call(skill: str, ms: float) -> LLMCall:
        return LLMCall(skill=skill, ms=ms, input_tokens=1, output_tokens=1, attempts=1, outcome="ok")

    calls = [call("grade", 600.0), call("synthesize", 4300.5), call("synthesize", 4000.25)]
    assert llm_timings(state(llm=calls)) == {"llm_grade": 600.0, "llm_synthesize": 8300.75}
    assert llm_timings(state()) == {}


@pytest.fixture
async def services(private_data_dir: Path) -> AsyncIterator[Services]:
    async with open_services(Settings(data_dir=private_data_dir)) as opened:
        yield opened


SAMPLE = [
    SETTLED, UNSETTLED, UNSURE_BUT_STRONG, "Do shops have to show prices?", "How long is maternity leave?",
    "How fast must a data breach be reported?", "How long do I have to report an unfair dismissal?",
    "What is the penalty for processing personal information unlawfully?",
]  # fmt: skip


async def test_settled_evidence_is_answerable_whatever_the_grade(services: Services) -> None:
    deps = services.orchestrator.deps
    assert deps.judge is not None
    verdicts = {}
    for question in SAMPLE:
        found = await deps.retriever.retrieve(question)
        verdicts[question] = settled(deps.judge, question, found)
        if verdicts[question]:  # the grade only raises the verdict: no grade can make it abstain
            assert all(deps.judge(question, found, grade).answerable for grade in (None, 0.0, 0.25, 0.5, 1.0))
        if is_unsure(question) and verdicts[question]:
            assert strong_evidence(found, deps.judge, question).answerable  # the router would be overruled
    assert verdicts[SETTLED] and verdicts[UNSURE_BUT_STRONG] and not verdicts[UNSETTLED]
    assert not settled(None, SETTLED, await deps.retriever.retrieve(SETTLED))  # no judge: nothing is settled


async def test_a_settled_question_goes_straight_to_the_answer(private_data_dir: Path) -> None:
    # Scripted replies that would be used if the calls were made: a router saying clarify, a grade keeping nothing.
    upstream = FakeOpenAI([Reply([VERBATIM]), Reply([VERBATIM])], {
        "route": [answer_json({"route": "clarify", "reason": "vague"})],
        "grade": [answer_json({"relevant": [], "sufficient": False, "rewrite": "something else"})],
    })  # fmt: skip
    settled_run, unsure_run = await ask(upstream, private_data_dir, SETTLED, UNSURE_BUT_STRONG, route_timeout_s=3.0)
    final = assert_contract(settled_run)
    assert set(upstream.skills_called) == {"synthesize"}  # no router, expansion or grade for either question
    assert final["verified"] and not final["abstained"] and final["citations"]
    assert final["usage"]["llm_calls"] == 1 and set(final["timings"]) >= {"llm_synthesize", "research_1"}
    assert not {"llm_expand", "llm_grade", "llm_route"} & set(final["timings"])
    meta = unsure_run[0].json()
    assert meta["route"] == "rag_qa" and "route_overruled" not in codes(unsure_run)
    assert assert_contract(unsure_run)["research"][0]["query"] == UNSURE_BUT_STRONG


async def test_an_unsettled_question_is_expanded_and_graded_at_once(private_data_dir: Path) -> None:
    # Each structured reply takes about a second to arrive: one after the other, the grade would be asked a second
    # after the expansion.
    expand = answer_json({"queries": ["cooling-off period for a direct sale"], "passages": []})
    grade = answer_json({"relevant": [1, 2], "sufficient": True, "rewrite": ""})
    expand.delay_s, grade.delay_s = 1.0 / len(expand.pieces), 1.0 / len(grade.pieces)
    upstream = FakeOpenAI([Reply(["I could not find this in the documents I have."])],
                          {"expand": [expand], "grade": [grade]})  # fmt: skip
    (events,) = await ask(upstream, private_data_dir, UNSETTLED, expand_timeout_s=5.0)
    final = assert_contract(events)
    assert upstream.calls[:2] == ["expand", "grade"]
    arrived = dict(zip(upstream.skills_called, upstream.arrivals, strict=True))
    assert abs(arrived["grade"] - arrived["expand"]) < 0.5  # both asked at once, not one after the other's reply
    (step,) = final["research"]
    assert step["expansions"] == 1 and step["sufficient"] and len(step["added"]) == 2  # the grade kept its two
    assert final["usage"]["calls_expand"] == final["usage"]["calls_grade"] == 1
    assert final["timings"]["llm_expand"] >= 900 and final["timings"]["llm_grade"] >= 900
    assert final["timings"]["research_1"] < final["timings"]["llm_expand"] + final["timings"]["llm_grade"]
    assert final["verified"]  # whatever the model says, the answer shown is verified (here: the quotes)


def paced_model() -> Any:
    """The load benchmark's paced model (``benchmarks/paced_llm.py``), loaded from its file."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "paced_llm.py"
    spec = importlib.util.spec_from_file_location("paced_llm", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("at_most", "fewest", "most"), [(False, 150, 250), (True, 120, 200)])
async def test_the_load_benchmarks_paced_model_answers_from_its_sources(
    private_data_dir: Path, at_most: bool, fewest: int, most: int
) -> None:
    # The load runs measure verified answers: the paced model quotes its prompt's sources with their markers, so the
    # gate passes its answer as written (its old canned text failed every time and took the corrective path).
    paced = paced_model().PacedOpenAI(ttft_s=0.0, tokens_per_s=5000.0, answer_tokens=200, at_most=at_most)
    with LiveServer(paced.app) as llm_server:
        cfg = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="paced")
        # The model's own answer is measured: no definitions are added below it.
        settings = Settings(data_dir=private_data_dir, llm=cfg, retrieval=RetrievalSettings(add_definitions=0))
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                params = {"q": SETTLED, "session_id": "paced"}
                events = await collect(client, "GET", "/api/v1/query/stream", params=params)
    final = assert_contract(events)
    assert paced.calls == {"synthesize": 1} and codes(events) == []
    assert final["verified"] and not final["abstained"] and final["usage"]["calls_synthesize"] == 1
    assert len(final["answer"].split()) >= 100 and len({c["section_id"] for c in final["citations"]}) >= 2
    # About the 200 tokens asked for (at most that many), of about 4 characters.
    assert fewest <= final["usage"]["output_tokens"] <= most
    assert fewest * 4 <= len(final["answer"]) <= most * 4 + 40  # (+ the gate's spacing of markers)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_skill_that_keeps_running_out_of_time_is_paused_then_tried_again() -> None:
    clock = Clock()
    pauses = TimeoutPause(after=3, pause_s=60.0, clock=clock)
    for outcome in ("timeout", "timeout", "ok", "timeout", "timeout"):  # an answer in time starts the count again
        assert not pauses.paused("route")
        pauses.record("route", outcome)
    assert not pauses.paused("route") and not pauses.paused("expand")
    pauses.record("route", "timeout")
    assert pauses.paused("route") and not pauses.paused("expand")  # per skill
    clock.now += 59.0
    assert pauses.paused("route")
    clock.now += 1.0
    assert not pauses.paused("route")  # the pause is over: one call tries again...
    assert pauses.paused("route")  # ...while the others still wait for its outcome
    pauses.record("route", "timeout")
    clock.now += 30.0
    assert pauses.paused("route")  # it ran out of time again: another pause
    clock.now += 30.0
    assert not pauses.paused("route")
    pauses.record("route", "unparsable")  # it answered within its limit: asked again from now on
    assert not pauses.paused("route") and not pauses.paused("route")
    never = TimeoutPause(after=0, pause_s=60.0, clock=clock)
    for _ in range(10):
        never.record("route", "timeout")
    assert not never.paused("route")


VAGUE = ["What about the thing from before?", "And what about that other one?", "What about the next bit?",
         "And the one after that?", "What about the last one?", "What about the other part?"]  # fmt: skip


async def test_the_router_is_not_asked_while_it_keeps_running_out_of_time(private_data_dir: Path) -> None:
    # A router slower than its limit: three calls run out of time, then the questions go on without it, at once;
    # after the pause, one call tries again and, answered in time, the router is asked as before.
    slow = [answer_json({"route": "rag_qa", "reason": "law"}, delay_s=0.3) for _ in range(3)]
    fast = [answer_json({"route": "clarify", "reason": "no subject"}) for _ in range(2)]
    upstream = FakeOpenAI([Reply(["I could not find this in the documents I have."])] * 6, {"route": slow + fast})
    assert all(is_unsure(q) for q in VAGUE)
    cfg = dict(route_timeout_s=0.2, pause_after_timeouts=3, pause_s=2.0)
    routed, timings = [], []
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", **cfg)
        with LiveServer(create_app(Settings(data_dir=private_data_dir, llm=llm))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                for n, question in enumerate(VAGUE):
                    if n == 4:
                        await asyncio.sleep(2.1)  # the pause is over
                    before = upstream.skills_called.count("route")
                    params = {"q": question, "session_id": f"pause-{n}"}
                    events = await collect(client, "GET", "/api/v1/query/stream", params=params)
                    routed.append(upstream.skills_called.count("route") - before)
                    final = assert_contract(events)
                    timings.append(final["timings"])
                    assert "llm_route" not in final["timings"] or final["usage"]["calls_route"] == 1
    assert routed == [1, 1, 1, 0, 1, 1]
    assert all(t["route"] >= 190 for t in timings[:3]) and timings[3]["route"] < 190  # no wait when not asked
    assert "llm_route" not in timings[3]
