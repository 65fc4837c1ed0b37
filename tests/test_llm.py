"""The LLM path against a loopback server that speaks OpenAI's streaming chat-completions protocol."""

import asyncio
from pathlib import Path

import httpx

from api.main import create_app
from api.settings import LLMSettings, Settings, StreamSettings
from tests.servers import FakeOpenAI, LiveServer, Reply
from tests.sse import collect
from tests.test_stream import assert_contract

QUESTION = "How much deposit can a landlord require?"


def llm_settings(data_dir: Path, url: str, timeout_s: float = 10.0) -> Settings:
    return Settings(
        data_dir=data_dir,
        llm=LLMSettings(backend="openai", base_url=f"{url}/v1", api_key="sk-test", model="m-1", timeout_s=timeout_s),
    )


async def test_llm_tokens_stream_through_with_citations_and_usage(private_data_dir: Path) -> None:
    pieces = ["A landlord ", "may not ask ", "for more than ", "two months' rent ", "as a deposit [1", "]."]
    upstream = FakeOpenAI([Reply(pieces)])
    with LiveServer(upstream.app) as llm_server:
        with LiveServer(create_app(llm_settings(private_data_dir, llm_server.url))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": QUESTION})
    # Verified streaming: the sentence is held (a "checking" status says so) until it is complete and has passed
    # the gate, then sent whole, its citation right after it.
    tokens = [e.json()["text"] for e in events if e.event == "token"]
    assert tokens[0] == "".join(pieces)
    names = [e.event for e in events]
    assert names.index("status") < names.index("token")
    assert [e.json() for e in events if e.event == "status"] == [{"stage": "checking"}]
    marked = next(i for i, e in enumerate(events) if e.event == "token" and "[1]" in "".join(
        t.json()["text"] for t in events[: i + 1] if t.event == "token"))  # fmt: skip
    assert names[marked + 1] == "citation"
    final = assert_contract(events)
    # After the model's sentence, the definitions of the terms its cited words use ("landlord", "deposit"), each its
    # own paragraph and citation, sent once checked.
    assert final["answer"].startswith("".join(pieces)) and "".join(tokens) == final["answer"]
    assert [(c["index"], c["kind"]) for c in final["citations"]] == [(1, "provision"), (2, "definition"),
                                                                     (3, "definition")]  # fmt: skip
    assert final["citations"][0]["section_id"] == "sample/act/2024/3#s3"
    # The question's own search settles its evidence: no expansion and no grade are asked for, only the answer.
    assert upstream.skills_called == ["synthesize"]
    usage = final["usage"]
    assert usage["llm_calls"] == 1 and usage["llm_failures"] == 0 and usage["calls_synthesize"] == 1
    assert final["timings"]["llm_synthesize"] > 0 and "llm_expand" not in final["timings"]
    assert usage["input_tokens"] == 120 and usage["output_tokens"] == 30
    assert events[0].json()["budgets"]["llm_calls_simple"] == 4
    # The request is a real chat-completions call: our skill's system prompt, the numbered sources, streaming.
    request = upstream.requests[-1]
    assert request["model"] == "m-1" and request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    system, user = request["messages"]
    assert system["role"] == "system" and "Every sentence of your answer ends with the marker" in system["content"]
    assert "[1] Residential Tenancies Act, 2024, section 3 (Deposits)" in user["content"]
    assert user["content"].rstrip().endswith(f"Question: {QUESTION}")


async def test_an_llm_failure_degrades_to_a_quoted_answer_with_a_warning(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(status=500), Reply(status=500)])
    with LiveServer(upstream.app) as llm_server:
        with LiveServer(create_app(llm_settings(private_data_dir, llm_server.url))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": QUESTION})
    warnings = [e.json() for e in events if e.event == "warning"]
    assert [w["code"] for w in warnings] == ["llm_unavailable"]
    final = assert_contract(events)
    assert final["citations"] and final["citations"][0]["section_id"] == "sample/act/2024/3#s3"
    assert "two months" in final["answer"] and not final["abstained"]


async def test_an_llm_timeout_degrades_instead_of_hanging(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(["slow"], delay_s=5.0), Reply(["slow"], delay_s=5.0)])
    with LiveServer(upstream.app) as llm_server:
        settings = llm_settings(private_data_dir, llm_server.url, timeout_s=0.5)
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": QUESTION})
    assert "llm_unavailable" in [e.json()["code"] for e in events if e.event == "warning"]
    final = assert_contract(events)
    assert final["answer"].strip() and final["citations"]


