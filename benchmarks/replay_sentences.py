"""The sentences about the law a real model wrote, each with the provisions it cited: a worksheet to label, and the
rules judge scored against the labels.

Takes the model answers the local-model evaluations showed (their traces in benchmarks/results, read as
``benchmarks/gate_replay.py`` reads them: ``topic_check.shown_answers``) and splits each into sentences exactly as
the gate does (``gate_model_answer``: its sentence split, its marker → citation mapping, its test of which sentences
state something about the law). Each cited provision is read straight from the shared corpus's ``acts.jsonl``
through the ingestion parser, so no ingested data dir is needed; the gate reads a section as its chunks joined by
line breaks, which differs from the section's text only in whitespace at chunk boundaries, and the checks read text
with whitespace folded.

    .venv/bin/python benchmarks/replay_sentences.py worksheet --out /tmp/replay_worksheet.jsonl
    .venv/bin/python benchmarks/replay_sentences.py score --out benchmarks/results/replay_labels.md

``worksheet`` writes one line per distinct (sentence, cited provisions) pair with the provisions' text, for a
reader to label; ``score`` reads the labels (``evaluation/replay_labels.jsonl``) and reports the rules judge's
verdicts (the gate replayed with ``RulesJudge``) against them. ``--topic`` adds the question's topic words, which
needs the corpus's word rarity: all 385 Acts are chunked (no embedding) to count it, about a minute.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from report import SHARED, publish
from topic_check import ROOT, TRACES, shown_answers

from api.composer.answerability import TOPIC_SHARE, topic_words
from api.composer.citations import MARKER, Citation, make_citation
from api.composer.judge.gate import SentenceCheck, gate_model_answer
from api.composer.judge.rules import RulesJudge
from api.composer.judge.topic import Topic
from api.schemas.documents import Chunk, Document
from api.text.words import stem
from api.tools.bm25 import lexical_tokens
from api.tools.embeddings import load_sentence_transformer
from api.tools.thesaurus import load_thesaurus
from ingestion.chunking import chunk_document
from ingestion.parsers import parse

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
LABELS = ROOT / "evaluation" / "replay_labels.jsonl"


def read_laws(law_ids: set[str] | None) -> list[Document]:
    """The laws ``law_ids`` (all, given None) parsed from the shared corpus as ingestion parses them."""
    rows = [line for line in ACTS.read_text().splitlines() if law_ids is None or json.loads(line)["id"] in law_ids]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "acts.jsonl"
        path.write_text("\n".join(rows))
        return parse(path, path.read_bytes())


def section_chunk(document: Document, index: int) -> Chunk:
    """A section of ``document`` as one chunk: what a citation of it is made from."""
    section = document.sections[index]
    return Chunk(
        chunk_id=f"{section.section_id}/c0", doc_key=document.doc_key, section_id=section.section_id,
        section_number=section.number, section_heading=section.heading, title=document.title,
        jurisdiction=document.jurisdiction, text=section.text, ordinal=0, provision_id=section.section_id,
        doc_type=document.doc_type, date=document.date,
    )  # fmt: skip


class Rarity:
    """How many chunks of the corpus hold a word's family: what ``topic_words`` asks of a lexical index."""

    def __init__(self, documents: Sequence[Document]) -> None:
        tokenizer = load_sentence_transformer().tokenizer

        def count(text: str) -> int:
            return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

        chunks = [c for d in documents for c in chunk_document(d, count)]
        tokens, _ = lexical_tokens(chunks)
        self.families: Counter[str] = Counter()
        for words in tokens:
            self.families.update({stem(w) for w in words})
        self.size = len(chunks)

    def family_frequency(self, term: str) -> int:
        return self.families[stem(term)]

    def __len__(self) -> int:
        return self.size


