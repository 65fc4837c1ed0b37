"""A review sheet for reading a model's answers by hand: every sentence of every answer beside the provisions it cites.

Reads an answer trace written by `gweta eval answers --trace T` with a model configured (one JSON line a question) and
writes Markdown: for each question, the answer the reader was shown by the model path (`answers.model`), split into the
sentences the gate judges, each with the section ids its `[n]` markers point to, then the full text of every cited
provision from the shared corpus, found by its full section id (`sections`, "…#s4~7": a Schedule's paragraph 4, not
the Act's section 4; a trace from before it was kept names only gold's id, and every entry under it is shown). A
reviewer reads each sentence against its provision and labels it in a JSONL file
(`{"id": …, "sentence": k, "label": "supported" | "wrong" | "unsupported" | "no claim", "why": …}`); `--labels`
folds those labels back into a count per label and per composer (model words or the quote-only fallback).

The final event's citations are listed in the order their markers first appear in the answer (the citation tracker
sends each once, at its first marker), so the k-th distinct marker of an answer is its k-th cited section.

    .venv/bin/python benchmarks/review_sheet.py --trace T --out sheet.md
    .venv/bin/python benchmarks/review_sheet.py --trace T --labels L.jsonl     # the counts, Markdown
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from report import SHARED  # noqa: E402

from api.composer.citations import MARKER  # noqa: E402
from api.text.sentences import split_sentences  # noqa: E402
from ingestion.parsers import ParseOptions  # noqa: E402
from ingestion.parsers.jsonl import parse_jsonl  # noqa: E402

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"


def provisions(wanted: set[str]) -> dict[str, str]:
    """Section id -> its label, heading and text, for every section of the documents ``wanted`` names, keyed by the
    id ingestion gives it: a source's several entries under one reference (a Schedule's paragraphs numbered like
    the Act's sections) are each their own ("…#s4", "…#s4~2", …), read by the ingestion parser itself."""
    docs = {w.split("#")[0] for w in wanted}
    found: dict[str, str] = {}
    with ACTS.open(encoding="utf-8") as lines:
        for line in lines:
            if json.loads(line)["id"] not in docs:
                continue
            for document in parse_jsonl(ACTS, line.encode(), ParseOptions()):
                for section in document.sections:
                    part = f", {section.part}" if section.part else ""
                    name = f"{document.title}{part}: {section.label} ({section.heading})"
                    found[section.section_id] = f"{name}\n\n{section.text}"
    return found


def provision_text(texts: dict[str, str], section_id: str) -> str:
    """The cited section's text; for a trace that kept only gold's id ("…#s4", no repeat suffix), every entry under
    that reference, each with its part, since such a trace does not say which one was cited."""
    if "~" in section_id or not any(key.startswith(f"{section_id}~") for key in texts):
        return texts.get(section_id, "(not in the shared corpus)")
    return "\n\n---\n\n".join(text for key, text in texts.items() if key.split("~")[0] == section_id)


def marked(answer: str, cited: list[str]) -> dict[int, str]:
    """Marker -> section id: the k-th distinct marker of the answer is its k-th citation."""
    order = list(dict.fromkeys(int(m) for m in MARKER.findall(answer)))
    return {marker: cited[k] for k, marker in enumerate(order) if k < len(cited)}


def composer(model: dict[str, Any]) -> str:
    warnings = set(model.get("warnings") or [])
    if model.get("abstained"):
        return "abstained"
    if warnings & {"model_answer_unverified", "model_abstained"}:
        return "quote-only fallback"
    return "model"


def cited_sections(model: dict[str, Any]) -> list[str]:
    """Each citation's section as stored ("…#s4~7") where the trace kept it, else as gold names it ("…#s4")."""
    return list(model.get("sections") or model.get("cited") or [])


def sheet(rows: list[dict[str, Any]]) -> str:
    wanted = {c for row in rows for c in cited_sections(row["answers"]["model"])}
    texts = provisions(wanted)
    out = ["# Review sheet: every sentence of the model path's answers beside the provisions it cites", ""]
    for row in rows:
        model = row["answers"]["model"]
        answer = model.get("answer") or ""
        markers = marked(answer, cited_sections(model))
        out += [f"## {row['id']} ({row['kind']}): {row['question']}", ""]
        out += [f"- composer: {composer(model)}; verified: {model.get('verified')}; warnings: {model.get('warnings')}"]
        out += [f"- gold: {row.get('gold')}", ""]
        for k, (sentence, _) in enumerate(split_sentences(answer), 1):
            cites = sorted({markers.get(int(m), f"[{m}] unknown") for m in MARKER.findall(sentence)})
            out.append(f"{k}. {' '.join(sentence.split())}  \n   cites: {', '.join(cites) or '-'}")
        out.append("")
        for section in dict.fromkeys(cited_sections(model)):
            out += [f"<details><summary>{section}</summary>", "", provision_text(texts, section), "", "</details>",
                    ""]  # fmt: skip
    return "\n".join(out)


def counts(rows: list[dict[str, Any]], labels: list[dict[str, Any]]) -> str:
    by_id = {row["id"]: composer(row["answers"]["model"]) for row in rows}
    table: Counter[tuple[str, str]] = Counter((by_id.get(label["id"], "?"), label["label"]) for label in labels)
    kinds = sorted({label for _, label in table})
    out = ["| composer | " + " | ".join(kinds) + " |", "| --- |" + " ---: |" * len(kinds)]
    for who in sorted({who for who, _ in table}):
        out.append(f"| {who} | " + " | ".join(str(table[who, kind]) for kind in kinds) + " |")
    wrong = [label for label in labels if label["label"] in ("wrong", "unsupported")]
    out += ["", f"Sentences labelled wrong or unsupported: {len(wrong)}"]
    out += [
        f"- {label['id']} sentence {label['sentence']}: {label['label']}: {label.get('why', '')}" for label in wrong
    ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--labels", type=Path)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.trace.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [row for row in rows if "model" in row.get("answers", {})]
    if args.labels:
        labels = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
        print(counts(rows, labels))
        return
    text = sheet(rows)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(f"{len(rows)} answers", file=sys.stderr)


if __name__ == "__main__":
    main()
