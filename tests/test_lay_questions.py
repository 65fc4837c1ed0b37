"""The lay-question set (evaluation/lay_questions.jsonl): shape, gold provisions that exist, verbatim quotes, absence
patterns that match nothing, the held-out rule and the subject spread, checked against the shared corpus."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAY = ROOT / "evaluation" / "lay_questions.jsonl"
FIELDS = {"id", "question", "gold", "answer", "quote", "kind", "audience", "subject", "split"}


def collapse(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LAY.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sections(shared_data: Path) -> dict[str, dict[str, list[str]]]:
    """Per law id, per section ref, the texts of every section with that ref (a ref may repeat within a law)."""
    out: dict[str, dict[str, list[str]]] = {}
    with (shared_data / "corpus" / "zimbabwe_legislation" / "acts.jsonl").open(encoding="utf-8") as f:
        for line in f:
            act = json.loads(line)
            refs: dict[str, list[str]] = {}
            for section in act["sections"]:
                refs.setdefault(section["ref"], []).append(section["text"])
            out[act["id"]] = refs
    return out


def test_every_record_has_the_evaluators_fields_and_a_unique_id(records: list[dict[str, Any]]) -> None:
    assert records
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))
    for r in records:
        assert FIELDS <= set(r), r["id"]
        assert r["kind"] in {"paraphrase", "unanswerable"}, r["id"]
        assert r["split"] in {"dev", "heldout"}, r["id"]
        assert r["audience"] == "citizen", r["id"]
        assert r["question"].strip().endswith("?"), r["id"]
        if r["kind"] == "unanswerable":
            assert r["gold"] == [] and r["quote"] == "" and r["answer"] == "not in corpus", r["id"]
            assert r["absence_check"] and r["near_miss"], r["id"]
        else:
            assert r["gold"] and r["answer"], r["id"]
            assert 8 <= len(r["quote"].split()) <= 30, r["id"]
    assert {r["kind"] for r in records} == {"paraphrase", "unanswerable"}


def test_every_gold_provision_names_exactly_one_section_and_holds_the_quote(
    records: list[dict[str, Any]], sections: dict[str, dict[str, list[str]]]
) -> None:
    for r in records:
        texts = []
        for g in r["gold"]:
            found = sections.get(g["law_id"], {}).get(g["section"], [])
            assert len(found) == 1, f"{r['id']}: {g} names {len(found)} sections"
            texts += found
        if r["gold"]:
            assert any(collapse(r["quote"]) in collapse(t) for t in texts), f"{r['id']}: quote not in a gold section"


def test_the_near_miss_act_exists_and_no_section_matches_an_absence_pattern(
    records: list[dict[str, Any]], sections: dict[str, dict[str, list[str]]]
) -> None:
    every = [text for refs in sections.values() for texts in refs.values() for text in texts]
    for r in records:
        if r["kind"] != "unanswerable":
            continue
        assert r["near_miss"] in sections, r["id"]
        pattern = re.compile(r["absence_check"], re.I)
        hits = sum(bool(pattern.search(t)) for t in every)
        assert hits == 0, f"{r['id']}: {r['absence_check']!r} matches {hits} sections"


def test_the_held_out_fifth_follows_the_block_rule(records: list[dict[str, Any]]) -> None:
    for kind in ("paraphrase", "unanswerable"):
        group = [r for r in records if r["kind"] == kind]
        for start in range(0, len(group), 5):
            block = group[start : start + 5]
            lowest = min(block, key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
            assert [r["split"] for r in block] == ["heldout" if r is lowest else "dev" for r in block]
    answerable = [r for r in records if r["kind"] == "paraphrase"]
    by_subject = Counter(r["subject"] for r in answerable)
    # Each subject's answerable questions are contiguous and a multiple of five, so its held-out share is a fifth.
    assert all(n % 5 == 0 for n in by_subject.values()), by_subject
    held = Counter(r["subject"] for r in answerable if r["split"] == "heldout")
    assert all(held[s] * 5 == n for s, n in by_subject.items()), (held, by_subject)


def test_the_set_spreads_over_acts_and_subjects(records: list[dict[str, Any]]) -> None:
    acts = {g["law_id"] for r in records for g in r["gold"]}
    assert len(acts) >= 15, len(acts)
    subjects = Counter(r["subject"] for r in records)
    assert max(subjects.values()) <= len(records) / 10, subjects.most_common(3)