@dataclass(slots=True)
class Sentence:
    """One distinct (sentence, cited provisions) pair and the gate's verdicts on it, in every answer that wrote it."""

    answer_id: str
    sentence: str
    cited: list[str]
    answers: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    supported_by: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Whether the gate let it through in any answer that wrote it (the reader saw it there)."""
        return "supported" in self.verdicts


def _why(check: SentenceCheck) -> str:
    if check.verdict == "supported":
        return ""
    reasons = check.missing_facts or (["opposite"] if check.opposite else check.off_topic)
    return ", ".join(reasons) if reasons else f"score {check.score:.2f}"


def replay(with_topic: bool) -> tuple[list[Sentence], dict[str, str], int, int]:
    """Every distinct sentence about the law in the traces' answers, the cited provisions' text, how many sentences
    there were before removing repeats, and how many answers held them."""
    answers = shown_answers(TRACES)
    cited_ids = {s for a in answers for s in a["sections"].values()}  # type: ignore[attr-defined]
    documents = read_laws(None if with_topic else {s.split("#", 1)[0] for s in cited_ids})
    chunks: dict[str, Chunk] = {}
    texts: dict[str, str] = {}
    for document in documents:
        for k, section in enumerate(document.sections):
            if section.section_id in cited_ids:
                chunks[section.section_id] = section_chunk(document, k)
                texts[section.section_id] = section.text
    rarity = Rarity(documents) if with_topic else None
    thesaurus = load_thesaurus()
    found: dict[tuple[str, tuple[str, ...]], Sentence] = {}
    claims = 0
    for answer in answers:
        sections: Mapping[int, str] = answer["sections"]  # type: ignore[assignment]
        offered: dict[int, Citation] = {i: make_citation(i, chunks[s], "") for i, s in sections.items() if s in chunks}
        topic: Topic | None = None
        if rarity is not None:
            topic = topic_words(str(answer["question"]), rarity, thesaurus, TOPIC_SHARE)  # type: ignore[arg-type]
        gate = gate_model_answer(str(answer["answer"]), offered, texts, topic, RulesJudge())
        for check in gate.claims:
            claims += 1
            sentence = " ".join(MARKER.sub("", check.text).split())
            named = list(dict.fromkeys(sections[i] for i in [*check.markers, *check.referenced] if i in sections))
            # A sentence that cites nothing is judged against every provision the answer cites, as the gate does.
            named = named or list(dict.fromkeys(sections[i] for i in offered))
            key = (sentence, tuple(named))
            entry = found.setdefault(key, Sentence(str(answer["id"]), sentence, named))
            entry.answers.append(str(answer["id"]))
            entry.verdicts.append(check.verdict)
            entry.supported_by += [sections[i] for i in check.cited if sections[i] not in entry.supported_by]
            entry.why.append(_why(check))
    return list(found.values()), texts, claims, len(answers)


def worksheet(args: argparse.Namespace) -> None:
    sentences, texts, claims, _ = replay(args.topic)
    with args.out.open("w") as out:
        for n, s in enumerate(sentences):
            row = {"n": n, "answer_id": s.answer_id, "sentence": s.sentence, "cited": s.cited,
                   "verdicts": s.verdicts, "supported_by": s.supported_by, "why": s.why,
                   "provisions": {c: texts.get(c, "") for c in s.cited}}  # fmt: skip
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{claims} sentences about the law, {len(sentences)} distinct (sentence, provisions) pairs -> {args.out}")  # noqa: T201


def _cell(text: str, limit: int = 260) -> str:
    text = text.replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def confusion(labels: Sequence[dict[str, object]], found: Mapping[tuple[str, tuple[str, ...]], Sentence]) -> str:
    """The labels against the gate's verdicts as one line: each cell's distinct sentences."""
    cells: Counter[tuple[bool, bool]] = Counter()
    for label in labels:
        entry = found[_key(label)]
        cells[bool(label["supported"]), entry.passed] += 1
    return (f"supported and passed {cells[True, True]}, supported but failed {cells[True, False]}, "
            f"unsupported but passed {cells[False, True]}, unsupported and failed {cells[False, False]}")  # fmt: skip


def _key(label: Mapping[str, object]) -> tuple[str, tuple[str, ...]]:
    return str(label["sentence"]), tuple(str(c) for c in label["cited"])  # type: ignore[attr-defined]


def score(args: argparse.Namespace) -> None:
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    sentences, _, claims, shown_count = replay(not args.no_topic)
    found = {(s.sentence, tuple(s.cited)): s for s in sentences}
    unmatched = [label for label in labels if _key(label) not in found]
    if unmatched:
        raise SystemExit(f"{len(unmatched)} labels name a sentence the replay does not find, e.g. {unmatched[0]}")
    labelled = {_key(label) for label in labels}
    unlabelled = [s for s in sentences if (s.sentence, tuple(s.cited)) not in labelled]
    questions = {a for s in sentences for a in s.answers}
    wrong = [label for label in labels if not label["supported"]]
    seen = {_key(label): len(found[_key(label)].verdicts) for label in labels}
    mixed = sum(1 for s in sentences if len({v == "supported" for v in s.verdicts}) > 1)
    cells: dict[tuple[bool, bool], list[dict[str, object]]] = {(a, b): [] for a in (True, False) for b in (True, False)}
    for label in labels:
        cells[bool(label["supported"]), found[_key(label)].passed].append(label)
    shown = sum(seen[_key(label)] for label in cells[False, True])
    topic = "without the topic check" if args.no_topic else f"with the question's topic words (share {TOPIC_SHARE})"
    lines = [
        "# The rules judge against a reader's labels, on real model sentences (`benchmarks/replay_sentences.py`)",
        "",
        f"{shown_count} distinct model answers to {len(questions)} questions, from {len(TRACES)} local-model "
        f"evaluation traces, hold {claims} "
        f"sentences about the law (the gate's own split); {len(sentences)} distinct (sentence, cited provisions) "
        f"pairs. {len(labels)} are labelled in `evaluation/replay_labels.jsonl` by a reviewer reading each cited "
        f"provision in the shared corpus ({len(unlabelled)} unlabelled): {len(labels) - len(wrong)} supported, "
        f"{len(wrong)} unsupported.",
        "",
        f"The gate's verdicts: `gate_model_answer` with `RulesJudge`, {topic}, on the cited provisions' text read from "
        "the shared corpus. A pair counts as passed when the gate let it through in any answer that wrote it "
        f"({mixed} pairs had different verdicts in different answers).",
        "",
        "| label \\ gate | passed | failed |",
        "| --- | ---: | ---: |",
        f"| supported | {len(cells[True, True])} | {len(cells[True, False])} |",
        f"| unsupported | {len(cells[False, True])} | {len(cells[False, False])} |",
        "",
    ]
    passed = len(cells[True, True]) + len(cells[False, True])
    slipped = len(cells[False, True])
    if passed and wrong:
        lines += [
            f"Of the {passed} pairs the gate passed, {slipped} ({slipped / passed:.0%}) "
            f"are unsupported ({shown} times shown in the traces' answers); of the {len(wrong)} unsupported, the gate "
            f"failed {len(cells[False, False])} ({len(cells[False, False]) / len(wrong):.0%}). Of the "
            f"{len(labels) - len(wrong)} supported, it failed {len(cells[True, False])}.",
            "",
        ]
    if args.compare:
        baseline, _, _, _ = replay(False)
        lines += [
            f"Without the topic check: {confusion(labels, {(s.sentence, tuple(s.cited)): s for s in baseline})}.",
            "",
        ]
    kinds = Counter(str(label["kind"]) for label in wrong)
    lines += ["Unsupported, by kind (passed by the gate / all):", ""]
    passed_kinds = Counter(str(label["kind"]) for label in cells[False, True])
    lines += [f"- `{kind}`: {passed_kinds[kind]} / {n}" for kind, n in kinds.most_common()]
    lines += [
        "",
        "## Wrong but passed",
        "",
        "| answer | kind | sentence | provision | why |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label in sorted(cells[False, True], key=lambda x: (str(x["kind"]), str(x["answer_id"]))):
        provision = f"{label['law_id']}#{label['section']}"
        lines.append(f"| {label['answer_id']} | {label['kind']} | {_cell(str(label['sentence']))} | {provision} | "
                     f"{_cell(str(label['why']), 400)} |")  # fmt: skip
    lines += [
        "",
        "## Right but failed",
        "",
        "| kind | answer | sentence | gate's reason |",
        "| --- | --- | --- | --- |",
    ]
    for label in sorted(cells[True, False], key=lambda x: (str(x["kind"]), str(x["answer_id"]))):
        entry = found[_key(label)]
        reason = "; ".join(sorted({f"{v}: {w}" for v, w in zip(entry.verdicts, entry.why, strict=True) if w}))
        lines.append(f"| {label['kind']} | {label['answer_id']} | {_cell(str(label['sentence']))} | {reason} |")
    publish(lines, args.out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    sheet = sub.add_parser("worksheet", help="Write the sentences to label, with their provisions' text.")
    sheet.add_argument("--out", type=Path, required=True)
    sheet.add_argument("--topic", action="store_true", help="Judge with the question's topic words.")
    sheet.set_defaults(run=worksheet)
    scored = sub.add_parser("score", help="Report the rules judge's verdicts against the labels.")
    scored.add_argument("--labels", type=Path, default=LABELS)
    scored.add_argument("--no-topic", action="store_true", help="Judge without the question's topic words (faster).")
    scored.add_argument("--compare", action="store_true", help="Also give the matrix without the topic check.")
    scored.add_argument("--out", type=Path, help="Also write the report here.")
    scored.set_defaults(run=score)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
