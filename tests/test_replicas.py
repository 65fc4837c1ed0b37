"""Replicas that agree: two `gweta serve` processes on loopback share one S3 server (moto). A document ingested by
another process reaches both without a restart, and a replica answers throughout the switch (no moment without an
index)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from api.settings import ObjectStoreSettings, Settings
from tests.conftest import SAMPLE_CORPUS, ingest_into
from tests.servers import moto_s3, s3_bucket

BEEKEEPING_ACT = """<!-- id: sample/act/2025/2; jurisdiction: SAMPLE; note: written for the tests, not real law -->
# Apiary Registration Act, 2025

## Part I – Preliminary

1. Registration of hives
Every beekeeper who keeps more than five hives shall register each apiary with the district veterinary office.
"""


@pytest.fixture
def s3() -> Iterator[ObjectStoreSettings]:
    with moto_s3() as endpoint:
        yield s3_bucket(endpoint, "replicas")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(
    data_dir: Path, s3: ObjectStoreSettings, log: Path, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ, "GWETA_OBJECT_STORE__BACKEND": "s3", "GWETA_OBJECT_STORE__BUCKET": s3.bucket,
        "GWETA_OBJECT_STORE__ENDPOINT_URL": s3.endpoint_url, "GWETA_OBJECT_STORE__REGION": s3.region,
        "GWETA_OBJECT_STORE__ACCESS_KEY_ID": "test", "GWETA_OBJECT_STORE__SECRET_ACCESS_KEY": "test",
        "GWETA_CORPUS_POLL_S": "0.5", "GWETA_MODEL_THREADS": "1",
        # The asker below calls every 50 ms for as long as the switch takes: on a slow machine that outlasts the
        # per-caller burst, and a 429 is not what this test is about.
        "GWETA_LIMITS__REQUESTS_PER_MINUTE": "0", **(extra_env or {}),
    }  # fmt: skip
    gweta = Path(sys.executable).parent / "gweta"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(gweta), "serve", "--data-dir", str(data_dir), "--port", str(port)], env=env, stdout=out, stderr=out
        )
    return proc, f"http://127.0.0.1:{port}"


def stop(replicas: Sequence[tuple[subprocess.Popen[bytes], str]]) -> None:
    """Stop the replica processes: terminate each, and kill one that has not ended within 30 s."""
    for proc, _ in replicas:
        proc.terminate()
    for proc, _ in replicas:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def version_of(client: httpx.AsyncClient, url: str) -> str | None:
    try:
        response = await client.get(f"{url}/readyz")
    except httpx.TransportError:
        return None
    return str(response.json()["corpus_version"]) if response.status_code == 200 else None


async def wait_for(client: httpx.AsyncClient, urls: list[str], version: str | None, within_s: float) -> list[str]:
    deadline = time.monotonic() + within_s
    while True:
        seen = [await version_of(client, url) for url in urls]
        if all(v is not None and (version is None or v == version) for v in seen):
            return [str(v) for v in seen]
        assert time.monotonic() < deadline, f"replicas at {seen}, waiting for {version}"
        await asyncio.sleep(0.3)


async def test_two_replicas_move_to_a_new_ingestion_without_a_restart(s3: ObjectStoreSettings, tmp_path: Path) -> None:
    ingest_dir = tmp_path / "ingest"
    first = Settings(data_dir=ingest_dir, object_store=s3)
    assert (await ingest_into(first, SAMPLE_CORPUS)).failures == 0
    replicas = []
    for name in ("a", "b"):
        shutil.copytree(ingest_dir, tmp_path / name, ignore=shutil.ignore_patterns("LOCK"))  # their own vector copy
        replicas.append(serve(tmp_path / name, s3, tmp_path / f"{name}.log"))
    urls = [url for _, url in replicas]
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            before = await wait_for(client, urls, None, within_s=180)
            assert before[0] == before[1]

            answered: list[int] = []

            async def keep_asking() -> None:
                """Retrieval on replica a all through the switch: it must always find something."""
                while True:
                    found = await client.get(f"{urls[0]}/api/v1/debug/retrieval", params={"q": "deposit"})
                    assert found.status_code == 200 and found.json()["hits"], found.text
                    answered.append(len(found.json()["hits"]))
                    await asyncio.sleep(0.05)

            asker = asyncio.create_task(keep_asking())
            new_source = tmp_path / "new"
            new_source.mkdir()
            (new_source / "apiary.md").write_text(BEEKEEPING_ACT)
            # Another machine's ingestion into the shared bucket (its own vector folder: Lite allows one opener).
            report = await ingest_into(first.model_copy(update={"data_dir": tmp_path / "ingest2"}), new_source)
            assert report.count("ingested") == 1
            after = await wait_for(client, urls, None, within_s=5)
            deadline = time.monotonic() + 30
            while len(set(after)) != 1 or after[0] == before[0]:
                assert time.monotonic() < deadline, f"replicas still at {after}"
                await asyncio.sleep(0.3)
                after = await wait_for(client, urls, None, within_s=5)
            # The asker keeps finding something after the switch too (however fast the switch was, and however much
            # of it the ingestion in this process kept the asker waiting).
            wanted, deadline = len(answered) + 3, time.monotonic() + 15
            while len(answered) < wanted:
                if asker.done():
                    asker.result()  # its failed assertion, if that is what stopped it
                assert time.monotonic() < deadline, f"the asker answered {len(answered)} times"
                await asyncio.sleep(0.05)
            asker.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asker
            for url in urls:
                # Found by the reloaded BM25 index (each replica's own vector folder predates the new Act). The
                # manifest is written just before the BM25 artifact, so a replica may need one more poll for it.
                deadline = time.monotonic() + 10
                while True:
                    found = await client.get(f"{url}/api/v1/debug/retrieval", params={"q": "register each apiary"})
                    body = found.json()
                    lexical = body["stages"].get("bm25", [])
                    if lexical and lexical[0]["chunk_id"].startswith("sample/act/2025/2#"):
                        break
                    assert time.monotonic() < deadline, body["stages"]
                    await asyncio.sleep(0.3)
                assert body["corpus_version"] == after[0]
                assert any(h["chunk_id"].startswith("sample/act/2025/2#") for h in body["hits"][:3])
    finally:
        stop(replicas)
