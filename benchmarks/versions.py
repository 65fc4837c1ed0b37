"""Which version of a law is in force: what `api.tools.versions` reads from the shared Zimbabwe legislation.

Reads the shared Zimbabwe legislation as `gweta ingest` does and runs the service's own `find_repeals` and
`find_versions` on it (ingestion runs both over the stored documents at the end of every run): how many documents
have a consolidation date, a commencement date their text states, and an earliest day (their id's year); the laws
held in more than one version; how many documents an `as_of` day leaves out of the search; and the time each takes.

    .venv/bin/python benchmarks/versions.py --out benchmarks/results/versions.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from report import SHARED, publish

from api.tools.repeals import find_repeals
from api.tools.versions import Versions, find_versions
from ingestion.parsers import ParseOptions
from ingestion.parsers.jsonl import parse_jsonl

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
DAYS = ("1990-01-01", "2010-01-01", "2020-01-01", "2023-01-01", "2026-01-01")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acts", type=Path, default=ACTS)
    parser.add_argument("--today", default="2026-11-28", help="The day the preferred versions are read on.")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    documents = parse_jsonl(args.acts, args.acts.read_bytes(), ParseOptions())  # as `gweta ingest` reads it
    start = time.perf_counter()
    repeals = find_repeals(documents)
    found_repeals = time.perf_counter() - start
    start = time.perf_counter()
    dates = find_versions(documents)
    found_dates = time.perf_counter() - start
    start = time.perf_counter()
    versions = Versions(dates, repeals)
    grouped = time.perf_counter() - start
    start = time.perf_counter()
    left_out = {day: versions.not_in_force(day) for day in DAYS}
    per_day = (time.perf_counter() - start) / len(DAYS)
    lines = [
        "# The version in force",
        "",
        f"- corpus: {args.acts} ({len(documents)} laws); command: `python benchmarks/versions.py`",
        f"- consolidation (expression) date known: {sum(bool(v.consolidated) for v in dates.values())}; "
        f"commencement stated in the text or the source: {sum(bool(v.commenced) for v in dates.values())}; "
        f"earliest day (enactment, else the id's year) known: {sum(bool(v.earliest) for v in dates.values())}",
        f"- repeals found: {len(repeals)}, of which with the day they took effect: "
        f"{sum(bool(versions.repeal_day(k)[0]) for k in repeals)}",
        f"- time: finding repeals {found_repeals * 1000:.0f} ms, reading dates {found_dates * 1000:.0f} ms, grouping "
        f"versions {grouped * 1000:.1f} ms, the documents not in force on a day {per_day * 1000:.1f} ms (computed "
        "once per request with `as_of`)",
        "",
        "## Commencement dates the text states",
        "",
        *[f"- {v.title} ({k}): {v.commenced}" for k, v in sorted(dates.items()) if v.commenced],
        "",
        f"## Laws held in more than one version (preferred on {args.today} first)",
        "",
        "| versions | status of each on that day |",
        "| --- | --- |",
    ]
    for keys in versions.members.values():
        ordered = sorted(keys, key=lambda k: k != versions.preferred(k, args.today))
        names = "; ".join(f"{dates[k].title} ({k})" for k in ordered)
        lines.append(f"| {names} | {', '.join(versions.status(k, args.today) for k in ordered)} |")
    lines += ["", "## Documents an `as_of` day leaves out of the search", "", "| as_of | left out |", "| --- | --- |"]
    lines += [f"| {day} | {len(keys)} |" for day, keys in left_out.items()]
    publish(lines, args.out)


if __name__ == "__main__":
    main()
