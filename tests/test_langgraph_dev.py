"""LangGraph Studio locally: ``langgraph dev`` serves the query graph from langgraph.json, and answers through it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.test_replicas import free_port

ROOT = Path(__file__).resolve().parent.parent


def test_langgraph_dev_serves_the_query_graph_and_answers_a_question(private_data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "GWETA_DATA_DIR": str(private_data_dir),
        "PYTHONPATH": str(ROOT),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
    }
    log = tmp_path / "langgraph-dev.log"
    # make test builds it (scripts/studio_env.py); langgraph-api cannot share the service's lock.
    langgraph = ROOT / ".venv-studio" / "bin" / "langgraph"
    assert langgraph.exists(), "run `python scripts/studio_env.py` (make studio-env) to install langgraph dev"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(langgraph), "dev", "--config", str(ROOT / "langgraph.json"), "--host", "127.0.0.1",
             "--port", str(port), "--no-browser", "--no-reload", "--allow-blocking"],
            cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/ok", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        with httpx.Client(base_url=url, timeout=300) as client:
            found = client.post("/assistants/search", json={"graph_id": "query"}).json()
            assert [a["graph_id"] for a in found] == ["query"]
            drawn = client.get(f"/assistants/{found[0]['assistant_id']}/graph").json()
            nodes = {n["id"] for n in drawn["nodes"]}
            assert {"guard", "research", "synthesize", "verify", "reevaluate"} <= nodes

            run = client.post(
                "/runs/wait",
                json={"assistant_id": "query", "input": {"question": "How much deposit can a landlord ask for?"}},
            )
            assert run.status_code == 200, log.read_text()[-3000:]
            state = run.json()
            assert "__error__" not in state, (state, log.read_text()[-3000:])
        assert state["route"] == "rag_qa" and not state["abstained"] and state["verified"]
        cited = {c["provision_id"] for c in state["citations"]}
        assert "sample/act/2024/3#s3(1)" in cited  # the deposit cap, from the ingested sample corpus
        assert "two months" in state["answer"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
