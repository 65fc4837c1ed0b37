"""A longer schemathesis run over the API than CI's: valid and invalid inputs for every operation, each response
checked for 5xx and against the schema (statuses, content types, headers, bodies, every SSE event), and every event
stream read to its end: one that ends in an ``internal_error`` event, or with no ``final`` or ``error``, fails.

Usage:
    python benchmarks/fuzz_api.py [--examples 150] [--seed 0] [--out benchmarks/results/fuzz_api.md]

Ingests sample_corpus/ into a temporary data dir, serves the app under uvicorn on loopback (rate limit off: the
fuzzer is one very busy caller; auth off and on, so the 401 paths are fuzzed too), and runs ``tests/fuzzing.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from report import publish

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from api.main import create_app  # noqa: E402
from api.settings import AuthSettings, LimitsSettings, Settings  # noqa: E402
from tests.conftest import SAMPLE_CORPUS, ingest_into  # noqa: E402
from tests.fuzzing import FuzzReport, run_fuzz  # noqa: E402
from tests.servers import LiveServer  # noqa: E402


def fuzz(settings: Settings, examples: int, seed: int | None) -> tuple[FuzzReport, float]:
    start = time.perf_counter()
    with LiveServer(create_app(settings)) as server:
        report = run_fuzz(server.url, examples, seed)
    return report, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=150, help="cases per operation and generation mode")
    parser.add_argument("--seed", type=int, default=0, help="derandomised run (the same cases each time)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        asyncio.run(ingest_into(Settings(data_dir=data_dir), SAMPLE_CORPUS))
        limits = LimitsSettings(requests_per_minute=0)
        runs = {
            "auth off": Settings(data_dir=data_dir, limits=limits),
            "auth on (no token)": Settings(
                data_dir=data_dir, limits=limits, auth=AuthSettings(enabled=True, docs_public=True, jwt_secret="f" * 32)
            ),
        }
        results = {name: fuzz(settings, args.examples, args.seed) for name, settings in runs.items()}
    lines = [
        "# API fuzzing (schemathesis)",
        "",
        f"`python benchmarks/fuzz_api.py --examples {args.examples} --seed {args.seed}`: schemathesis "
        f"{__import__('schemathesis').__version__}, positive and negative cases per operation, checks "
        "not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance, "
        "response_schema_conformance (SSE events included); every 200 event stream read to its end, and one that "
        "ends in an `internal_error` event or with no `final`/`error` event counted as a failure. App on the sample "
        "corpus under uvicorn, rate limit off.",
        "",
        "| run | requests | 5xx | streams read | ended `final` | ended `error` (other) | `internal_error` | unfinished "
        "| failed checks | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, (report, seconds) in results.items():
        other = sum(n for ending, n in report.endings.items() if ending.startswith("error:")) - report.internal_errors
        lines.append(
            f"| {name} | {report.total} | {report.server_errors} | {report.streams} | {report.endings['final']} "
            f"| {other} | {report.internal_errors} | {report.endings['unfinished']} | {len(report.failures)} "
            f"| {seconds:.0f} |"
        )
    for name, (report, _) in results.items():
        lines += ["", f"## {name}: responses by operation and status", "", "| operation | status | count |",
                  "| --- | --- | --- |"]  # fmt: skip
        for (operation, status), count in sorted(report.statuses.items()):
            lines.append(f"| {operation} | {status} | {count} |")
        if report.failures:
            lines += ["", "Failures:", "", *(f"- {f}" for f in report.failures[:20])]
    publish(lines, args.out)
    if any(r.failures or r.server_errors or r.internal_errors for r, _ in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
