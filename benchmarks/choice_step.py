"""The multiple-choice selection step alone, given perfect research: each question's gold provisions are the only
evidence, so what is wrong here is the choice step's own error, apart from retrieval's.

    .venv/bin/python benchmarks/choice_step.py [--out benchmarks/results/choice_step.md]

Reads evaluation/mc_questions.jsonl and the Acts in ../shared/data/corpus/zimbabwe_legislation/acts.jsonl; runs
the same ``by_evidence`` the graph's ``select_choice`` node runs without a model. No model, no index, a few seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from report import SHARED, publish

from api.evaluation_choices import BANDS, band_of, load_choice_questions
from api.orchestrators.query.choices import by_evidence, split_choices

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=Path, default=ROOT / "evaluation" / "mc_questions.jsonl")
    parser.add_argument("--acts", type=Path, default=SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    questions = load_choice_questions(args.questions)
    wanted = {g.split("#")[0] for q in questions for g in q.gold}
    sections: dict[str, str] = {}
    for line in args.acts.read_text().splitlines():
        act = json.loads(line)
        if act["id"] in wanted:
            sections.update({f"{act['id']}#{s['ref']}": s["text"] for s in act["sections"]})
    rows, picked, times = [], [], []
    for q in questions:
        evidence = {i: sections[g] for i, g in enumerate(sorted(q.gold), 1)}
        start = time.perf_counter()
        choice = by_evidence(split_choices(q.question)[0], q.choices, evidence)
        times.append((time.perf_counter() - start) * 1000)
        right = choice.letter == q.answer
        supported = "".join(c.letter for c in choice.choices if c.supported) or "–"
        rows.append(f"| {q.qid} | {q.kind} | {q.answer} | {choice.letter or '–'}{'' if right else ' ✗'} | "
                    f"{choice.confidence:.2f} | {supported} |")  # fmt: skip
        if choice.letter:
            picked.append((choice.confidence, right))
    correct = sum(right for _, right in picked)
    lines = [
        "# The choice step alone (gold provisions as the only evidence)", "",
        f"- questions: `{args.questions.name}`, {len(questions)}; selection: `by_evidence` (no model)",
        f"- right: {correct}/{len(questions)} ({correct / len(questions):.2f}); no letter: "
        f"{len(questions) - len(picked)}; time per selection: mean {sum(times) / len(times):.1f} ms, "
        f"max {max(times):.1f} ms",
        "", "| stated confidence | with a letter | right |", "| --- | ---: | ---: |",
    ]  # fmt: skip
    for i in range(len(BANDS) - 1):
        band = [right for confidence, right in picked if band_of(confidence) == i]
        top = "]" if i == len(BANDS) - 2 else ")"
        lines.append(f"| [{BANDS[i]:.1f}, {BANDS[i + 1]:.1f}{top} | {len(band)} | {sum(band)} |")
    lines += ["", "| id | kind | right | picked | confidence | choices the provision supports |",
              "| --- | --- | --- | --- | ---: | --- |", *rows]  # fmt: skip
    publish(lines, args.out)


if __name__ == "__main__":
    main()
