"""Every node of a query is traced to LangSmith: a loopback server speaking its ingestion API receives the runs."""

import json
from pathlib import Path

import httpx
from langchain_core.tracers.langchain import wait_for_all_tracers

from api.main import create_app
from api.settings import LLMSettings, Settings, TracingSettings
from tests.servers import FakeLangSmith, FakeOpenAI, LiveServer, Reply
from tests.sse import collect

VERBATIM = "“A landlord shall not require a deposit that exceeds the rent payable for two months.” [1]"


async def test_a_query_sends_a_run_for_every_node_and_model_call(private_data_dir: Path) -> None:
    tracing, upstream = FakeLangSmith(), FakeOpenAI([Reply([VERBATIM])])
    with LiveServer(tracing.app) as ls_server, LiveServer(upstream.app) as llm_server:
        settings = Settings(
            data_dir=private_data_dir,
            tracing=TracingSettings(backend="langsmith", endpoint=ls_server.url, api_key="ls-test", project="tests"),
            llm=LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1"),
        )
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                params = {"q": "How much deposit can a landlord ask for?"}
                events = await collect(client, "GET", "/api/v1/query/stream", params=params)
            wait_for_all_tracers()
    trace_id = events[0].json()["trace_id"]
    assert events[-1].event == "final"
    nodes = {"query", "guard", "contextualize", "classify_intent", "recall", "plan", "research", "synthesize",
             "verify", "remember"}  # fmt: skip
    assert nodes <= tracing.run_names, tracing.run_names
    assert "ChatStream" in tracing.run_names  # the streamed answer's model run, nested under its node
    assert tracing.api_keys == {"ls-test"}
    everything = b"\n".join(tracing.parts).decode()
    assert trace_id in everything  # runs carry the request's trace id, as the stream's meta does
    outputs = [json.loads(p) for p in tracing.parts if b'"llm"' in p and b'"steps"' in p]
    assert outputs and any(o.get("llm") for o in outputs)  # the per-call usage records reach the trace
    # The streamed answer's run carries what the model wrote, its usage and the node it answered in.
    results = [json.loads(p) for p in tracing.parts if p.startswith(b'{"generations"')]
    written = [r["generations"][0][0]["message"]["kwargs"] for r in results]
    assert any("deposit" in w["content"] and w["usage_metadata"]["output_tokens"] == 30 for w in written), written
    assert '"langgraph_node":"synthesize"' in everything and '"ls_model_name":"m-1"' in everything
