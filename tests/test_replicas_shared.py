"""Two `gweta serve` replicas and one redis-server on loopback, sharing an S3 server (moto) for the corpus: an
answer begun on A and dropped is resumed on B; a caller's burst is counted once over both; a WhatsApp message
retried to the other replica is answered once; an ingestion by a third process reaches both within 2 s."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from api.settings import ObjectStoreSettings, Settings, StateSettings
from tests.conftest import SAMPLE_CORPUS, ingest_into
from tests.redis_server import RedisServer
from tests.servers import FakeGraphAPI, FakeOpenAI, LiveServer, Reply, moto_s3, s3_bucket
from tests.test_replicas import BEEKEEPING_ACT, serve, stop, version_of, wait_for
from tests.test_resume import PIECES, QUESTION, read
from tests.test_whatsapp import APP_SECRET, PHONE_ID, SENDER, VERIFY_TOKEN, notification, post, text_message


@pytest.fixture
def s3() -> Iterator[ObjectStoreSettings]:
    with moto_s3() as endpoint:
        yield s3_bucket(endpoint, "shared-replicas")


async def test_two_replicas_share_answers_limits_whatsapp_and_corpus(
    s3: ObjectStoreSettings, redis: RedisServer, tmp_path: Path
) -> None:
    state = StateSettings(backend="redis", url=SecretStr(redis.url))
    first = Settings(data_dir=tmp_path / "ingest", object_store=s3, state=state)
    assert (await ingest_into(first, SAMPLE_CORPUS)).failures == 0
    upstream = FakeOpenAI([Reply(PIECES, delay_s=0.4), Reply(["A deposit of two months' rent [1]."])])
    graph = FakeGraphAPI()
    with LiveServer(upstream.app) as llm, LiveServer(graph.app) as graph_server:
        env = {
            "GWETA_STATE__BACKEND": "redis", "GWETA_STATE__URL": redis.url,
            "GWETA_CORPUS_POLL_S": "60",  # far longer than the 2 s allowed: only the announcement can be in time
            "GWETA_LIMITS__REQUESTS_PER_MINUTE": "0.6",  # one a 100 s: the burst of 20 is all a caller gets here
            "GWETA_LLM__BACKEND": "openai", "GWETA_LLM__BASE_URL": f"{llm.url}/v1", "GWETA_LLM__API_KEY": "k",
            "GWETA_LLM__MODEL": "m", "GWETA_WHATSAPP__VERIFY_TOKEN": VERIFY_TOKEN,
            "GWETA_WHATSAPP__APP_SECRET": APP_SECRET, "GWETA_WHATSAPP__ACCESS_TOKEN": "graph-token",
            "GWETA_WHATSAPP__PHONE_NUMBER_ID": PHONE_ID, "GWETA_WHATSAPP__GRAPH_URL": graph_server.url,
        }  # fmt: skip
        replicas = []
        for name in ("a", "b"):
            shutil.copytree(tmp_path / "ingest", tmp_path / name, ignore=shutil.ignore_patterns("LOCK"))
            replicas.append(serve(tmp_path / name, s3, tmp_path / f"{name}.log", env))
        a, b = [url for _, url in replicas]
        try:
            async with httpx.AsyncClient(timeout=60) as client:
                before = await wait_for(client, [a, b], None, within_s=240)

                # An answer begun on A, dropped after its first token, resumed on B.
                async with client.stream("GET", f"{a}/api/v1/query/stream", params={"q": QUESTION}) as response:
                    assert response.status_code == 200
                    seen, ids = await read(response, stop_after_tokens=1)
                headers = {"Last-Event-ID": ids[-1]}
                async with client.stream(
                    "GET", f"{b}/api/v1/query/stream", params={"q": QUESTION}, headers=headers
                ) as response:
                    assert response.status_code == 200
                    rest, rest_ids = await read(response)
                stream_id = ids[0].split(".")[0]
                all_ids = ids + rest_ids
                assert all_ids == [f"{stream_id}.{n}" for n in range(1, len(all_ids) + 1)]  # every event, once
                names = [e.event for e in seen + rest]
                assert names.count("final") == 1 and names[-1] == "final" and "error" not in names
                assert "two months" in rest[-1].json()["answer"]

                # One caller's burst over both replicas: 20 go through, the 21st is refused wherever it lands.
                caller = {"X-Forwarded-For": "10.9.8.7"}
                statuses = [
                    (await client.get(f"{(a, b)[n % 2]}/api/v1/documents", headers=caller)).status_code
                    for n in range(20)
                ]
                assert statuses == [200] * 20
                for url in (a, b):
                    refused = await client.get(f"{url}/api/v1/documents", headers=caller)
                    assert refused.status_code == 429 and refused.headers["retry-after"]
                other = await client.get(f"{b}/api/v1/documents", headers={"X-Forwarded-For": "10.9.8.8"})
                assert other.status_code == 200

                # A WhatsApp message delivered to A and retried by Meta to B is answered once.
                message = notification(text_message("How much deposit can a landlord ask for?"))
                posts = []
                for url in (a, b):
                    async with httpx.AsyncClient(base_url=url, timeout=30) as replica:
                        posts.append((await post(replica, message)).json())
                assert posts == [{"status": "accepted", "scheduled": 1}, {"status": "accepted", "scheduled": 0}]
                deadline = time.monotonic() + 60
                while not graph.texts(SENDER):
                    assert time.monotonic() < deadline, "no WhatsApp reply was sent"
                    await asyncio.sleep(0.1)
                await asyncio.sleep(1.0)
                assert len(graph.reads()) == 1 and len(graph.texts(SENDER)) == 1

                # An ingestion by another process: both replicas serve it within 2 s of its end.
                source = tmp_path / "new"
                source.mkdir()
                (source / "apiary.md").write_text(BEEKEEPING_ACT)
                report = await ingest_into(first.model_copy(update={"data_dir": tmp_path / "ingest2"}), source)
                assert report.count("ingested") == 1 and report.corpus_version != before[0]
                ended = time.monotonic()
                while [await version_of(client, url) for url in (a, b)] != [report.corpus_version] * 2:
                    assert time.monotonic() - ended < 2.0, "the replicas did not switch within 2 s"
                    await asyncio.sleep(0.05)
        finally:
            stop(replicas)
