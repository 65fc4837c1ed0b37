"""Run a claim judge over the labelled contract suite and print its precision and recall, part by part.

    .venv/bin/python benchmarks/claim_judge.py [--judge rules] [--data-dir ../shared/data] [--out FILE]

The parts, each reported on its own:
- the old cases: ``tests/data/claim_support.jsonl`` and ``tests/data/polarity.jsonl`` (provisions in
  ``tests/data/provisions.json``);
- the new pairs' development part and, separately, their held-out part (``evaluation/claim_pairs.jsonl``; each
  provision read from the Zimbabwe legislation corpus under ``--data-dir``);
- the labelled real-model sentences (``evaluation/replay_labels.jsonl``), when that file exists.

Each sentence is judged as the gate judges it in service: against the cited section's text, with the provision's
heading and its identity (title, "section N", heading). The pairs carry no question, so the topic is empty: the
question-topic check (a sentence that applies a provision to a topic of the question the provision never mentions)
is not exercised here. "Supported" is the positive class: precision is the share of sentences the judge passes that
are supported, recall the share of supported sentences it passes, and "caught" the share of unsupported sentences it
rejects. With ``--errors``, the judge's mistakes on the development part (never the held-out part) are listed by kind.

``judge_suite(judge, cases)`` and ``report(name, judge, …)`` take any ``ClaimJudge``; ``--judge`` names one of
``api.composer.judge.JudgeName`` (repeat it to report several judges one after another).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import httpx
from report import SHARED, publish

from api.composer.judge import ClaimJudge, JudgeName, build_claim_judge, llm_asker, reasons
from api.composer.skills import load_skills
from api.composer.verification import identity
from api.schemas.events import Citation
from api.settings import GateSettings, LLMSettings
from api.tools.llm import build_llm

ROOT = Path(__file__).resolve().parent.parent
TESTS_DATA = ROOT / "tests" / "data"
PAIRS = ROOT / "evaluation" / "claim_pairs.jsonl"
REPLAY = ROOT / "evaluation" / "replay_labels.jsonl"
CORPUS = Path("corpus") / "zimbabwe_legislation" / "acts.jsonl"


@dataclass(frozen=True)
class Case:
    """One labelled sentence and the provision it cites, as the gate would be given them."""

    sentence: str
    provision: str
    supported: bool
    kind: str
    identity: str = ""
    heading: str = ""
    id: str = ""


@dataclass
class Figures:
    """A judge's verdicts on one part of the suite, against the labels."""

    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0
    true_negative: int = 0
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)
    """kind -> counts of "tp", "fp", "fn", "tn"."""
    errors: list[tuple[Case, str]] = field(default_factory=list)
    """(case, why the judge decided as it did) for every wrong verdict."""

    @property
    def total(self) -> int:
        return self.true_positive + self.false_positive + self.false_negative + self.true_negative

    @property
    def precision(self) -> float:
        return self.true_positive / max(1, self.true_positive + self.false_positive)

    @property
    def recall(self) -> float:
        return self.true_positive / max(1, self.true_positive + self.false_negative)

    @property
    def caught(self) -> float:
        """The share of unsupported sentences the judge rejects."""
        return self.true_negative / max(1, self.true_negative + self.false_positive)


@dataclass(frozen=True)
class Section:
    law_id: str
    title: str
    number: str
    heading: str
    text: str

    @property
    def identity(self) -> str:
        """How the gate names the provision when a sentence cites it."""
        cited = Citation(index=1, doc_key=self.law_id, title=self.title, section_id=f"{self.law_id}#s{self.number}",
                         section=f"section {self.number}", heading=self.heading, chunk_id="", quote="")  # fmt: skip
        return identity(cited)


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_sections(data_dir: Path, law_ids: Iterable[str]) -> dict[tuple[str, str], list[Section]]:
    """The sections of the named laws, by (law id, section number), as ingestion reads them (text stripped, empty
    sections left out)."""
    wanted = set(law_ids)
    found: dict[tuple[str, str], list[Section]] = {}
    with (data_dir / CORPUS).open(encoding="utf-8") as corpus:
        for line in corpus:
            law = json.loads(line)
            if law["id"] not in wanted:
                continue
            for raw in law["sections"]:
                text = str(raw.get("text") or "").strip()
                if text:
                    number = str(raw.get("section") or str(raw.get("ref", "")).lstrip("s"))
                    section = Section(law["id"], str(law["title"]), number, str(raw.get("heading") or ""), text)
                    found.setdefault((law["id"], number), []).append(section)
    return found


