"""Sweep the claim-support threshold over the labelled examples and print the trade-off.

    .venv/bin/python benchmarks/claim_support.py

The examples (tests/data/claim_support.jsonl) pair a sentence with a real provision and say whether the provision
supports it. A sentence whose facts (numbers, dates, named bodies) are missing from the provision fails whatever the
threshold, so the sweep shows how the meaning measure decides the rest. Then the polarity examples
(tests/data/polarity.jsonl): sentences that say the opposite of the clause they share their words with.
"""

from __future__ import annotations

import json
from pathlib import Path

from api.composer.judge.meaning import SUPPORT_THRESHOLD
from api.composer.judge.rules import support

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def main() -> None:
    provisions = json.loads((DATA / "provisions.json").read_text())
    rows = [json.loads(line) for line in (DATA / "claim_support.jsonl").read_text().splitlines() if line.strip()]
    scored = [(support(r["sentence"], provisions[r["provision"]]), bool(r["supported"])) for r in rows]
    positives = sum(label for _, label in scored)
    negatives = len(scored) - positives
    caught_by_facts = sum(bool(s.missing) for s, label in scored if not label)
    print(
        f"{len(scored)} examples: {positives} supported, {negatives} unsupported "
        f"({caught_by_facts} of them caught by the facts check alone)"
    )
    print("| threshold | supported accepted | unsupported rejected | accuracy |")
    print("|---|---|---|---|")
    for step in range(0, 11):
        threshold = step / 10
        accepted = sum(label and not s.missing and s.score >= threshold for s, label in scored)
        rejected = sum(not label and (bool(s.missing) or s.score < threshold) for s, label in scored)
        mark = " (chosen)" if abs(threshold - SUPPORT_THRESHOLD) < 1e-9 else ""
        print(
            f"| {threshold:.1f}{mark} | {accepted}/{positives} | {rejected}/{negatives} | "
            f"{(accepted + rejected) / len(scored):.2%} |"
        )
    flips = [json.loads(line) for line in (DATA / "polarity.jsonl").read_text().splitlines() if line.strip()]
    judged = [(support(r["sentence"], provisions[r["provision"]]), bool(r["supported"])) for r in flips]
    kept = sum(label and s.supported for s, label in judged)
    caught = sum(not label and not s.supported for s, label in judged)
    by_polarity = sum(not label and s.opposite for s, label in judged)
    print(
        f"\npolarity (tests/data/polarity.jsonl): supported kept {kept}/{sum(label for _, label in judged)}, "
        f"opposite rejected {caught}/{sum(not label for _, label in judged)} ({by_polarity} by the polarity check)"
    )


if __name__ == "__main__":
    main()
