"""Schemathesis over our own OpenAPI schema, against the app under a real uvicorn: valid and invalid inputs for every
operation; no answer may be a 5xx or stray from what the schema promises, and every event stream, read to its end,
must end in a ``final`` or an ``error`` other than ``internal_error``. ``benchmarks/fuzz_api.py`` runs longer."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.main import create_app
from api.settings import LimitsSettings, Settings
from tests.fuzzing import run_fuzz
from tests.servers import LiveServer
from tests.test_hardening import data_copy

EXAMPLES = 35  # per operation and mode: the three with parameters get 70 each, valid and invalid


@pytest.fixture
def fuzzed_app(sample_data_dir: Path, tmp_path: Path) -> Iterator[LiveServer]:
    """The app on the sample corpus, with the rate limit off (the fuzzer is one very busy caller)."""
    data_dir = data_copy(sample_data_dir, tmp_path / "data")
    limits = LimitsSettings(requests_per_minute=0)
    with LiveServer(create_app(Settings(data_dir=data_dir, limits=limits))) as server:
        yield server


def test_no_input_makes_the_api_fail_or_break_its_schema(fuzzed_app: LiveServer) -> None:
    report = run_fuzz(fuzzed_app.url, EXAMPLES)
    assert not report.failures, "\n\n".join(report.failures[:5])
    assert report.server_errors == 0
    assert report.internal_errors == 0 and report.endings["unfinished"] == 0, report.endings
    assert report.streams >= 20 and report.endings["final"] >= 20  # the streams were read, not just their status
    assert report.total >= 200 and len(report.cases) >= 5  # healthz and readyz take no input: one case each
    assert {"GET /api/v1/query/stream", "POST /api/v1/query/stream", "GET /api/v1/debug/retrieval"} <= set(report.cases)
