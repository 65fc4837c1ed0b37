"""The reviewer's labels replayed through today's gate: which sentences a reviewer marked wrong would still be shown.

A reviewer read every sentence of a real model run against the provision it cites and labelled it
(`benchmarks/review_sheet.py`; the run's trace and labels are in `benchmarks/results/`). Every one of those sentences
had passed the gate of its day. This replays the answers the model wrote (composer "model": the quote-only fallbacks
and abstentions are the service's own composition, which a replay cannot redo) through the gate as it is now, each
with the provisions it cited read from an ingested data dir and the question's topic words
(`benchmarks/topic_check.py`'s `Replay`), and counts, per label, the sentences that would still be shown. The goal
for "wrong" and "unsupported" is none; a sentence labelled supported that now fails is a faithful one lost.

    .venv/bin/python benchmarks/labelled_replay.py --data-dir D [--out R] [--list]

Only the cited provisions are offered (the trace keeps no others), so a failed sentence is not re-attributed as the
service might; and a sentence the gate now removes may leave an answer the service would replace by the quote-only
one. Both make this a replay of the gate's verdicts, not of the answers a reader would get now.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

from report import publish
from review_sheet import composer, marked
from topic_check import Replay

from api.composer.answerability import TOPIC_SHARE, topic_words
from api.composer.citations import MARKER, make_citation
from api.composer.judge.gate import gate_model_answer, passes
from api.orchestrators.query.nodes.common import without_repeal_notes

RESULTS = Path(__file__).resolve().parent / "results"
TRACE = RESULTS / "eval_answers_local_llm_385_review_trace.jsonl"
LABELS = RESULTS / "local_llm_review_labels.jsonl"
KINDS = ("wrong", "unsupported", "supported", "no claim")


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def main_async(args: argparse.Namespace) -> list[str]:
    replay = await Replay.open(args.data_dir)
    labels = {(r["id"], r["sentence"]): r for r in _read(args.labels) if r.get("composer") == "model"}
    shown: Counter[str] = Counter()
    total: Counter[str] = Counter()
    changed: list[str] = []
    for row in _read(args.trace):
        model = (row.get("answers") or {}).get("model") or {}
        if not model or composer(model) != "model":
            continue
        # The notes the service adds after the gate (a repeal, the consolidation quoted) are not the model's words.
        answer = without_repeal_notes(str(model["answer"]))
        sections = marked(answer, list(model.get("cited") or []))
        chunks = replay.first_chunk
        offered = {i: make_citation(i, chunks[s], "") for i, s in sections.items() if s in chunks}
        provisions = {s: replay.corpus.section_text(s) for s in sections.values()}
        topic = topic_words(str(row["question"]), replay.lexical, replay.thesaurus, TOPIC_SHARE)
        # As the service gates a model's answer: a repealed law supports only a sentence that says it is repealed.
        gate = gate_model_answer(answer, offered, provisions, topic, None, replay.corpus.repealed_on(None))
        for k, check in enumerate(gate.sentences, 1):
            label = labels.get((row["id"], k))
            if label is None:
                continue
            kind = str(label["label"])
            total[kind] += 1
            kept = passes(check)
            shown[kind] += kept
            # A fault still shown, or a faithful sentence now held back: the lines worth reading.
            if (kind in ("wrong", "unsupported")) == kept or args.list:
                sentence = " ".join(MARKER.sub("", check.text).split())
                verdict = "shown" if kept else f"held back ({check.verdict})"
                changed.append(f"- {row['id']} s{k} {kind}, now {verdict}: {sentence[:160]}")
    lines = [
        "# Reviewer-labelled model sentences replayed through today's gate",
        "",
        f"Trace `{args.trace.name}`, labels `{args.labels.name}`, provisions from `{args.data_dir}`; the sentences",
        'the model wrote (composer "model"), each as the reader was shown it then.',
        "",
        "| label | sentences | still shown | held back |",
        "| --- | --: | --: | --: |",
    ]
    for kind in KINDS:
        if total[kind]:
            lines.append(f"| {kind} | {total[kind]} | {shown[kind]} | {total[kind] - shown[kind]} |")
    faults = total["wrong"] + total["unsupported"]
    still = shown["wrong"] + shown["unsupported"]
    lines += ["", f"Wrong or unsupported still shown: **{still} of {faults}** (goal: 0).", ""]
    lines += ["Faults still shown, and faithful sentences now held back:" if not args.list else "Every sentence:", ""]
    return lines + changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="An ingested data dir holding the cited Acts.")
    parser.add_argument("--trace", type=Path, default=TRACE, help="The reviewed run's answer trace.")
    parser.add_argument("--labels", type=Path, default=LABELS, help="The reviewer's labels (JSONL).")
    parser.add_argument("--list", action="store_true", help="List every labelled sentence, not only the changes.")
    parser.add_argument("--out", type=Path, help="Also write the report here.")
    args = parser.parse_args()
    publish(asyncio.run(main_async(args)), args.out)


if __name__ == "__main__":
    main()