async def test_an_uncited_llm_answer_is_flagged(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(["Deposits are capped at two months' rent."])])
    with LiveServer(upstream.app) as llm_server:
        with LiveServer(create_app(llm_settings(private_data_dir, llm_server.url))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": QUESTION})
    # The model forgot its marker: flagged, and the gate locates the provision that supports the sentence and
    # attaches the citation itself before the sentence is sent.
    assert [e.json()["code"] for e in events if e.event == "warning"] == ["uncited_answer"]
    final = assert_contract(events)
    provisions = [c["section_id"] for c in final["citations"] if c["kind"] == "provision"]
    assert provisions == ["sample/act/2024/3#s3"] and final["verified"]
    assert final["answer"].startswith("Deposits are capped at two months' rent [1]")


async def test_keepalive_pings_flow_while_the_model_is_slow(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply(["Two months' rent [1]", "."], delay_s=1.0)])
    with LiveServer(upstream.app) as llm_server:
        settings = llm_settings(private_data_dir, llm_server.url).model_copy(update={"sse_ping_s": 0.3})
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                async with client.stream("GET", "/api/v1/query/stream", params={"q": QUESTION}) as response:
                    lines = [line async for line in response.aiter_lines()]
    assert sum(line.startswith(": ping") for line in lines) >= 3
    assert "event: final" in lines


async def test_a_client_that_leaves_stops_the_upstream_call(private_data_dir: Path) -> None:
    upstream = FakeOpenAI([Reply([f"word{i} " for i in range(40)], delay_s=0.25)])
    with LiveServer(upstream.app) as llm_server:
        # The answer goes on for resume_grace_s after a drop, awaiting a reconnect (tests/test_resume.py).
        settings = llm_settings(private_data_dir, llm_server.url)
        settings = settings.model_copy(update={"streams": StreamSettings(resume_grace_s=0.2)})
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                async with client.stream("GET", "/api/v1/query/stream", params={"q": QUESTION}) as response:
                    async for line in response.aiter_lines():
                        if line == "event: status":
                            break  # the reader hangs up while the answer is being written
            for _ in range(40):
                if upstream.streams_abandoned:
                    break
                await asyncio.sleep(0.1)
    # 40 pieces at 0.25 s would take 10 s; the upstream stream was abandoned long before that.
    assert upstream.streams_abandoned == 1


async def test_a_quote_the_sources_do_not_contain_is_flagged_unverified(private_data_dir: Path) -> None:
    invented = "“A landlord may require any deposit that the tenant agrees to pay in advance.” [1]"
    verbatim = "“A landlord shall not require a deposit that exceeds the rent payable for two months.” [1]"
    upstream = FakeOpenAI([Reply([invented]), Reply([invented]), Reply([verbatim])])
    with LiveServer(upstream.app) as llm_server:
        with LiveServer(create_app(llm_settings(private_data_dir, llm_server.url))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                bad = await collect(client, "GET", "/api/v1/query/stream", params={"q": QUESTION})
                good = await collect(
                    client, "GET", "/api/v1/query/stream", params={"q": "What deposit may be required?"}
                )
    # The invented quote fails verification and is never sent; the corrective step answers again and it fails again:
    # the verified extractive answer is sent instead, with a warning.
    codes = [e.json()["code"] for e in bad if e.event == "warning"]
    assert codes == ["unverified_quote", "model_answer_unverified"]
    final = assert_contract(bad)
    assert final["verified"] is True and final["verification"]["quotes_failed"] == 1
    assert "any deposit that the tenant agrees" not in final["answer"] and "two months" in final["answer"]
    assert not [e for e in bad if e.event == "token" and "any deposit that" in e.data]
    assert not [e for e in good if e.event == "warning"]
    assert good[-1].json()["verified"] is True and good[-1].json()["verification"]["quotes_checked"] == 1
