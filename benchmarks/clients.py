"""The clients' own costs: how fast the WhatsApp webhook acknowledges (alone, and in a burst while answers are being
written), how long a reply takes to reach the Graph API, and what the web app weighs on a slow link.

Usage: python benchmarks/clients.py [--data-dir D] [--out benchmarks/results/clients.md]

Runs the app under uvicorn on loopback over the data dir (ingesting sample_corpus/ into a temporary one when none is
given), with WhatsApp pointed at the loopback Graph API of tests/servers.py; extractive answers (no LLM).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import hmac
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from first_token import SAMPLE_QUESTIONS
from report import percentile, publish

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from api.main import create_app  # noqa: E402
from api.settings import Settings, WhatsAppSettings  # noqa: E402
from ingestion.pipeline import Ingestor, build_ingestion_tools  # noqa: E402
from tests.servers import FakeGraphAPI, LiveServer  # noqa: E402

SECRET = "bench-app-secret"
PHONE_ID = "100000000000001"


def signed(question: str, sender: str, message_id: str) -> tuple[bytes, dict[str, str]]:
    message = {"from": sender, "id": message_id, "timestamp": str(int(time.time())), "type": "text",
               "text": {"body": question}}  # fmt: skip
    value = {"messaging_product": "whatsapp", "metadata": {"phone_number_id": PHONE_ID}, "messages": [message]}
    change = {"field": "messages", "value": value}
    body = json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [change]}]}).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"content-type": "application/json", "x-hub-signature-256": signature}


async def ingest_sample(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir)
    with ThreadPoolExecutor(settings.model_threads) as pool:
        tools = build_ingestion_tools(settings, pool)
        try:
            await Ingestor(tools).ingest(ROOT / "sample_corpus")
        finally:
            await tools.vectors.close()


async def wait_for_texts(graph: FakeGraphAPI, count: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(graph.texts()) < count:  # noqa: ASYNC110 - the fake server runs in another thread
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(graph.texts())} of {count} replies arrived")
        await asyncio.sleep(0.005)


async def measure(data_dir: Path) -> list[str]:
    graph = FakeGraphAPI(access_token="bench-token", phone_number_id=PHONE_ID)
    sequential_ack, reply_ms, burst_ack = [], [], []
    with LiveServer(graph.app) as graph_server:
        whatsapp = WhatsAppSettings(verify_token="v", app_secret=SECRET, access_token="bench-token",
                                    phone_number_id=PHONE_ID, graph_url=graph_server.url, rate_limit=100)  # fmt: skip
        settings = Settings(data_dir=data_dir, whatsapp=whatsapp)
        # One app per phase, so no phase is answered from another's QA memory.
        stream_ms = []
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                for n, question in enumerate(SAMPLE_QUESTIONS):
                    start = time.perf_counter()
                    params = {"q": question, "session_id": f"bench-{n}"}
                    async with client.stream("GET", "/api/v1/query/stream", params=params) as response:
                        async for line in response.aiter_lines():
                            if line.startswith("event: final"):
                                stream_ms.append((time.perf_counter() - start) * 1000)
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                for n, question in enumerate(SAMPLE_QUESTIONS):
                    body, headers = signed(question, f"2637700{n:05d}", f"wamid.seq.{n}")
                    before = len(graph.texts())
                    start = time.perf_counter()
                    response = await client.post("/api/v1/whatsapp/webhook", content=body, headers=headers)
                    sequential_ack.append((time.perf_counter() - start) * 1000)
                    assert response.status_code == 200, response.text
                    await wait_for_texts(graph, before + 1)
                    reply_ms.append((time.perf_counter() - start) * 1000)
                page_start = time.perf_counter()
                page = await client.get("/")
                page_ms = (time.perf_counter() - page_start) * 1000
                assets = {name: (await client.get(f"/static/{name}")).content for name in ("app.js", "app.css")}
        with LiveServer(create_app(settings)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                # A burst: every question at once, each acknowledged while earlier ones are still being answered.
                before = len(graph.texts())
                for n, question in enumerate(SAMPLE_QUESTIONS):
                    body, headers = signed(question, f"2637711{n:05d}", f"wamid.burst.{n}")
                    start = time.perf_counter()
                    response = await client.post("/api/v1/whatsapp/webhook", content=body, headers=headers)
                    burst_ack.append((time.perf_counter() - start) * 1000)
                burst_start = time.perf_counter()
                await wait_for_texts(graph, before + len(SAMPLE_QUESTIONS))
                burst_done = time.perf_counter() - burst_start
    assets["index.html"] = page.content
    raw = sum(len(a) for a in assets.values())
    zipped = sum(len(gzip.compress(a)) for a in assets.values())
    n = len(SAMPLE_QUESTIONS)
    return [
        f"# Clients: WhatsApp webhook and web app ({n} sample questions, extractive)",
        "",
        f"- machine: 2 cores shared with other work (load average {os.getloadavg()[0]:.1f} at the end, so compare "
        "with the stream's own figure below, not with first_token.md); app and loopback Graph API under uvicorn",
        f"- webhook acknowledgement, one at a time: P50 {percentile(sequential_ack, 0.5):.0f} ms, "
        f"P95 {percentile(sequential_ack, 0.95):.0f} ms, max {max(sequential_ack):.0f} ms",
        f"- webhook acknowledgement, {n} posted back to back while earlier answers are written: "
        f"P50 {percentile(burst_ack, 0.5):.0f} ms, P95 {percentile(burst_ack, 0.95):.0f} ms, "
        f"max {max(burst_ack):.0f} ms (target: under 1 s)",
        f"- signed POST to the reply reaching the Graph API (read receipt, graph, send): "
        f"P50 {percentile(reply_ms, 0.5):.0f} ms, P95 {percentile(reply_ms, 0.95):.0f} ms, "
        f"mean {statistics.mean(reply_ms):.0f} ms",
        f"- the same questions over /api/v1/query/stream, to the final event (same graph, same machine, same hour): "
        f"P50 {percentile(stream_ms, 0.5):.0f} ms, P95 {percentile(stream_ms, 0.95):.0f} ms",
        f"- the burst's {n} replies all sent {burst_done:.1f} s after the last acknowledgement "
        "(4 answered at once, GWETA_WHATSAPP__CONCURRENCY)",
        f"- web app: index.html + app.js + app.css = {raw / 1024:.1f} KiB ({zipped / 1024:.1f} KiB gzipped); "
        f"GET / {page_ms:.0f} ms; no framework, no build step, no third-party requests",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(tmp) / "data"
            asyncio.run(ingest_sample(data_dir))
        publish(asyncio.run(measure(data_dir)), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
