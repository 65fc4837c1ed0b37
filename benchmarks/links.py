"""Definitions and cross-references that `api.tools.links` reads from the shared Zimbabwe legislation: how many, how
long it takes, and how many of a hand-labelled sample of resolved references point where the law means.

Reads the 385 Acts as `gweta ingest` does and runs the service's own `find_links` (ingestion runs it over the stored
documents at the end of every run). The labelled sample (`evaluation/references_labelled.jsonl`) is 200 references
drawn at random from the resolver's output and judged by reading the referring words in their provision and the
provision they were resolved to: correct when it is the provision meant or the nearest enclosing one that exists.

    .venv/bin/python benchmarks/links.py --out benchmarks/results/links.md
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from report import SHARED, publish

from api.tools.links import find_links
from ingestion.parsers import ParseOptions
from ingestion.parsers.jsonl import parse_jsonl

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
LABELLED = Path(__file__).resolve().parents[1] / "evaluation" / "references_labelled.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acts", type=Path, default=ACTS)
    parser.add_argument("--labelled", type=Path, default=LABELLED)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    documents = parse_jsonl(args.acts, args.acts.read_bytes(), ParseOptions())  # as `gweta ingest` reads it
    start = time.perf_counter()
    links = find_links(documents)
    seconds = time.perf_counter() - start
    refs = links.references
    made = {(r.source, r.target, r.words, r.at) for r in refs}
    labelled = [json.loads(line) for line in args.labelled.read_text().splitlines() if line.strip()]
    judged = [row for row in labelled if (row["source"], row["target"], row["words"], row["at"]) in made]
    right = sum(row["correct"] for row in judged)
    gone = [row for row in labelled if row not in judged]
    relations = Counter(r.relation or "(a mention)" for r in refs)
    cross = sum(r.source.split("#")[0] != r.target.split("#")[0] for r in refs)
    lines = [
        "# Definitions and cross-references in the corpus",
        "",
        f"- corpus: {args.acts.name} ({len(documents)} laws, {sum(len(d.sections) for d in documents)} sections); "
        "command: `python benchmarks/links.py`",
        f"- find_links: {seconds:.1f} s on one core",
        f"- terms defined: {sum(len(d) for d in links.definitions.values())} in {len(links.definitions)} laws",
        f"- references resolved to a provision of the corpus: {len(refs)} ({cross} to another law)",
        "- by the words before them: " + ", ".join(f"{k} {v}" for k, v in relations.most_common()),
        "",
        "## Precision on the labelled sample",
        "",
        f"- labelled: {len(labelled)} references, {sum(r['correct'] for r in labelled)} correct when labelled",
        f"- still resolved the same way today: {len(judged)}, of which correct **{right}** "
        f"(precision {right / max(1, len(judged)):.3f})",
        f"- no longer made: {len(gone)} ({sum(not r['correct'] for r in gone)} of them labelled wrong)",
    ]
    for row in gone:
        note = row.get("note", "labelled correct")
        lines.append(f"  - {row['words']!r} in {row['source']} -> {row['target']}: {note}")
    lines += [
        "",
        "The sample was labelled before the rules that removed its wrong references were written, so the precision",
        "above is fitted to it for those; the figure as labelled is the unbiased one. A fresh sample is not labelled.",
    ]
    publish(lines, args.out)


if __name__ == "__main__":
    main()