def old_cases(suite: str) -> list[Case]:
    """``tests/data/<suite>.jsonl`` (claim_support or polarity): sentences paired with a named test provision."""
    provisions: dict[str, str] = json.loads((TESTS_DATA / "provisions.json").read_text(encoding="utf-8"))
    return [Case(str(r["sentence"]), provisions[str(r["provision"])], bool(r["supported"]), suite)
            for r in read_jsonl(TESTS_DATA / f"{suite}.jsonl")]  # fmt: skip


def pair_cases(data_dir: Path, split: str, path: Path = PAIRS) -> list[Case]:
    """The new pairs of one split, each with its provision's text, heading and identity from the corpus."""
    rows = [r for r in read_jsonl(path) if r["split"] == split]
    sections = read_sections(data_dir, (str(r["law_id"]) for r in rows))
    cases = []
    for r in rows:
        (section,) = sections[(str(r["law_id"]), str(r["section"]))]  # exactly one: verify_claim_pairs.py checks
        cases.append(Case(str(r["sentence"]), section.text, bool(r["supported"]), str(r["kind"]), section.identity,
                          section.heading, str(r["id"])))  # fmt: skip
    return cases


def replay_cases(data_dir: Path, path: Path = REPLAY) -> tuple[list[Case], int]:
    """The labelled real-model sentences, and how many could not be paired with exactly one corpus section."""
    rows = [r for r in read_jsonl(path) if isinstance(r.get("supported"), bool)]  # a sentence left unlabelled: skip
    sections = read_sections(data_dir, (str(r["law_id"]) for r in rows))
    cases, unresolved = [], 0
    for r in rows:
        # "s12B" as the gold sets write it; "s69~2": the second section numbered 69 (ingestion's id for it)
        number = str(r["section"]).removeprefix("section ").removeprefix("s").split("(")[0].strip()
        number, _, nth = number.partition("~")
        found = sections.get((str(r["law_id"]), number), [])
        if nth and len(found) >= int(nth):
            found = [found[int(nth) - 1]]
        if len(found) != 1:
            unresolved += 1
            continue
        kind = str(r.get("kind") or ("supported" if r["supported"] else "unsupported"))
        cases.append(Case(str(r["sentence"]), found[0].text, bool(r["supported"]), kind, found[0].identity,
                          found[0].heading, str(r.get("answer_id", ""))))  # fmt: skip
    return cases, unresolved


def judge_suite(judge: ClaimJudge, cases: Sequence[Case]) -> Figures:
    """Judge every case with ``judge`` (empty topic, the provision's heading and identity) and count the verdicts."""
    figures = Figures()
    for case in cases:
        verdict = judge.judge(case.sentence, case.provision, topic={}, identity=case.identity, heading=case.heading)
        outcome = ("t" if verdict.supported == case.supported else "f") + ("p" if verdict.supported else "n")
        figures.by_kind.setdefault(case.kind, Counter())[outcome] += 1
        match outcome:
            case "tp":
                figures.true_positive += 1
            case "fp":
                figures.false_positive += 1
            case "fn":
                figures.false_negative += 1
            case _:
                figures.true_negative += 1
        if outcome in ("fp", "fn"):
            why = ", ".join(reasons(verdict)) or "all checks passed"
            detail = f"{why}; score {verdict.score:.2f}/{verdict.threshold:.2f}"
            if verdict.missing:
                detail += f"; missing {list(verdict.missing)}"
            figures.errors.append((case, detail))
    return figures


def figures_row(name: str, figures: Figures) -> str:
    passed = figures.true_positive + figures.false_positive
    supported = figures.true_positive + figures.false_negative
    unsupported = figures.true_negative + figures.false_positive
    return (
        f"| {name} | {figures.total} | {supported} | {figures.precision:.3f} ({figures.true_positive}/{passed}) | "
        f"{figures.recall:.3f} ({figures.true_positive}/{supported}) | "
        f"{figures.caught:.3f} ({figures.true_negative}/{unsupported}) |"
    )


