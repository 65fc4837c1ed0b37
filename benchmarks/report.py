"""What every benchmark script shares: the shared data, the question load, a percentile, and printing (and
optionally saving) its Markdown report.

The scripts run as ``python benchmarks/NAME.py``, which puts this folder on the import path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_questions(obliqa: int) -> list[str]:
    """The zim_qa questions and the first ``obliqa`` ObliQA ones: the query load every benchmark uses."""
    zim = [json.loads(line)["question"] for line in (SHARED / "zim_qa/questions.jsonl").read_text().splitlines()]
    lines = (SHARED / "obliqa/questions.jsonl").read_text().splitlines()[:obliqa]
    return zim + [json.loads(line)["question"] for line in lines]


def percentile(values: Sequence[float], q: float) -> float:
    """The value at quantile ``q`` (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def publish(lines: Sequence[str], out: Path | None) -> None:
    """Print the report and write it to ``out`` when one is given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text)
