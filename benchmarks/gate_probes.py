"""The gate over labelled probe answers: whole, and as the answer streams.

Each probe of ``evaluation/gate_probes.jsonl`` is a short model answer citing one or two sections of the shared
corpus, labelled before it was run: ``supported`` true when every claim in it is supported by what it cites. Most are
built to tempt the gate's readings of a quote (a figure or a year beside a true quote, words that relate two quotes,
a quote cut from its case, its exception or its negation, a quotation never closed, a law named by another year).
Each is judged by ``gate_model_answer`` over the cited sections' full text, and streamed a few characters at a time
through the ``GatedTracker`` the service streams with; the report counts the probes whose verdict (every sentence
passes, or not) matches the label, lists each probe, and says whether the streamed text equals the whole answer's.

    .venv/bin/python benchmarks/gate_probes.py --out benchmarks/results/gate_probes.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from claim_judge import read_sections
from report import SHARED, publish

from api.composer.judge.gate import SentenceGate, gate_model_answer, passes
from api.composer.judge.streaming import GatedTracker
from api.schemas.events import Citation

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "evaluation" / "gate_probes.jsonl"
STEP = 5
"""Characters fed to the streaming gate at a time."""


def offered(probe: dict[str, object], sections: dict[tuple[str, str], list]) -> tuple[dict[int, Citation], dict]:
    """The citations a probe's markers name, and the full text of each cited section."""
    citations, texts = {}, {}
    for index, cite in enumerate(probe["cites"], 1):  # type: ignore[arg-type]
        number = str(cite["section"]).removeprefix("s")
        section = sections[(cite["law_id"], number)][0]
        section_id = f"{cite['law_id']}#s{number}"
        citations[index] = Citation(index=index, doc_key=cite["law_id"], title=section.title,
                                    section=f"section {number}", section_id=section_id, heading=section.heading,
                                    chunk_id=f"{section_id}/c0", quote=section.text[:200])  # fmt: skip
        texts[section_id] = section.text
    return citations, texts


async def streamed(text: str, citations: dict[int, Citation], texts: dict[str, str]) -> str:
    """What the streaming gate shows of ``text`` fed ``STEP`` characters at a time."""
    tracker = GatedTracker(citations, lambda _: None, SentenceGate(citations, texts))
    for start in range(0, len(text), STEP):
        tracker.feed(text[start : start + STEP])
        await tracker.settle()
    await tracker.close(True)
    return tracker.shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED, help="the shared data folder (its corpus is read)")
    parser.add_argument("--probes", type=Path, default=PROBES)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    probes = [json.loads(line) for line in args.probes.read_text(encoding="utf-8").splitlines() if line.strip()]
    sections = read_sections(args.data_dir, {c["law_id"] for p in probes for c in p["cites"]})
    rows, right, agree = [], 0, 0
    for probe in probes:
        citations, texts = offered(probe, sections)
        gate = gate_model_answer(probe["answer"], citations, texts)
        verdicts = ["pass" if passes(check) else "fail" for check in gate.sentences]
        shown = asyncio.run(streamed(probe["answer"], citations, texts))
        same = " ".join(shown.split()) == " ".join(gate.answer.split())
        verdict = all(v == "pass" for v in verdicts)
        right += verdict == probe["supported"]
        agree += same
        label = "supported" if probe["supported"] else "unsupported"
        mark = "right" if verdict == probe["supported"] else "**wrong**"
        rows.append(f"| {probe['id']} | {label} | {', '.join(verdicts)} | {mark} | {'yes' if same else '**no**'} |")
        print(f"{probe['id']} {label} {verdicts} {mark}", file=sys.stderr)
    supported = sum(p["supported"] for p in probes)
    lines = [
        "# The gate over labelled probe answers",
        "",
        f"- probes: {args.probes.name} ({len(probes)}: {supported} supported, {len(probes) - supported} not)",
        f"- verdict matches the label (every sentence passes exactly when the probe is supported): **{right} of "
        f"{len(probes)}**",
        f"- streamed text ({STEP} characters at a time) equal to the whole answer's: {agree} of {len(probes)}",
        "",
        "| probe | label | sentences (whole) | verdict | streamed = whole |",
        "| --- | --- | --- | --- | --- |",
        *rows,
    ]
    publish(lines, args.out)


if __name__ == "__main__":
    main()