def kinds_table(figures: Figures) -> list[str]:
    lines = ["| kind | n | supported passed | supported rejected | unsupported passed | unsupported rejected |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for kind, counts in sorted(figures.by_kind.items()):
        lines.append(f"| `{kind}` | {sum(counts.values())} | {counts['tp']} | {counts['fn']} | {counts['fp']} | "
                     f"{counts['tn']} |")  # fmt: skip
    return lines


def report(
    judge_name: str, judge: ClaimJudge, data_dir: Path, errors: bool = False, replay: Path = REPLAY
) -> list[str]:
    """The whole suite's figures for one judge, as Markdown."""
    parts: list[tuple[str, Figures]] = [
        ("old: claim_support", judge_suite(judge, old_cases("claim_support"))),
        ("old: polarity", judge_suite(judge, old_cases("polarity"))),
        ("new pairs: dev", judge_suite(judge, pair_cases(data_dir, "dev"))),
        ("new pairs: held-out", judge_suite(judge, pair_cases(data_dir, "heldout"))),
    ]
    notes = []
    if replay.exists():
        replayed, unresolved = replay_cases(data_dir, replay)
        parts.append(("real-model replay", judge_suite(judge, replayed)))
        if unresolved:
            notes.append(f"{unresolved} replay sentences named no single corpus section and were left out.")
    else:
        notes.append(f"{replay.name} is absent: no real-model replay part.")
    lines = [f"## Judge `{judge_name}`", "",
             "Positive class: supported. Precision: supported among the sentences passed; recall: supported "
             "sentences passed; caught: unsupported sentences rejected.", "",
             "| part | sentences | supported | precision | recall | caught |",
             "| --- | ---: | ---: | --- | --- | --- |",
             *(figures_row(name, figures) for name, figures in parts), ""]  # fmt: skip
    lines += [*notes, ""] if notes else []
    for name, figures in parts[2:]:
        lines += [f"### By kind, {name}", "", *kinds_table(figures), ""]
    if errors:
        lines += dev_errors(parts[2][1])
    return lines


def dev_errors(figures: Figures) -> list[str]:
    """The judge's wrong verdicts on the development pairs, by kind (the held-out part's are never listed)."""
    lines = ["## Errors on the development pairs", ""]
    by_kind: dict[str, list[tuple[Case, str]]] = {}
    for case, detail in figures.errors:
        by_kind.setdefault(case.kind, []).append((case, detail))
    for kind, wrong in sorted(by_kind.items(), key=lambda item: -len(item[1])):
        label = "supported, rejected" if wrong[0][0].supported else "unsupported, passed"
        lines += [f"### `{kind}` ({label}): {len(wrong)}", ""]
        lines += [f'- {case.id} {case.identity}: "{case.sentence}" ({detail})' for case, detail in wrong]
        lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--judge", choices=get_args(JudgeName), action="append", help="repeat to compare (default: rules)"
    )
    parser.add_argument("--data-dir", type=Path, default=SHARED)
    parser.add_argument("--errors", action="store_true", help="list the errors on the development pairs")
    parser.add_argument("--replay", type=Path, default=REPLAY, help="the labelled real-model sentences, if present")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("--cross-encoder-path", default="", help="model folder for --judge cross_encoder")
    parser.add_argument("--cross-encoder-threshold", type=float, default=0.5)
    parser.add_argument("--llm-url", default="", help="OpenAI-compatible endpoint for --judge llm, e.g. "
                        "http://127.0.0.1:8090/v1 (make local-llm)")  # fmt: skip
    parser.add_argument("--llm-model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--llm-timeout", type=float, default=120.0, help="seconds per judge call")
    args = parser.parse_args()
    lines: list[str] = []
    for name in args.judge or ["rules"]:
        with built_judge(name, args) as judge:
            lines += report(name, judge, args.data_dir, errors=args.errors, replay=args.replay)
    publish(lines, args.out)


@contextlib.contextmanager
def built_judge(name: JudgeName, args: argparse.Namespace) -> Iterator[ClaimJudge]:
    """The judge as the service builds it. The LLM judge asks the model on an event loop of its own, in a thread,
    as it does on the service's loop; the benchmark calls it from the main thread, as the gate calls it from a
    worker thread."""
    gate = GateSettings(
        judge=name, cross_encoder_path=args.cross_encoder_path, cross_encoder_threshold=args.cross_encoder_threshold,
        llm_max_calls=1_000_000, llm_timeout_s=args.llm_timeout,
    )  # fmt: skip
    if name != "llm":
        yield build_claim_judge(gate)
        return
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    llm_cfg = LLMSettings(backend="openai", base_url=args.llm_url, model=args.llm_model, timeout_s=args.llm_timeout)

    async def build() -> tuple[ClaimJudge, httpx.AsyncClient]:
        http = httpx.AsyncClient(timeout=args.llm_timeout)
        llm = build_llm(llm_cfg, http)
        assert llm is not None
        ask = llm_asker(llm, load_skills()["judge"], args.llm_timeout, 1)
        return build_claim_judge(gate, ask), http

    judge, http = asyncio.run_coroutine_threadsafe(build(), loop).result()
    try:
        yield judge
    finally:
        asyncio.run_coroutine_threadsafe(http.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


if __name__ == "__main__":
    main()
