"""The gate over the labelled probe answers (``evaluation/gate_probes.jsonl``): short model answers that tempt its
readings of a quote, each labelled before it was run. The share it judges as labelled is pinned, and every probe
streamed a few characters at a time shows exactly what the whole answer keeps. ``benchmarks/gate_probes.py`` prints
the same figures probe by probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.composer.judge.gate import SentenceGate, gate_model_answer, passes
from api.composer.judge.streaming import GatedTracker
from api.schemas.events import Citation
from ingestion.parsers.jsonl import without_next_heading

PROBES = [
    json.loads(line)
    for line in (Path(__file__).parent.parent / "evaluation" / "gate_probes.jsonl").read_text().splitlines()
    if line.strip()
]
RIGHT = 138
"""Probes judged as labelled, as last measured (benchmarks/results/gate_probes.md): a floor."""


@pytest.fixture(scope="module")
def cited(shared_data: Path) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(title, heading, full text) of every section a probe cites, as ingestion reads it."""
    wanted = {(c["law_id"], c["section"].removeprefix("s")) for p in PROBES for c in p["cites"]}
    found: dict[tuple[str, str], tuple[str, str, str]] = {}
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            law = json.loads(line)
            for section in law["sections"]:
                key = (law["id"], str(section["section"]))
                if key in wanted and key not in found:
                    text = without_next_heading(str(section.get("text") or "").strip())
                    found[key] = (law["title"], section["heading"], text)
    assert set(found) == wanted
    return found


def offered(probe: dict, cited: dict[tuple[str, str], tuple[str, str, str]]) -> tuple[dict[int, Citation], dict]:
    citations, texts = {}, {}
    for index, cite in enumerate(probe["cites"], 1):
        number = cite["section"].removeprefix("s")
        title, heading, text = cited[(cite["law_id"], number)]
        section_id = f"{cite['law_id']}#s{number}"
        citations[index] = Citation(index=index, doc_key=cite["law_id"], title=title, section=f"section {number}",
                                    section_id=section_id, heading=heading, chunk_id=f"{section_id}/c0",
                                    quote=text[:200])  # fmt: skip
        texts[section_id] = text
    return citations, texts


def test_the_probes_are_labelled_both_ways_and_name_their_sections() -> None:
    assert len(PROBES) >= 100 and len({p["id"] for p in PROBES}) == len(PROBES)
    assert sum(p["supported"] for p in PROBES) >= 10 and sum(not p["supported"] for p in PROBES) >= 30
    assert all(p["cites"] and "[1]" in p["answer"] for p in PROBES)


async def test_the_gate_judges_the_probes_as_labelled_and_streams_what_it_keeps_whole(cited: dict) -> None:
    right, wrong_ids = 0, []
    for probe in PROBES:
        citations, texts = offered(probe, cited)
        whole = gate_model_answer(probe["answer"], citations, texts)
        tracker = GatedTracker(citations, lambda _: None, SentenceGate(citations, texts))
        for start in range(0, len(probe["answer"]), 5):
            tracker.feed(probe["answer"][start : start + 5])
            await tracker.settle()
        await tracker.close(True)
        assert " ".join(tracker.shown.split()) == " ".join(whole.answer.split()), probe["id"]
        if all(passes(check) for check in whole.sentences) == probe["supported"]:
            right += 1
        else:
            wrong_ids.append(probe["id"])
    assert right >= RIGHT, wrong_ids
