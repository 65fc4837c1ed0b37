"""Which laws of a corpus another law of the same corpus repeals: what `api.tools.repeals` finds in the shared
Zimbabwe legislation.

Reads the shared Zimbabwe legislation (one JSON record per Act, its sections and its chapter number) as the service's
documents and runs the service's own `find_repeals` on them (ingestion runs it over the stored documents at the end
of every run): every sentence of a section whose subject is a named Act and whose verb is "is repealed" / "are
(hereby) repealed", the Acts it names matched to the corpus's own by chapter number ("[Chapter 5:11]") or by title.
An answer that cites one of these laws carries a `repealed_law` warning.

    .venv/bin/python benchmarks/repeals.py --out benchmarks/results/repeals.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from report import SHARED, publish

from api.tools.repeals import find_repeals
from ingestion.parsers import ParseOptions
from ingestion.parsers.jsonl import parse_jsonl

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acts", type=Path, default=ACTS)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    documents = parse_jsonl(args.acts, args.acts.read_bytes(), ParseOptions())  # as `gweta ingest` reads it
    titles = {d.doc_key: d.title for d in documents}
    repealed = find_repeals(documents)
    lines = [
        "# Laws the corpus itself repeals",
        "",
        f"- corpus: {args.acts} ({len(documents)} laws); command: `python benchmarks/repeals.py`",
        f"- laws named as repealed by another law of the corpus: {len(repealed)}",
        "",
        "| repealed law | repealed by | sentence |",
        "| --- | --- | --- |",
    ]
    for target, repeal in sorted(repealed.items()):
        quoted = repeal.sentence[:160].replace("|", "/") + ("…" if len(repeal.sentence) > 160 else "")
        lines.append(
            f"| {titles[target]} ({target}) | {repeal.by_title} ({repeal.by_doc_key}, {repeal.by_section}) | {quoted} |"
        )
    publish(lines, args.out)


if __name__ == "__main__":
    main()
