"""How the code on the path labels, cites and scopes the provisions of schedules, over the shared corpus's Acts.

A provision is counted as in a schedule when the outermost heading of its ``part`` names one ("Schedule 28", "First
Schedule", …): this script's own reading, so it measures any version of the code the same way. For each such
provision and each of its chunks (cut as ingestion cuts them, with the configured embedder's tokenizer) it counts:

- labels that say "section N" without naming the schedule (``Section.label``; a chunk's citation label,
  ``api.composer.citations.provision_label``), and citation styles that cite it as the Act's own section ("…, s 4");
- definitions found inside a schedule that apply to the whole document (``find_links``: a Schedule's "tax" added to
  answers that cite the Act's own sections);
- references "section N" in the Act's own sections that resolve to a provision of a schedule;
- subsection pinpoints taken from a figure that glosses a number in words ("thirty (30) days"), in any provision.

Run it with the code to measure first on the path (``PYTHONPATH=/path/to/checkout``); it imports nothing of this
checkout's by itself.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/schedule_labels.py [--acts acts.jsonl] [--only-repeated]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from api.composer.citations import make_citation, provision_label
from api.schemas.documents import Document
from api.settings import Settings
from api.text.citation_style import cite_as
from api.text.provisions import provision_starts
from api.tools.embeddings import build_embedder
from api.tools.links import find_links
from ingestion.chunking import chunk_document
from ingestion.parsers import ParseOptions
from ingestion.parsers.jsonl import parse_jsonl

ACTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
IN_SCHEDULE = re.compile(r"^\s*(?:the\s+)?(?:[A-Za-z]+\s+)?schedule\b", re.I)
BARE_SECTION = re.compile(r"^section \w+(?:\(\w+\))*$")
GLOSS = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|"
    r"ninety|hundred)\s+$",
    re.I,
)


FIGURES = (
    "documents", "documents with schedules", "schedule provisions", "schedule provisions labelled 'section N'",
    "schedule provisions labelled 'paragraph N of <schedule>'",
    "schedule provisions labelled 'section N of <schedule>'",
    "schedule chunks", "schedule chunk citations labelled 'section N'",
    "schedule chunk labels 'section N' (quote-only text, prompts)", "schedule chunk citations styled '…, s N'",
    "definitions inside schedules", "… of which apply to the whole Act",
    "references 'section N' from the Act's own sections resolved to a schedule provision",
    "subsection pinpoints from a figure glossing words",
)  # fmt: skip


def in_schedule(part: str) -> bool:
    return bool(IN_SCHEDULE.match(part))


def documents(path: Path, only_repeated: bool) -> list[Document]:
    found = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            refs = Counter(s.get("ref") for s in record["sections"])
            if only_repeated and max(refs.values(), default=0) < 2:
                continue
            found += parse_jsonl(path, line.encode(), ParseOptions())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acts", type=Path, default=ACTS)
    parser.add_argument("--only-repeated", action="store_true", help="only the Acts with a repeated section ref")
    args = parser.parse_args()
    start = time.perf_counter()
    docs = documents(args.acts, args.only_repeated)
    counts: Counter[str] = Counter({name: 0 for name in FIGURES})
    settings = Settings()
    with ThreadPoolExecutor(1) as pool:
        embedder = build_embedder(settings.embeddings, pool)
        for doc in docs:
            counts["documents"] += 1
            scheduled = [s for s in doc.sections if in_schedule(s.part)]
            counts["documents with schedules"] += bool(scheduled)
            for section in doc.sections:
                text = section.text
                for at, _ in provision_starts(text, section.section_id):
                    glossed = GLOSS.search(text[max(0, at - 40) : at]) and text[at + 1].isdigit()
                    counts["subsection pinpoints from a figure glossing words"] += bool(glossed)
            if not scheduled:
                continue
            counts["schedule provisions"] += len(scheduled)
            counts["schedule provisions labelled 'section N'"] += sum(
                bool(BARE_SECTION.match(s.label)) for s in scheduled
            )
            for unit in ("paragraph", "section"):
                counts[f"schedule provisions labelled '{unit} N of <schedule>'"] += sum(
                    bool(re.match(rf"{unit} \S+ of (?:the )?\w*\s*schedule\b", s.label, re.I)) for s in scheduled
                )
            wanted = {s.section_id for s in scheduled}
            for chunk in chunk_document(doc, embedder.count_tokens, settings.ingestion.max_chunk_tokens):
                if chunk.section_id not in wanted:
                    continue
                counts["schedule chunks"] += 1
                citation = make_citation(1, chunk, chunk.text[:40], chunk.provision_id)
                counts["schedule chunk citations labelled 'section N'"] += bool(BARE_SECTION.match(citation.section))
                counts["schedule chunk labels 'section N' (quote-only text, prompts)"] += bool(
                    BARE_SECTION.match(provision_label(chunk))
                )
                styled = cite_as(doc.title, citation.section, citation.provision_id, doc.chapter, doc.jurisdiction)
                counts["schedule chunk citations styled '…, s N'"] += bool(re.search(r", s \d", styled))
    links = find_links(docs)
    parts = {s.section_id: s.part for d in docs for s in d.sections}
    for definitions in links.definitions.values():
        for definition in definitions:
            if in_schedule(parts.get(definition.provision_id.split("(")[0], "")):
                counts["definitions inside schedules"] += 1
                counts["… of which apply to the whole Act"] += definition.scope == ""
    for reference in links.references:
        source, target = (parts.get(p.split("(")[0], "") for p in (reference.source, reference.target))
        if reference.words.lower().startswith("section") and in_schedule(target) and not in_schedule(source):
            counts["references 'section N' from the Act's own sections resolved to a schedule provision"] += 1
    print(f"{len(docs)} documents from {args.acts.name}{' (only those with repeated refs)' * args.only_repeated}, "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    print("\n| figure | count |\n| --- | ---: |")
    for name, value in counts.items():
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
