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
``api.composer.judge.judge.JudgeName`` (repeat it to report several judges one after another).

A slow judge (the LLM judge on a small local model) may run a part of the suite: ``--parts`` names the parts to run
(run in the order given, reported in the usual order), and ``--dev-sample N`` keeps N of the development pairs,
evenly spaced in id order (the pair at position ``floor(i * total / N)`` for ``i = 0 … N-1``), a fixed rule stated
in the report. For ``--judge llm`` the report adds how each verdict was reached (by the rules' hard checks before the
model is asked, by the model, by the rules because the model's reply was unusable, or rejected because the model's
quote is not in the provision), the model's own verdicts against the labels, and each call's time; ``--trace FILE``
writes one JSON line per judged sentence as it goes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, get_args

import httpx
from report import SHARED, percentile, publish

from api.composer.citations import locate_quote
from api.composer.judge.gate import identity
from api.composer.judge.judge import ClaimJudge, JudgeName, build_claim_judge, reasons
from api.composer.judge.learned import Ask
from api.composer.skills import Skill, load_skills
from api.composer.structured import LLMCall, ask_json
from api.schemas.events import Citation
from api.settings import GateSettings, LLMSettings
from api.tools.llm import build_llm
from ingestion.parsers.jsonl import without_next_heading

ROOT = Path(__file__).resolve().parent.parent
TESTS_DATA = ROOT / "tests" / "data"
PAIRS = ROOT / "evaluation" / "claim_pairs.jsonl"
REPLAY = ROOT / "evaluation" / "replay_labels.jsonl"
CORPUS = Path("corpus") / "zimbabwe_legislation" / "acts.jsonl"
PARTS = ("claim_support", "polarity", "dev", "heldout", "replay")
PART_TITLES = {"claim_support": "old: claim_support", "polarity": "old: polarity", "dev": "new pairs: dev",
               "heldout": "new pairs: held-out", "replay": "real-model replay"}  # fmt: skip


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
    routes: Counter[str] = field(default_factory=Counter)
    """LLM judge only: how each verdict was reached (``route`` below)."""
    model_alone: Counter[str] = field(default_factory=Counter)
    """LLM judge only: the model's own verdicts ("tp", "fp", "fn", "tn") where it gave a usable one."""
    model_by_kind: dict[str, Counter[str]] = field(default_factory=dict)
    """LLM judge only: the model's own verdicts by kind."""

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


@dataclass(frozen=True)
class Asked:
    """One call of the ``judge`` skill: the model's JSON object (None when unusable) and the call's record."""

    reply: dict[str, Any] | None
    call: LLMCall


def recording_asker(llm: Any, skill: Skill, timeout_s: float, calls: dict[tuple[str, str], Asked]) -> Ask:
    """``api.composer.judge.judge.llm_asker`` (the same structured call, one attempt), keeping each call's reply and
    record by (sentence, provision) so the report can say how each verdict was reached and how long the model took."""

    async def ask(values: dict[str, str]) -> dict[str, Any] | None:
        result, call = await ask_json(llm, skill, timeout_s, 1, values)
        calls[(values["sentence"], values["provision"])] = Asked(result, call)
        return result

    return ask


ROUTES = {
    "hard_checks": "the rules' hard checks, model not asked",
    "unusable": "model's reply unusable (call failed, not JSON, or no `supported` bool): the rules decided",
    "quote_not_found": "model said supported, its quote is not in the provision: rejected",
    "model": "the model's verdict",
}


def route(asked: Asked | None, provision: str) -> str:
    """How the LLM judge reached its verdict, read as ``LLMJudge.judge`` reads the model's reply."""
    if asked is None:
        return "hard_checks"
    reply = asked.reply
    if reply is None or not isinstance(reply.get("supported"), bool):
        return "unusable"
    quote = str(reply.get("quote") or "").strip()
    if reply["supported"] and quote and not locate_quote(quote, provision):
        return "quote_not_found"
    return "model"


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
                text = without_next_heading(str(raw.get("text") or "").strip())
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


