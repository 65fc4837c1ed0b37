"""Shared fixtures: real embedded backends in temporary data dirs, and real servers on loopback."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from api.main import create_app
from api.settings import Settings
from ingestion.pipeline import Ingestor, IngestReport, build_ingestion_tools
from tests.firestore_emulator import firestore_emulator
from tests.redis_server import RedisServer, redis_server
from tests.servers import LiveServer

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = ROOT / "sample_corpus"
SHARED_DATA = Path(os.environ.get("GWETA_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server on 127.0.0.1 (a free port) for one test; stopped after it."""
    folder = tmp_path / "redis"
    folder.mkdir()
    with redis_server(folder) as server:
        yield server


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared corpora (../shared/data beside the checkout, as in CI), never copied into the project."""
    assert SHARED_DATA.is_dir(), (
        f"these tests read {SHARED_DATA}; put shared/ beside the checkout or set GWETA_SHARED_DATA"
    )
    return SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def shared_onnx_graphs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The query path's exported embedding graphs, kept for the whole session as a machine with many data dirs would
    keep them (``GWETA_EMBEDDINGS__ONNX_DIR``; graph workers inherit it): each test's fresh data dir would otherwise
    export the same graph again. ``tests/test_onnx_embedder.py`` checks the default place in the data dir."""
    folder = tmp_path_factory.mktemp("onnx-graphs")
    before = os.environ.get("GWETA_EMBEDDINGS__ONNX_DIR")
    os.environ["GWETA_EMBEDDINGS__ONNX_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("GWETA_EMBEDDINGS__ONNX_DIR", None)
    else:
        os.environ["GWETA_EMBEDDINGS__ONNX_DIR"] = before


async def ingest_into(settings: Settings, source: Path) -> IngestReport:
    with ThreadPoolExecutor(settings.model_threads) as pool:
        tools = build_ingestion_tools(settings, pool)
        try:
            return await Ingestor(tools).ingest(source)
        finally:
            await tools.vectors.close()


@pytest.fixture(scope="session")
async def sample_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with the sample corpus ingested once for the whole session; copy it before changing it."""
    data_dir = tmp_path_factory.mktemp("sample-data")
    report = await ingest_into(Settings(data_dir=data_dir), SAMPLE_CORPUS)
    assert report.failures == 0
    return data_dir


@pytest.fixture
def private_data_dir(sample_data_dir: Path, tmp_path: Path) -> Path:
    """A copy of the ingested sample data dir that a test may use on its own (Milvus Lite allows one opener)."""
    target = tmp_path / "data"
    shutil.copytree(sample_data_dir, target, ignore=shutil.ignore_patterns("LOCK"))
    return target


@pytest.fixture
async def live_app(private_data_dir: Path) -> AsyncIterator[LiveServer]:
    """The real app on the ingested sample corpus, served by uvicorn on loopback."""
    with LiveServer(create_app(Settings(data_dir=private_data_dir))) as server:
        yield server
    await asyncio.sleep(0)


@pytest.fixture(scope="session")
def firestore_host() -> Iterator[str]:
    """A Firestore emulator on loopback for the whole session (tests isolate by collection prefix)."""
    with firestore_emulator() as host:
        yield host
