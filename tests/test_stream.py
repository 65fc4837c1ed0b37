"""The SSE contract, end to end: our app under a real uvicorn on loopback, read as a browser would."""

import re
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from api.services import open_services
from api.settings import RetrievalSettings, Settings
from tests.conftest import SAMPLE_CORPUS
from tests.servers import LiveServer
from tests.sse import Event, collect

SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s*$|\n\s*$")
SOURCES = {
    p.read_text().splitlines()[0].split("id: ")[1].split(";")[0]: p.read_text() for p in SAMPLE_CORPUS.glob("*.md")
}


def assert_contract(events: list[Event]) -> dict[str, object]:
    names = [e.event for e in events]
    assert names[0] == "meta" and names[-1] == "final"
    assert set(names[1:-1]) <= {"token", "citation", "status", "warning"}
    final = events[-1].json()
    # Verified streaming: nothing is sent that the answer does not keep, so nothing is ever revised. Joined, the
    # token events are the final answer; the citation events are its citations.
    assert not [e for e in events if e.event == "warning" and e.json()["code"] == "answer_revised"]
    assert final["answer"] == "".join(e.json()["text"] for e in events if e.event == "token")
    streamed = [e.json()["citation"] for e in events if e.event == "citation"]
    assert streamed == final["citations"]
    for citation in final["citations"]:
        # Every quote is the document's own words, and the answer points at it with its marker.
        assert citation["quote"] in SOURCES[citation["doc_key"]]
        assert f"[{citation['index']}]" in final["answer"]
    return final  # type: ignore[no-any-return]


def assert_coalesced(events: list[Event]) -> None:
    """Token events carry a sentence or so each, not every few words: after the first (sent alone, at once), each
    ends at a sentence's end or right after a completed [n] marker (its citation follows), or is the last."""
    tokens = [e.json()["text"] for e in events if e.event == "token"]
    assert len(tokens) >= 2 and len(tokens) <= 1 + len("".join(tokens).split()) // 6
    for text in tokens[1:-1]:
        assert SENTENCE_END.search(text) or "]" in text, text


@pytest.mark.parametrize(
    ("question", "section_id"),
    [
        ("What is the minimum notice a landlord must give to end a lease?", "sample/act/2024/3#s5"),
        ("How long is maternity leave?", "sample/act/2023/7#s5"),
    ],
)
async def test_get_stream_sends_meta_tokens_citations_and_final(
    live_app: LiveServer, question: str, section_id: str
) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        events = await collect(client, "GET", "/api/v1/query/stream", params={"q": question, "session_id": "t1"})
    meta = events[0].json()
    assert meta["route"] == "rag_qa" and meta["session_id"] == "t1" and len(meta["trace_id"]) == 32
    assert meta["corpus_version"] not in ("", "empty") and meta["budgets"]["llm_calls_simple"] == 0
    assert_coalesced(events)
    final = assert_contract(events)
    assert not final["abstained"] and final["citations"][0]["section_id"] == section_id
    assert {"research_1", "synthesize", "total"} <= set(final["timings"])


