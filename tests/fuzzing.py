"""Schemathesis over our OpenAPI schema against a live server: each operation gets valid and invalid inputs, every
response is checked (no 5xx, statuses, content types, headers and bodies as the schema says), and every event
stream is read to its end: a 200 stream must end in one ``final`` or ``error`` event, and an ``error`` event with
``internal_error`` is a failure like a 500 (the status was sent before the answer went wrong). Shared by
tests/test_fuzz.py (a few hundred cases in CI) and benchmarks/fuzz_api.py (a longer run with a report)."""

from __future__ import annotations

import json
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
MAX_STREAM_EVENTS = 1_000_000
"""Events read from one stream before schemathesis stops reading: every answer's whole stream."""


@dataclass
class FuzzReport:
    cases: Counter[str] = field(default_factory=Counter)
    """Requests sent, per operation."""
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    streams: int = 0
    """Event streams read to their end."""
    endings: Counter[str] = field(default_factory=Counter)
    """How the streams ended: ``final``, ``error:<code>``, or ``unfinished`` (no final or error event last)."""

    @property
    def internal_errors(self) -> int:
        return self.endings["error:internal_error"]

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    @property
    def server_errors(self) -> int:
        return sum(n for (_, status), n in self.statuses.items() if status >= 500)


def stream_events(body: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a Server-Sent Events body, parsed as a browser's EventSource would."""
    events, name, data = [], "message", []
    for line in body.splitlines():
        if line == "":
            if data:
                events.append((name, "\n".join(data)))
            name, data = "message", []
        elif not line.startswith(":"):
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
    if data:
        events.append((name, "\n".join(data)))
    return events


def stream_ending(body: str) -> str:
    """How a stream ended: ``final``, ``error:<code>``, or ``unfinished`` when its last event is neither, or a
    ``final`` or ``error`` came before the end."""
    events = stream_events(body)
    closing = [i for i, (name, _) in enumerate(events) if name in ("final", "error")]
    if closing != [len(events) - 1]:
        return "unfinished"
    name, data = events[-1]
    if name == "final":
        return "final"
    try:
        return f"error:{json.loads(data).get('code', '')}"
    except (ValueError, AttributeError):
        return "error:"


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
        content_type = response.headers.get("content-type") or [""]
        if response.status_code == 200 and content_type[0].startswith("text/event-stream"):
            report.streams += 1
            ending = "unfinished" if response.stream_cut_short else stream_ending(response.text)
            report.endings[ending] += 1
            if ending in ("unfinished", "error:internal_error"):
                sent = case.query or case.body
                report.failures.append(f"{name} ({mode.value}) -> 200 stream ended {ending}: {str(sent)[:300]}")

    return check


def run_fuzz(base_url: str, examples: int, seed: int | None = 0) -> FuzzReport:
    """``examples`` generated cases per operation and generation mode (valid, invalid), all checked."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    # Schemathesis reads the first 20 events of a stream by default; an answer goes wrong at its end, if at all.
    schema.config.max_stream_events = MAX_STREAM_EVENTS
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