def judge_suite(
    judge: ClaimJudge,
    cases: Sequence[Case],
    calls: dict[tuple[str, str], Asked] | None = None,
    trace: IO[str] | None = None,
    part: str = "",
) -> Figures:
    """Judge every case with ``judge`` (empty topic, the provision's heading and identity) and count the verdicts.
    ``calls``: the LLM judge's calls (``recording_asker``), read to say how each verdict was reached; ``trace``: one
    JSON line per case, written as it goes."""
    figures = Figures()
    started = time.perf_counter()
    for n, case in enumerate(cases, 1):
        verdict = judge.judge(case.sentence, case.provision, topic={}, identity=case.identity, heading=case.heading)
        outcome = ("t" if verdict.supported == case.supported else "f") + ("p" if verdict.supported else "n")
        asked = None if calls is None else calls.get((case.sentence, case.provision))
        if calls is not None:
            figures.routes[route(asked, case.provision)] += 1
            if asked is not None and asked.reply is not None and isinstance(asked.reply.get("supported"), bool):
                own = ("t" if asked.reply["supported"] == case.supported else "f") + (
                    "p" if asked.reply["supported"] else "n"
                )
                figures.model_alone[own] += 1
                figures.model_by_kind.setdefault(case.kind, Counter())[own] += 1
            elapsed = time.perf_counter() - started
            print(f"[{part}] {n}/{len(cases)} {case.id or case.kind} {outcome} {elapsed:.0f} s", file=sys.stderr)
        if trace is not None:
            row = {"part": part, "id": case.id, "kind": case.kind, "supported": case.supported,
                   "verdict": verdict.supported, "reasons": list(reasons(verdict)), "sentence": case.sentence,
                   "route": route(asked, case.provision) if calls is not None else "",
                   "reply": asked.reply if asked else None, "call": asked.call if asked else None}  # fmt: skip
            trace.write(json.dumps(row, ensure_ascii=False) + "\n")
            trace.flush()
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
            if calls is not None:
                detail += f"; {route(asked, case.provision)}"
                if asked is not None and asked.reply is not None:
                    detail += f"; model said {json.dumps(asked.reply, ensure_ascii=False)}"
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


def sample(cases: Sequence[Case], n: int) -> list[Case]:
    """``n`` of ``cases``, evenly spaced in id order: the case at position ``floor(i * len / n)``, i = 0 … n-1."""
    ordered = sorted(cases, key=lambda c: c.id)
    if n <= 0 or n >= len(ordered):
        return ordered
    return [ordered[math.floor(i * len(ordered) / n)] for i in range(n)]


def report(
    judge_name: str,
    judge: ClaimJudge,
    data_dir: Path,
    errors: bool = False,
    replay: Path = REPLAY,
    parts_run: Sequence[str] = PARTS,
    dev_sample: int = 0,
    calls: dict[tuple[str, str], Asked] | None = None,
    trace: IO[str] | None = None,
) -> list[str]:
    """The figures for one judge over the parts ``parts_run`` (in that order; the whole suite by default), as
    Markdown. ``dev_sample``: judge only that many development pairs (``sample``)."""
    notes = []
    done: dict[str, Figures] = {}
    for part in parts_run:
        match part:
            case "claim_support" | "polarity":
                cases = old_cases(part)
            case "dev":
                everything = pair_cases(data_dir, "dev")
                cases = sample(everything, dev_sample)
                if len(cases) < len(everything):
                    total, kept = len(everything), len(cases)
                    notes.append(f"Development pairs: {kept} of {total}, evenly spaced in id order (position "
                                 f"floor(i * {total} / {kept}), i = 0 … {kept - 1}).")  # fmt: skip
            case "heldout":
                cases = pair_cases(data_dir, "heldout")
            case _:
                if not replay.exists():
                    notes.append(f"{replay.name} is absent: no real-model replay part.")
                    continue
                cases, unresolved = replay_cases(data_dir, replay)
                if unresolved:
                    notes.append(f"{unresolved} replay sentences named no single corpus section and were left out.")
        done[part] = judge_suite(judge, cases, calls, trace, part)
    skipped = [PART_TITLES[p] for p in PARTS if p not in parts_run and p != "replay"]
    if skipped:
        notes.append(f"Not run: {', '.join(skipped)}.")
    parts = [(PART_TITLES[p], done[p]) for p in PARTS if p in done]
    lines = [f"## Judge `{judge_name}`", "",
             "Positive class: supported. Precision: supported among the sentences passed; recall: supported "
             "sentences passed; caught: unsupported sentences rejected.", "",
             "| part | sentences | supported | precision | recall | caught |",
             "| --- | ---: | ---: | --- | --- | --- |",
             *(figures_row(name, figures) for name, figures in parts), ""]  # fmt: skip
    lines += [*notes, ""] if notes else []
    for name, figures in parts:
        if not name.startswith("old"):
            lines += [f"### By kind, {name}", "", *kinds_table(figures), ""]
    if calls is not None:
        lines += llm_figures(parts, calls)
    if errors and "dev" in done:
        lines += dev_errors(done["dev"])
    return lines