async def test_post_stream_with_json_body(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        events = await collect(
            client,
            "POST",
            "/api/v1/query/stream",
            json={"q": "Can a landlord cut off the water to make a tenant leave?"},
        )
    final = assert_contract(events)
    assert final["citations"][0]["section_id"] == "sample/act/2024/3#s6"


async def test_an_unanswerable_question_abstains_without_citations(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        events = await collect(client, "GET", "/api/v1/query/stream", params={"q": "What is the capital of France?"})
    final = assert_contract(events)
    assert final["abstained"] and final["citations"] == []
    assert "could not find" in final["answer"] and final["answer"].strip()


@pytest.mark.parametrize(
    ("method", "kwargs", "field"),
    [
        ("GET", {"params": {"q": ""}}, "q"),
        ("GET", {"params": {"q": "x" * 2001}}, "q"),
        ("GET", {"params": {"q": "ok", "session_id": "bad id!"}}, "session_id"),
        ("POST", {"json": {"q": "   "}}, "q"),
        ("POST", {"content": b"{not json", "headers": {"content-type": "application/json"}}, ""),
    ],
)
async def test_bad_input_is_a_clear_422_not_a_traceback(
    live_app: LiveServer, method: str, kwargs: dict[str, object], field: str
) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        response = await client.request(method, "/api/v1/query/stream", **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "bad_request" and field in error["message"]
    assert "Traceback" not in response.text


async def test_health_and_readiness(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = (await client.get("/readyz")).json()
    assert ready["status"] == "ready" and ready["documents"] == 5 and ready["chunks"] > 20


async def test_readiness_is_503_before_anything_is_ingested(tmp_path: Path) -> None:
    with LiveServer(create_app(Settings(data_dir=tmp_path))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            response = await client.get("/readyz")
            events = await collect(client, "GET", "/api/v1/query/stream", params={"q": "deposit"})
    assert response.status_code == 503 and response.json()["status"] == "no_corpus"
    assert events[-1].event == "final" and events[-1].json()["abstained"]


async def test_a_failure_after_the_stream_started_ends_with_a_typed_error_event(private_data_dir: Path) -> None:
    settings = Settings(data_dir=private_data_dir, retrieval=RetrievalSettings(timeout_s=1e-9))
    with LiveServer(create_app(settings)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            params = {"q": "How much deposit can a landlord ask for?"}
            events = await collect(client, "GET", "/api/v1/query/stream", params=params)
    assert [e.event for e in events][0] == "meta" and events[-1].event == "error"
    assert "final" not in [e.event for e in events]
    error = events[-1].json()
    assert error["code"] == "backend_error" and "unavailable" in error["message"]
    assert "Traceback" not in error["message"]


async def test_session_turns_are_checkpointed(private_data_dir: Path) -> None:
    settings = Settings(data_dir=private_data_dir)
    with LiveServer(create_app(settings)) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            for q in ("How long is maternity leave?", "And annual leave?"):
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": q, "session_id": "s-42"})
                assert events[-1].event == "final"
    # A fresh process-worth of services reads the turns back from the SQLite checkpoints.
    async with open_services(settings) as services:
        state = await services.orchestrator.graph.aget_state({"configurable": {"thread_id": "s-42"}})
        saved = [
            c async for c in services.orchestrator.graph.checkpointer.alist({"configurable": {"thread_id": "s-42"}})
        ]
    # Saved once per question, as it ends (checkpointer.durability "exit"), not after every step: per-step saves
    # queue every stream behind one SQLite connection.
    assert len(saved) == 2
    turns = state.values["turns"]
    assert [t["question"] for t in turns] == ["How long is maternity leave?", "And annual leave?"]
    assert "ninety-eight days" in turns[0]["answer"]


async def test_debug_retrieval_shows_every_stage(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        body = (
            await client.get("/api/v1/debug/retrieval", params={"q": "deposit interest account", "top_k": 3})
        ).json()
    # "fused" holds the headings' ranking too; "before_headings" the two searches' fusion alone.
    assert set(body["stages"]) == {"dense", "bm25", "before_headings", "fused"}
    assert len(body["hits"]) == 3 and body["hits"][0]["provision_id"].startswith("sample/act/2024/3#s3")
    assert {"retrieve_dense", "retrieve_bm25", "fuse", "headings", "rerank_passthrough"} <= set(body["timings_ms"])
    fused_ids = [c["chunk_id"] for c in body["stages"]["fused"]]
    assert [h["chunk_id"] for h in body["hits"]] == fused_ids[:3]
    assert body["stages"]["dense"][0]["score"] > body["stages"]["dense"][-1]["score"]
    bundle = body["bundle"]
    assert bundle["pieces"] and bundle["tokens"] <= bundle["budget"] and "bundle" in body["timings_ms"]
    assert bundle["pieces"][0]["section_id"] == "sample/act/2024/3#s3" and bundle["pieces"][0]["whole_provision"]


async def test_stream_filters_restrict_what_is_cited(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        params = {"q": "How much notice must be given?", "law_id": "sample/act/2023/7"}
        events = await collect(client, "GET", "/api/v1/query/stream", params=params)
    final = assert_contract(events)
    assert final["citations"] and all(c["doc_key"] == "sample/act/2023/7" for c in final["citations"])
