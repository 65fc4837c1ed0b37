"""What the topic check (``api.composer.judge.topic.off_topic``) does to the model answers a real model wrote.

Replays the sentence-level AttributionGate over every model answer the local-model evaluations showed (their traces
in benchmarks/results), each with the provisions it cited, read from an ingested data dir: once without the topic
check, then with the question's topic words at several rarity thresholds (the share of chunks a word may be in). A
sentence the check fails repeats one of the question's rare words ("student") that the provision it cites never
mentions, nor its title or heading, nor a legal term the lay-term thesaurus gives for it.

    .venv/bin/python benchmarks/topic_check.py --data-dir .bench-data --out benchmarks/results/topic_check.md

Only the cited provisions are offered to the replayed gate (the traces keep no others), so a failed sentence cannot
be re-attributed here as the service might: the counts are an upper bound on what the check removes. Judge the listed
sentences by reading them: the committed report adds a person's reading of them below its tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from report import publish

from api.composer.answerability import TOPIC_SHARE, topic_words
from api.composer.citations import MARKER, make_citation
from api.composer.judge.gate import GateResult, gate_model_answer
from api.schemas.documents import Chunk
from api.settings import Settings
from api.tools.bm25 import LexicalIndex, load_lexical_index
from api.tools.corpus import Corpus
from api.tools.object_store import build_object_store
from api.tools.thesaurus import Thesaurus, load_thesaurus

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TRACES = sorted(RESULTS.glob("eval_answers_local_llm*trace.jsonl"))
SHARES = (0.05, 0.03, TOPIC_SHARE, 0.011, 0.0067)  # about idf 3, 3.5, 4, 4.5, 5


def shown_answers(paths: Sequence[Path]) -> list[dict[str, object]]:
    """Each distinct model answer the traces showed (not abstentions), with its question and cited sections."""
    seen: set[str] = set()
    answers = []
    for path in paths:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            model = (record.get("answers") or {}).get("model") or {}
            if not model or model.get("abstained") or not model.get("cited") or model["answer"] in seen:
                continue
            # The gate numbers citations in order of first use, so the markers in order are the cited sections.
            markers = list(dict.fromkeys(int(m) for m in MARKER.findall(model["answer"])))
            if len(markers) != len(model["cited"]):
                continue
            seen.add(model["answer"])
            sections = dict(zip(markers, model["cited"], strict=True))
            answers.append({"id": record["id"], "kind": record["kind"], "question": record["question"],
                            "answer": model["answer"], "sections": sections})  # fmt: skip
    return answers


@dataclass(frozen=True, slots=True)
class Replay:
    """An ingested data dir to replay the gate over recorded answers with: each answer's cited provisions, offered
    as the bundle would offer them, and the question's topic words."""

    corpus: Corpus
    lexical: LexicalIndex
    thesaurus: Thesaurus
    first_chunk: dict[str, Chunk]

    @classmethod
    async def open(cls, data_dir: Path) -> Replay:
        settings = Settings(data_dir=data_dir)
        store = build_object_store(settings.object_store, data_dir)
        corpus = await Corpus.load(store)
        first_chunk: dict[str, Chunk] = {}
        for chunk in corpus.chunks.values():
            first_chunk.setdefault(chunk.chunk_id.split("/c", 1)[0], chunk)
        return cls(corpus, await load_lexical_index(store, settings.bm25), load_thesaurus(), first_chunk)

    def gate(self, answer: dict[str, object], max_share: float | None) -> GateResult:
        """The gate's verdict on ``answer`` (from ``shown_answers``); topic words at ``max_share`` (None: no topic
        check)."""
        sections: dict[int, str] = answer["sections"]  # type: ignore[assignment]
        offered = {i: make_citation(i, self.first_chunk[s], "") for i, s in sections.items() if s in self.first_chunk}
        provisions = {s: self.corpus.section_text(s) for s in sections.values()}
        question = str(answer["question"])
        topic = None if max_share is None else topic_words(question, self.lexical, self.thesaurus, max_share)
        return gate_model_answer(str(answer["answer"]), offered, provisions, topic)


async def main_async(args: argparse.Namespace) -> list[str]:
    replay = await Replay.open(args.data_dir)
    answers = shown_answers(args.traces)
    baseline = [replay.gate(a, None) for a in answers]
    claims = sum(len(g.claims) for g in baseline)
    failed_before = sum(len(g.failed) for g in baseline)
    lines = [
        "# The topic check on real model answers (`benchmarks/topic_check.py`)",
        "",
        f"{len(answers)} distinct model answers shown in {len(args.traces)} local-model evaluation traces, "
        f"{claims} sentences about the law; replayed through the gate with their cited provisions from "
        f"`{args.data_dir.name}` ({len(replay.corpus)} chunks). Without the topic check the replayed gate fails "
        f"{failed_before} of them (the traces hold the gate's own output, so these are re-checks of provisions the "
        "gate attached, e.g. after a corrective search that the replay cannot repeat).",
        "",
        "What the reader would be shown of the answers that passed without it: the whole answer, the answer without "
        "the failed sentences (`model_trimmed`, a warning says so), or, when more than half its sentences fail, the "
        "verified quotes instead (`extractive`).",
        "",
        "| topic words: in at most this share of chunks | sentences failed by the topic check | answers touched | "
        "shown whole / trimmed / quotes instead |",
        "| --- | --- | --- | --- |",
    ]
    flagged_at: dict[float, list[tuple[dict[str, object], str, list[str]]]] = {}
    for share in SHARES:
        flagged = []
        shown = {"whole": 0, "trimmed": 0, "quotes": 0}
        for answer, before in zip(answers, baseline, strict=True):
            after = replay.gate(answer, share)
            passed_before = {c.text for c in before.claims if c.verdict == "supported"}
            flagged += [(answer, c.text, c.off_topic) for c in after.claims if c.text in passed_before and c.off_topic]
            if before.passed:
                shown["whole" if after.passed else "trimmed" if after.usable else "quotes"] += 1
        flagged_at[share] = flagged
        mark = " (chosen)" if share == TOPIC_SHARE else ""
        touched = len({str(a["answer"]) for a, _, _ in flagged})
        outcome = f"{shown['whole']} / {shown['trimmed']} / {shown['quotes']}"
        lines.append(f"| {share:.2%}{mark} | {len(flagged)} | {touched} | {outcome} |")
    lines += ["", f"Sentences failed at the chosen share ({TOPIC_SHARE:.1%}):", ""]
    lines += ["| question | kind | sentence | topic words its provision lacks |", "| --- | --- | --- | --- |"]
    for answer, text, words in flagged_at[TOPIC_SHARE]:
        sentence = " ".join(MARKER.sub("", text).split()).replace("|", "/")
        lines.append(f"| {answer['id']} | {answer['kind']} | {sentence[:220]} | {', '.join(words)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="An ingested data dir holding the cited Acts.")
    parser.add_argument("--traces", type=Path, nargs="*", default=TRACES, help="Evaluation traces to replay.")
    parser.add_argument("--out", type=Path, help="Also write the report here.")
    args = parser.parse_args()
    publish(asyncio.run(main_async(args)), args.out)


if __name__ == "__main__":
    main()
