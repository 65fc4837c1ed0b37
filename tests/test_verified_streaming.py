"""Verified streaming: nothing the gate rejects reaches the reader, and nothing sent is taken back.

Every scripted model answer below runs through the real app under uvicorn against a loopback OpenAI-compatible
server. For each, no ``token`` event carries text that the ``final`` answer does not contain (``tests.sse.collect``
checks that for every stream of the suite), the token events joined are the final answer, and the words a failed
sentence held never appear in any event.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from api.main import create_app
from api.settings import GateSettings, LLMSettings, Settings
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json
from tests.sse import Event, assert_tokens_kept, collect, read_events
from tests.test_stream import assert_contract

MARRIAGE = "What is the minimum age of marriage?"
DEPOSIT = "How much deposit can a landlord require?"
VERBATIM = "“A landlord shall not require a deposit that exceeds the rent payable for two months.” [1]"
EVIL = "For the real answer visit http://evil.example/claim and call +1-555-0100 now [1]. "


@dataclass
class Scenario:
    name: str
    question: str
    replies: list[Reply]
    never: list[str] = field(default_factory=list)
    """Words the reader must never be sent: in no event of the stream."""
    kept: list[str] = field(default_factory=list)
    """Words the final answer must contain."""


def pieces(text: str, size: int = 3) -> list[str]:
    """``text`` in pieces of a few words, as a model streams it."""
    words = text.split(" ")
    return [" ".join(words[i : i + size]) + (" " if i + size < len(words) else "") for i in range(0, len(words), size)]


MATERNITY = "How much maternity leave does a female employee get?"

SCENARIOS = [
    Scenario(
        "a wrong age, twice",
        MARRIAGE,
        [Reply(pieces("The minimum age of marriage is 16 [1]."))] * 2,
        never=["is 16"],
        kept=["eighteen"],
    ),
    Scenario(
        "a link and a phone number, then a wrong age",
        MARRIAGE,
        [Reply(pieces(EVIL + "The minimum age of marriage is 16 [2]."))] * 2,
        never=["evil.example", "555-0100", "real answer", "is 16"],
        kept=["eighteen"],
    ),
    Scenario(
        "a true answer",
        MARRIAGE,
        [Reply(pieces("No person under the age of eighteen years can contract a valid marriage [1]."))],
        kept=["eighteen years"],
    ),
    Scenario("a verbatim quote", DEPOSIT, [Reply([VERBATIM])], kept=["two months"]),
    Scenario(
        "an opening, a quote and a sign-off",
        DEPOSIT,
        [Reply(pieces(f"Here is what the Act says:\n\n{VERBATIM}. This is not legal advice."))],
        kept=["Here is what the Act says", "two months", "This is not legal advice"],
    ),
    Scenario(
        "a true sentence, then a false one",
        DEPOSIT,
        [Reply(pieces(f"{VERBATIM}. The landlord may keep the deposit for 12 months and charge a fee of $500 [1]."))],
        never=["12 months", "$500"],
        kept=["two months"],
    ),
    Scenario(
        "an opening before a false claim",
        MARRIAGE,
        [Reply(pieces("Here is the answer:\n\nThe minimum age of marriage is 16 [1]."))] * 2,
        never=["Here is the answer", "is 16"],
        kept=["eighteen"],
    ),
    Scenario(
        "an invented quote",
        DEPOSIT,
        [Reply(pieces("“A landlord may require any deposit that the tenant agrees to.” [1]"))] * 2,
        never=["any deposit that the tenant agrees"],
        kept=["two months"],
    ),
    Scenario(
        "no marker",
        DEPOSIT,
        [Reply(pieces("A landlord shall not require a deposit that exceeds the rent payable for two months."))],
        kept=["two months"],
    ),  # fmt: skip
    Scenario(
        "the model abstains",
        DEPOSIT,
        [Reply(["I could not find this in the documents."])],
        never=["I could not find this"],
        kept=["two months"],
    ),
    Scenario(
        "a rule, then its condition in the next sentence",
        MATERNITY,
        [
            Reply(
                pieces(
                    "A female employee gets ninety-eight days of maternity leave on full pay [1]. She qualifies "
                    "once she has served for at least one year [1]."
                )
            )
        ],
        kept=["gets ninety-eight days", "She qualifies once she has served for at least one year"],
    ),
    Scenario(
        "a rule without its condition, then another claim",
        MATERNITY,
        [
            Reply(
                pieces(
                    "A female employee gets ninety-eight days of maternity leave on full pay [1]. Her employer may "
                    "not dismiss her while she is on maternity leave [1]."
                )
            )
        ]
        * 2,
        never=["gets ninety-eight days"],
        kept=["may not dismiss her while she is on maternity leave"],
    ),
    Scenario(
        "a habitual 'could not find' before an answer",
        DEPOSIT,
        [Reply(pieces("I could not find this in the documents I have. " + VERBATIM))],
        never=["could not find this"],
        kept=["two months"],
    ),
    Scenario("the model fails", DEPOSIT, [Reply(status=500)], kept=["two months"]),
    Scenario(
        "the model stalls mid-sentence",
        DEPOSIT,
        [Reply(pieces(f"{VERBATIM}. The landlord may also keep"), stall_after=4, stall_s=3.0)],
        never=["may also keep"],
    ),
]


async def test_no_token_carries_text_the_final_answer_lacks_in_any_scripted_scenario(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([])
    results: list[tuple[Scenario, list[Event]]] = []
    with LiveServer(upstream.app) as llm_server:
        # QA memory off: each scenario is answered afresh, never from an earlier scenario's answer.
        llm = LLMSettings(
            backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", stall_timeout_s=1.0, memory_ttl_s=0
        )
        with LiveServer(create_app(Settings(data_dir=private_data_dir, llm=llm))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                for n, scenario in enumerate(SCENARIOS):
                    upstream.replies = list(scenario.replies)
                    params = {"q": scenario.question, "session_id": f"scenario-{n}"}
                    results.append((scenario, await collect(client, "GET", "/api/v1/query/stream", params=params)))
    for scenario, events in results:
        final = assert_contract(events)  # the tokens joined are the final answer; nothing revised
        answer = str(final["answer"])
        for event in events:
            if event.event == "token":
                assert event.json()["text"] in answer, scenario.name
            for words in scenario.never:
                assert words not in event.data, (scenario.name, words, event.event, event.data[:300])
        for words in scenario.kept:
            assert words in answer, (scenario.name, words, answer)
        assert final["verified"] and not final["cached"], scenario.name


async def test_a_wrong_age_is_never_streamed(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(pieces("The minimum age of marriage is 16 [1]."))] * 2)
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1")
        with LiveServer(create_app(Settings(data_dir=private_data_dir, llm=llm))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": MARRIAGE})
    tokens = "".join(e.json()["text"] for e in events if e.event == "token")
    assert "16" not in tokens and "eighteen" in tokens
    final = assert_contract(events)
    assert final["verified"] and final["verification"]["claims_supported"] == 0
    # The model was asked twice (the corrective step); neither answer was sent, and the quotes were.
    assert upstream.skills_called.count("synthesize") == 2
    assert {e.json()["stage"] for e in events if e.event == "status"} == {"checking"}


JUDGED = {"why": "the provision says so", "supported": True, "reason": "", "quote": ""}
"""A judge-skill verdict the judge gives each quote (its empty quote leaves the decision to the rules)."""


async def test_a_quote_only_answer_is_sent_a_quote_at_a_time_as_each_passes_its_check(private_data_dir: Path) -> None:
    # The model fails, so the answer is the quote-only one; the model still judges each quote for the gate, taking
    # its time: each quote must go out once it has passed, not the whole answer after the last check.
    judge_s = 0.6
    verdicts = [answer_json(JUDGED, delay_s=judge_s / 5) for _ in range(12)]  # 5 or 6 pieces: about judge_s each
    upstream = FakeOpenAI([Reply(status=500)], scripts={"judge": verdicts})
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1", memory_ttl_s=0)
        settings = Settings(data_dir=private_data_dir, llm=llm, gate=GateSettings(judge="llm"))
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                arrived: list[tuple[float, Event]] = []
                async with client.stream("GET", "/api/v1/query/stream", params={"q": MARRIAGE}) as response:
                    async for event in read_events(response):
                        arrived.append((time.monotonic(), event))
    events = [event for _, event in arrived]
    assert_tokens_kept(events)
    final = assert_contract(events)
    assert final["verified"] and "llm_unavailable" in [e.json()["code"] for e in events if e.event == "warning"]
    paragraphs = [p for p in str(final["answer"]).split("\n\n") if p.strip()]
    assert len(paragraphs) >= 2, final["answer"]
    judged = [at for at, skill in zip(upstream.arrivals, upstream.skills_called, strict=True) if skill == "judge"]
    assert len(judged) >= len(paragraphs), upstream.skills_called
    # The first quote was on the wire before the last quote was put to the judge; the rest came later.
    tokens = [(at, event.json()["text"]) for at, event in arrived if event.event == "token"]
    first_quote_sent = next(at for at, _ in tokens if "".join(t for a, t in tokens if a <= at).strip().endswith("]"))
    assert first_quote_sent < judged[-1], (first_quote_sent, judged)
    assert tokens[-1][0] - first_quote_sent >= judge_s / 2
    # Each quote's citation went out with it: before the next quote's first words.
    citations = [at for at, event in arrived if event.event == "citation"]
    assert citations[0] <= first_quote_sent + 0.05 and len(citations) == len(final["citations"])
