"""A slow object store under a live answer: a real S3 server (moto) on loopback behind a proxy that holds every
request for seconds. Verification does not wait on it past `object_store.answer_wait_s`: it checks the quotes
against the provisions' indexed text, says so in a `sources_slow` warning, and the stream ends with `final`; the late
reads go on and fill the cache, so once the store is back the next answer is checked against the documents again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from api.settings import ObjectStoreSettings, RetrievalSettings, Settings
from tests.conftest import SAMPLE_CORPUS, ingest_into
from tests.servers import LiveServer, SlowProxy, moto_s3, s3_bucket
from tests.sse import collect

QUESTION = {"q": "How much deposit can a landlord ask for?"}
WAIT_S = 0.5
DELAY_S = 4.0


@pytest.fixture
def s3() -> Iterator[ObjectStoreSettings]:
    with moto_s3() as endpoint:
        yield s3_bucket(endpoint, "slow", answer_wait_s=WAIT_S)


async def ask(client: httpx.AsyncClient) -> tuple[dict[str, object], list[str], float]:
    start = time.monotonic()
    events = await collect(client, "GET", "/api/v1/query/stream", params=QUESTION)
    assert events[-1].event == "final", [e.event for e in events]
    warnings = [e.json()["code"] for e in events if e.event == "warning"]
    return events[-1].json(), warnings, time.monotonic() - start


async def test_a_slow_store_costs_an_answer_its_wait_not_its_delay_and_the_service_recovers(
    s3: ObjectStoreSettings, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", object_store=s3, retrieval=RetrievalSettings(cache_ttl_s=0), corpus_poll_s=0
    )
    assert (await ingest_into(settings, SAMPLE_CORPUS)).failures == 0
    host, port = s3.endpoint_url.removeprefix("http://").split(":")
    with SlowProxy((host, int(port))) as proxy:
        served = settings.model_copy(update={"object_store": s3.model_copy(update={"endpoint_url": proxy.url})})
        with LiveServer(create_app(served)) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
                proxy.delay = DELAY_S
                final, warnings, seconds = await ask(client)
                assert "sources_slow" in warnings
                assert seconds < DELAY_S, seconds  # the answer waited answer_wait_s for its documents, not the delay
                assert final["citations"], final  # checked against the indexed text, the quotes still stand
                assert final["verified"] is True, final

                proxy.delay = 0.0
                await asyncio.sleep(DELAY_S + 1)  # the late reads finish and fill the cache
                final, warnings, _ = await ask(client)
                assert "sources_slow" not in warnings and final["verified"] is True, (warnings, final)
