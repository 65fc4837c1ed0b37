"""What the sentence-level AttributionGate decides about the answers a real model wrote, sentence by sentence.

Replays the gate over every model answer the local-model evaluations showed (their traces in benchmarks/results,
as ``benchmarks/topic_check.py`` reads them), each with the provisions it cited read from an ingested data dir and
the question's topic words, and prints how many sentences about the law pass, with every failed sentence and why.
Run it before and after a change to the gate (``--json`` keeps the verdicts to compare): a sentence that passed
before and fails after is either a wrong claim caught or a faithful one lost; read them.

    .venv/bin/python benchmarks/gate_replay.py --data-dir .bench-data --json /tmp/after.json

Only the cited provisions are offered (the traces keep no others), so a failed sentence cannot be re-attributed as
the service might.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from report import publish
from topic_check import TRACES, Replay, shown_answers

from api.composer.answerability import TOPIC_SHARE
from api.composer.citations import MARKER


async def main_async(args: argparse.Namespace) -> list[str]:
    replay = await Replay.open(args.data_dir)
    answers = shown_answers(args.traces)
    verdicts: dict[str, str] = {}
    failed = []
    claims = 0
    for answer in answers:
        gate = replay.gate(answer, TOPIC_SHARE)
        for check in gate.claims:
            claims += 1
            sentence = " ".join(MARKER.sub("", check.text).split())
            verdicts[f"{answer['id']} {sentence}"] = check.verdict
            if check.verdict != "supported":
                why = check.missing_facts or (["opposite"] if check.opposite else check.off_topic) or [
                    f"score {check.score:.2f}"]  # fmt: skip
                failed.append((answer["id"], check.verdict, sentence, ", ".join(why)))
    if args.json:
        args.json.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")
    lines = [
        "# The gate on real model answers (`benchmarks/gate_replay.py`)",
        "",
        f"{len(answers)} distinct model answers from {len(args.traces)} local-model evaluation traces, {claims} "
        f"sentences about the law, replayed with their cited provisions from `{args.data_dir.name}`: "
        f"{claims - len(failed)} pass, {len(failed)} fail.",
        "",
        "| question | verdict | sentence | why |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {q} | {v} | {s[:200].replace('|', '/')} | {w} |" for q, v, s, w in failed]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="An ingested data dir holding the cited Acts.")
    parser.add_argument("--traces", type=Path, nargs="*", default=TRACES, help="Evaluation traces to replay.")
    parser.add_argument("--json", type=Path, help="Write each sentence's verdict here (to compare two runs).")
    parser.add_argument("--out", type=Path, help="Also write the report here.")
    args = parser.parse_args()
    publish(asyncio.run(main_async(args)), args.out)


if __name__ == "__main__":
    main()
