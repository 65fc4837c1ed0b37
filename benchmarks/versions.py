"""Which version of a law is in force: what `api.tools.versions` reads from the shared Zimbabwe legislation.

Reads the shared Zimbabwe legislation as `gweta ingest` does and runs the service's own `find_repeals` and
`find_versions` on it (ingestion runs both over the stored documents at the end of every run): how many documents
have a consolidation date, a commencement date their text states, and an earliest day (their id's year); the laws
held in more than one version; how many documents an `as_of` day leaves out of the search; and the time each takes.
With `--answers`, the three marriage laws (the Marriage Act, the Marriages Act, 2022 that repeals it, and the
Customary Marriages Act) are ingested into a throw-away data dir and asked questions (quote-only, no model) with and
without `as_of`: which documents each answer cites, and which consolidation.

    .venv/bin/python benchmarks/versions.py --answers --out benchmarks/results/versions.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from report import SHARED, publish

from api.schemas.events import FinalEvent, WarningEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import Settings
from api.tools.repeals import find_repeals
from api.tools.versions import Versions, find_versions
from ingestion.parsers import ParseOptions
from ingestion.parsers.jsonl import parse_jsonl
from ingestion.pipeline import Ingestor, build_ingestion_tools

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
DAYS = ("1990-01-01", "2010-01-01", "2020-01-01", "2023-01-01", "2026-01-01")
MARRIAGE_LAWS = ("zw/act/1964/81", "zw/act/2022/1", "zw/act/ord/1917/5")
QUESTIONS = ("What is the minimum age of marriage?", "Who may solemnise a marriage?")
ANSWER_DAYS = (None, "2010-01-01")


def marriage_laws(acts: Path, tmp: Path) -> Path:
    """A folder in ``tmp`` holding the marriage laws' records of ``acts`` (outside the repository)."""
    laws = tmp / "laws"
    laws.mkdir()
    records = [line for line in acts.read_text().splitlines() if json.loads(line)["id"] in MARRIAGE_LAWS]
    (laws / "marriage.jsonl").write_text("\n".join(records) + "\n")
    return laws


async def answers(laws: Path, tmp: Path) -> list[str]:
    """The marriage laws ingested on their own, and each question asked today and as of each of ``ANSWER_DAYS``."""
    lines = [
        "", "## Answers on the three marriage laws (quote-only, no model)", "",
        "| question | as_of | documents cited (consolidation) | warnings | ms |", "| --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    settings = Settings(data_dir=tmp / "ingest")
    with ThreadPoolExecutor(settings.model_threads) as pool:
        tools = build_ingestion_tools(settings, pool)
        try:
            await Ingestor(tools).ingest(laws)
        finally:
            await tools.vectors.close()
    # Milvus Lite lets one process open a data dir once: the answers read a copy.
    data = shutil.copytree(settings.data_dir, tmp / "data", ignore=shutil.ignore_patterns("LOCK"))
    async with open_services(Settings(data_dir=data)) as services:
        for n, question in enumerate(QUESTIONS):
            for day in ANSWER_DAYS:
                start = time.perf_counter()
                request = QueryRequest(q=question, as_of=day, session_id=f"q{n}-{day or 'today'}")
                events = [e async for e in services.orchestrator.stream(request)]
                ms = (time.perf_counter() - start) * 1000
                final = events[-1]
                assert isinstance(final, FinalEvent)
                cited = sorted({f"{c.doc_key} ({c.consolidated or '?'})" for c in final.citations})
                warned = sorted({e.code for e in events if isinstance(e, WarningEvent)})
                lines.append(f"| {question} | {day or '(today)'} | {'; '.join(cited) or '-'} | "
                             f"{', '.join(warned) or '-'} | {ms:.0f} |")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acts", type=Path, default=ACTS)
    parser.add_argument("--today", default="2026-11-28", help="The day the preferred versions are read on.")
    parser.add_argument("--answers", action="store_true", help="Also ingest the marriage laws and ask them questions.")
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
    if args.answers:
        with tempfile.TemporaryDirectory(prefix="gweta-versions-") as tmp:
            lines += asyncio.run(answers(marriage_laws(args.acts, Path(tmp)), Path(tmp)))
    publish(lines, args.out)


if __name__ == "__main__":
    main()
