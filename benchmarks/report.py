"""What every benchmark script shares: a percentile and printing (and optionally saving) its Markdown report.

The scripts run as ``python benchmarks/NAME.py``, which puts this folder on the import path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


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