def llm_figures(parts: Sequence[tuple[str, Figures]], calls: dict[tuple[str, str], Asked]) -> list[str]:
    """How the LLM judge reached its verdicts, the model's own verdicts against the labels, and the calls' times."""
    lines = ["### How the LLM judge reached its verdicts", "",
             "| part | sentences | " + " | ".join(ROUTES.values()) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in ROUTES) + " |"]  # fmt: skip
    for name, figures in parts:
        lines.append(f"| {name} | {figures.total} | " + " | ".join(str(figures.routes[r]) for r in ROUTES) + " |")
    lines += ["", "### The model's own verdicts (where its reply was usable), before the hard checks and the quote "
              "check", "", "| part | usable replies | supported | precision | recall | caught |",
              "| --- | ---: | ---: | --- | --- | --- |"]  # fmt: skip
    for name, figures in parts:
        alone = figures.model_alone
        lines.append(figures_row(name, Figures(alone["tp"], alone["fp"], alone["fn"], alone["tn"])))
    for name, figures in parts:
        if not name.startswith("old"):
            lines += [
                "",
                f"By kind, {name} (the model's own verdicts):",
                "",
                *kinds_table(Figures(by_kind=figures.model_by_kind)),
            ]
    records = [asked.call for asked in calls.values()]
    if records:
        ms = [c["ms"] for c in records]
        outcomes = Counter(c["outcome"] for c in records)
        tokens_in = [c["input_tokens"] for c in records]
        tokens_out = [c["output_tokens"] for c in records]
        lines += ["", "### Calls", "",
                  f"{len(records)} calls; outcomes: {', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))}. "
                  f"Time per call: median {percentile(ms, 0.5) / 1000:.1f} s, P95 {percentile(ms, 0.95) / 1000:.1f} s, "
                  f"max {max(ms) / 1000:.1f} s. Tokens per call: input median {percentile(tokens_in, 0.5):.0f} "
                  f"(max {max(tokens_in)}), output median {percentile(tokens_out, 0.5):.0f} (max {max(tokens_out)}).",
                  ""]  # fmt: skip
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
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated parts to run, in this order (default: all)")  # fmt: skip
    parser.add_argument("--dev-sample", type=int, default=0,
                        help="judge only N development pairs, evenly spaced in id order (default: all)")  # fmt: skip
    parser.add_argument("--trace", type=Path, help="write one JSON line per judged sentence here, as it goes")
    args = parser.parse_args()
    parts_run = [p.strip() for p in args.parts.split(",") if p.strip()]
    if unknown := [p for p in parts_run if p not in PARTS]:
        parser.error(f"unknown parts {unknown}: choose from {', '.join(PARTS)}")
    lines: list[str] = []
    with contextlib.ExitStack() as stack:
        trace = stack.enter_context(args.trace.open("w", encoding="utf-8")) if args.trace else None
        for name in args.judge or ["rules"]:
            calls: dict[tuple[str, str], Asked] | None = {} if name == "llm" else None
            with built_judge(name, args, calls) as judge:
                lines += report(name, judge, args.data_dir, errors=args.errors, replay=args.replay,
                                parts_run=parts_run, dev_sample=args.dev_sample, calls=calls, trace=trace)  # fmt: skip
    publish(lines, args.out)


@contextlib.contextmanager
def built_judge(
    name: JudgeName, args: argparse.Namespace, calls: dict[tuple[str, str], Asked] | None = None
) -> Iterator[ClaimJudge]:
    """The judge as the service builds it. The LLM judge asks the model on an event loop of its own, in a thread,
    as it does on the service's loop; the benchmark calls it from the main thread, as the gate calls it from a
    worker thread. Its calls are recorded in ``calls``."""
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
        ask = recording_asker(llm, load_skills()["judge"], args.llm_timeout, {} if calls is None else calls)
        return build_claim_judge(gate, ask), http

    judge, http = asyncio.run_coroutine_threadsafe(build(), loop).result()
    try:
        yield judge
    finally:
        asyncio.run_coroutine_threadsafe(http.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


if __name__ == "__main__":
    main()
