"""Schemathesis over our OpenAPI schema against a live server: each operation gets valid and invalid inputs, every
response is checked (no 5xx, statuses, content types, headers and bodies as the schema says). Shared by
tests/test_fuzz.py (a few hundred cases in CI) and benchmarks/fuzz_api.py (a longer run with a report)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@dataclass
class FuzzReport:
    cases: Counter[str] = field(default_factory=Counter)
    """Requests sent, per operation."""
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    @property
    def server_errors(self) -> int:
        return sum(n for (_, status), n in self.statuses.items() if status >= 500)


def _checker(report: FuzzReport, session: requests.Session, name: str, mode: GenerationMode) -> Any:
    def check(case: Any) -> None:
        report.cases[name] += 1
        try:
            response = case.call(session=session, timeout=60)
        except requests.RequestException as exc:  # a dropped connection is a failure too
            report.failures.append(f"{name} ({mode.value}): {type(exc).__name__}")
            return
        report.statuses[(name, response.status_code)] += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except AssertionError as exc:  # schemathesis' failures are AssertionErrors, with a curl line
            report.failures.append(f"{name} ({mode.value}) -> {response.status_code}: {str(exc)[:600]}")

    return check


def run_fuzz(base_url: str, examples: int, seed: int | None = 0) -> FuzzReport:
    """``examples`` generated cases per operation and generation mode (valid, invalid), all checked."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    report = FuzzReport()
    session = requests.Session()
    options = settings(
        max_examples=examples, deadline=None, database=None, derandomize=seed is not None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    for result in schema.get_all_operations():
        operation = result.ok()
        name = f"{operation.method.upper()} {operation.path}"
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run = options(
                given(case=operation.as_strategy(generation_mode=mode))(_checker(report, session, name, mode))
            )
            try:
                run()
            except Unsatisfiable:  # nothing to make invalid: an operation without parameters
                assert mode is GenerationMode.NEGATIVE, name
    return report
