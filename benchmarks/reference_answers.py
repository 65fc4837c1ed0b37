"""Reference answers through the gate: does a faithful plain-words answer reach the reader whole and verified, and
does the same answer with one fact changed keep its false sentence from the reader?

Reads `evaluation/reference_answers.jsonl` (one per answerable development question: a plain-words answer whose
sentences carry placeholders for the question's gold provisions, and the same answer with one fact changed). Builds
(or reuses, `--data-dir`) a data dir of the 19 Acts the development questions cite plus the first 30 other Acts by
sorted id, ingested with `gweta ingest` and the default settings. Serves the app under a real uvicorn on 127.0.0.1
with the LLM pointed at a loopback OpenAI-compatible server (`tests/reference_model.py`, the wire format of
`tests/servers.py`) that writes the answer: it reads the numbered sources of the prompt the service sends, finds the
gold provision among them, and streams the reference answer (or the altered one) with each placeholder replaced by
that source's marker, or abstains when the gold provision is not among them. Every other skill (guard, route,
rewrite, plan, expand, grade, replan, choose) gets HTTP 400, which the service treats as that call failing: its
deterministic path, as `FakeOpenAI` answers an unscripted skill. Each question is asked twice on
`/api/v1/query/stream` (true, then altered), one at a time, in a fresh session each (new on every run).

Reported: true answers that reached the reader whole and verified (every reference sentence in the streamed
`token` text, `final.verified` true, no quote-only fallback), with at least half their sentences shown, and those
whose gold provision was not among the sources offered (retrieval, not the gate); altered answers whose changed
sentence never appeared in any `token` event (text compared with markers stripped, whitespace and quotes
normalised), by kind of change; a per-question table; and for each failure what the service reported (the `final`
event's verification counts, its warnings, the gate's logged verdicts) and the rules judge's reasons for that one
sentence, replayed offline against the gold section. QA memory and the per-caller rate limit are off for the run.

    .venv/bin/python benchmarks/reference_answers.py [--data-dir D] [--out benchmarks/results/reference_answers.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from report import SHARED, publish  # noqa: E402
from topic_check import Replay  # noqa: E402

from api.composer.answerability import TOPIC_SHARE  # noqa: E402
from api.main import create_app  # noqa: E402
from api.settings import LLMSettings, Settings  # noqa: E402
from tests.reference_model import REFERENCES, Gold, ReferenceModel, core, norm, sentences  # noqa: E402
from tests.servers import LiveServer  # noqa: E402
from tests.sse import Event, read_events  # noqa: E402

ACTS = SHARED / "corpus" / "zimbabwe_legislation" / "acts.jsonl"
QUESTIONS = ROOT / "evaluation" / "dev_questions.jsonl"
OTHER_ACTS = 30


def cited_acts(questions: list[dict[str, object]]) -> list[str]:
    """The Acts the answerable questions' gold provisions are in, sorted."""
    return sorted({str(g["law_id"]) for q in questions for g in q["gold"]})


def subset_ids(questions: list[dict[str, object]], all_ids: list[str], others: int = OTHER_ACTS) -> list[str]:
    """The Acts to ingest: every cited one, and the first ``others`` other Acts by sorted id (a fixed rule, so the
    data dir is the same on every machine)."""
    cited = cited_acts(questions)
    rest = [i for i in sorted(all_ids) if i not in set(cited)][:others]
    return sorted([*cited, *rest])


def build_data_dir(data_dir: Path, questions: list[dict[str, object]]) -> list[str]:
    """Ingest the subset into ``data_dir`` with `gweta ingest` (unchanged Acts are skipped on a rerun)."""
    records = {json.loads(line)["id"]: line for line in ACTS.read_text(encoding="utf-8").splitlines() if line.strip()}
    ids = subset_ids(questions, list(records))
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subset = Path(tmp) / "acts.jsonl"
        subset.write_text("".join(records[i] + "\n" for i in ids), encoding="utf-8")
        cmd = [sys.executable, "-m", "api.cli", "ingest", str(subset), "--data-dir", str(data_dir)]
        subprocess.run(cmd, check=True, cwd=ROOT)
    return ids


def answerable(path: Path = QUESTIONS) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in rows if q["kind"] in ("direct", "paraphrase")]


GATE_LOGGER = "api.orchestrators.query.nodes.checks"


class GateLog(logging.Handler):
    """The gate's debug line for each sentence it fails (verdict and missing facts), as the service logs it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("gate: "):
            self.lines.append(record.getMessage()[6:])


@dataclass
class Run:
    qid: str
    variant: str  # "true" | "altered"
    events: list[Event]
    offered: list[bool]
    sent: list[str]
    gate: list[str]
    seconds: float
    tokens: str = field(init=False)
    final: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = "".join(e.json()["text"] for e in self.events if e.event == "token")
        last = self.events[-1] if self.events else None
        self.final = last.json() if last is not None and last.event == "final" else {}

    @property
    def warnings(self) -> list[str]:
        return [e.json()["code"] for e in self.events if e.event == "warning"]

    def shown(self, sentence: str) -> bool:
        return core(sentence) in norm(self.tokens)

    def token_not_in_final(self) -> int:
        answer = str(self.final.get("answer", ""))
        return sum(e.json()["text"] not in answer for e in self.events if e.event == "token")

    def extra(self, answer_sentences: list[str], definitions: bool = True) -> str:
        """What the streamed text holds beyond the reference sentences (a fallback's quotes, a note); with
        ``definitions`` False, less the paragraphs quoting a definition the service adds below an answer whose cited
        words use a defined term (``api.composer.definitions``: verified quotes, not the model's text)."""
        rest = norm(self.tokens if definitions else _DEFINITION_PARAGRAPH.sub(" ", self.tokens))
        for s in answer_sentences:
            rest = rest.replace(core(s), "")
        return " ".join(w for w in rest.split() if w not in {".", ","})


# A definition paragraph as `api.composer.definitions.definitions_text` writes it ("… defines “term”: “…” [n]"), and a
# referenced provision's as `api.composer.references.references_text` does ("…, referred to above (subject to
# section 3): “…” [n]", for a provision that refers to the one cited, "… refers to the provision cited above (…):
# “…” [n]", or for one using a term the cited provision defines, "… uses “term”, which the same law defines by the
# provision cited above: “…” [n]" or "… which the provision cited above defines: “…” [n]"): verified quotes the
# service adds below an answer, not the model's text.
_DEFINITION_PARAGRAPH = re.compile(
    r"(?m)^[^\n]*?(?: defines “[^”\n]+”|, referred to above \([^\n]*?\)| refers to the provision cited above "
    r"\([^\n]*?\)| uses “[^”\n]+”, which (?:the same law defines by the provision cited above|the provision cited "
    r"above defines)): “[^\n]*” \[\d+\][ \t]*$"
)


async def ask(client: httpx.AsyncClient, question: str, session: str) -> list[Event]:
    params = {"q": question, "session_id": session}
    async with client.stream("GET", "/api/v1/query/stream", params=params) as response:
        response.raise_for_status()
        return [event async for event in read_events(response)]


async def run_all(data_dir: Path, questions: list[dict[str, Any]], refs: dict[str, dict[str, Any]]) -> list[Run]:
    titles = {}
    for line in ACTS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        titles[record["id"]] = record["title"]
    model = ReferenceModel()
    gate_log = GateLog()
    logger = logging.getLogger(GATE_LOGGER)
    logger.addHandler(gate_log)
    logger.setLevel(logging.DEBUG)
    runs: list[Run] = []
    # Sessions are kept in the data dir's checkpoints: a run's own session ids keep a rerun on the same data dir from
    # asking each question as a follow-up of the last run's.
    run_id = f"{time.time_ns():x}"
    with LiveServer(model.app) as llm_server:
        # QA memory off: the altered answer is never served from the true one's memory, nor the reverse.
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="reference", memory_ttl_s=0)
        # One caller asks every question back to back: no per-caller rate limit.
        settings = Settings(data_dir=data_dir, llm=llm, limits={"requests_per_minute": 0})
        with LiveServer(create_app(settings), start_timeout_s=600) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=120) as client:
                for q in questions:
                    ref = refs[q["id"]]
                    gold = [Gold(titles[g["law_id"]], g["section"].removeprefix("s")) for g in q["gold"]]
                    for variant in ("true", "altered"):
                        model.ask(ref["answer"] if variant == "true" else ref["altered"], gold)
                        gate_log.lines = []
                        start = time.perf_counter()
                        events = await ask(client, q["question"], f"ref-{run_id}-{variant}-{q['id']}")
                        runs.append(Run(q["id"], variant, events, list(model.offered), list(model.sent),
                                        list(gate_log.lines), time.perf_counter() - start))  # fmt: skip
                        print(f"{q['id']} {variant}: {runs[-1].seconds:.1f} s", file=sys.stderr)
    logger.removeHandler(gate_log)
    return runs


async def replay_verdicts(data_dir: Path, items: list[tuple[str, list[str], str]]) -> list[str]:
    """The rules judge's verdict on each (question, gold section ids, sentence), replayed offline with the whole gold
    sections offered as [1], [2]… and the question's topic words (as `gate_replay.py` does): the reasons behind a
    sentence the service failed or passed. The service judged the pieces it offered, so a verdict may differ."""
    replay = await Replay.open(data_dir)
    out = []
    for question, sections, sentence in items:
        cited = {i: section for i, section in enumerate(sections, 1)}
        text = re.sub(r"\{(\d+)\}", r"[\1]", sentence)
        gate = replay.gate({"sections": cited, "question": question, "answer": text}, TOPIC_SHARE)
        checks = [c for c in gate.claims if c.claim] or gate.claims
        out.append("; ".join(describe(c) for c in checks) or "no claim found")
    return out


def describe(check: Any) -> str:
    """One sentence's verdict with its reasons: score, missing facts, opposite meaning, off-topic words."""
    reasons = [f"score {check.score:.2f}"]
    if check.missing_facts:
        reasons.append("missing facts: " + ", ".join(check.missing_facts))
    if check.opposite:
        reasons.append("opposite meaning")
    if check.off_topic:
        reasons.append("off topic: " + ", ".join(check.off_topic))
    return f"{check.verdict} ({'; '.join(reasons)})"


def offered_label(run: Run) -> str:
    """Whether the gold provision was among the sources of any synthesize call, or the model was never asked."""
    return "yes" if any(run.offered) else "no" if run.offered else "model not asked"


def gate_said(run: Run) -> str:
    """What the gate reported: the final's outcome and verification counts that are not zero, its warnings, and
    the verdicts it logged for the sentences it failed."""
    final = run.final
    counts = ", ".join(f"{k} {v}" for k, v in final.get("verification", {}).items() if v)
    warnings = ", ".join(run.warnings) or "none"
    verdicts = "; ".join(run.gate) or "none logged"
    return (f"verified {final.get('verified')}, outcome {final.get('outcome')}; {counts}; warnings: {warnings}; "
            f"failed sentences: {verdicts}")  # fmt: skip


def report(runs: list[Run], refs: dict[str, dict[str, Any]], kinds: dict[str, str], data_dir: Path,
           n_acts: int, judged: dict[tuple[str, str], str]) -> list[str]:  # fmt: skip
    by = {(r.qid, r.variant): r for r in runs}
    ids = list(refs)
    rows, true_fail, alt_fail = [], [], []
    whole = half = missing = not_asked = whole_offered = offered_n = whole_defs = 0
    kept_out = leaked_n = alt_offered = alt_kept_offered = 0
    token_lost = 0
    for qid in ids:
        ref = refs[qid]
        true_s = sentences(ref["answer"])
        t, a = by[(qid, "true")], by[(qid, "altered")]
        token_lost += t.token_not_in_final() + a.token_not_in_final()
        shown = [t.shown(s) for s in true_s]
        fallback = bool({"model_answer_unverified", "model_abstained"} & set(t.warnings))
        extra = t.extra(true_s)
        is_whole = all(shown) and bool(t.final.get("verified")) and not fallback and not extra
        whole_defs += all(shown) and bool(t.final.get("verified")) and not fallback and not t.extra(true_s, False)
        gold_in = any(t.offered)
        whole += is_whole
        half += sum(shown) * 2 >= len(shown)
        missing += not gold_in
        not_asked += not t.offered
        offered_n += gold_in
        whole_offered += is_whole and gold_in
        false_sentence = sentences(ref["altered"])[ref["altered_sentence"]]
        leaked = a.shown(false_sentence)
        kept_out += not leaked
        leaked_n += leaked
        alt_offered += any(a.offered)
        alt_kept_offered += any(a.offered) and not leaked
        rows.append(
            f"| {qid} | {kinds[qid]} | {offered_label(t)} | {sum(shown)}/{len(shown)} | "
            f"{t.final.get('verified')} | {'yes' if fallback else ''}{' +extra' if extra else ''} | "
            f"{'yes' if is_whole else 'no'} | {ref['change']} | {'no' if leaked else 'yes'} | "
            f"{a.final.get('verified')} | {t.seconds:.1f} / {a.seconds:.1f} |"
        )
        if not is_whole:
            lost = [s for s, ok in zip(true_s, shown, strict=True) if not ok]
            why = f"gold provision not offered ({offered_label(t)}): {gate_said(t)}" if not gold_in else gate_said(t)
            true_fail.append((qid, kinds[qid], lost, extra, why))
        if leaked:
            alt_fail.append((qid, ref["change"], false_sentence, gate_said(a)))
    n = len(ids)
    lines = [
        "# Reference answers through the gate",
        "",
        f"{n} answerable development questions, each answered by a scripted loopback model with a faithful "
        "plain-words reference answer and then with the same answer with one fact changed "
        "(`evaluation/reference_answers.jsonl`), through the real app under uvicorn "
        f"(`/api/v1/query/stream`). Data dir: {n_acts} Acts (the 19 the questions cite and the first "
        f"{OTHER_ACTS} others by id), `{data_dir.name}`. Command: "
        "`python benchmarks/reference_answers.py --data-dir D --out benchmarks/results/reference_answers.md`.",
        "",
        "| measure | result |",
        "| --- | --- |",
        f"| true answers that reached the reader whole and verified | {whole} of {n} ({whole / n:.0%}) |",
        f"| the same, where the gold provision was among the sources offered | {whole_offered} of {offered_n} |",
        "| the same as the first, a definition or referenced provision the service quotes below the answer not "
        f"counted as other text | "
        f"{whole_defs} of {n} ({whole_defs / n:.0%}) |",
        f"| true answers with at least half their sentences shown | {half} of {n} |",
        f"| true answers whose gold provision was not among the sources offered to the model | {missing}, of which "
        f"{not_asked} where the model was never asked |",
        f"| altered answers whose false sentence never reached a `token` event | {kept_out} of {n} "
        f"({kept_out / n:.0%}) |",
        f"| the same, where the gold provision was offered | {alt_kept_offered} of {alt_offered} |",
        f"| `token` events whose text the final answer lacks (both variants) | {token_lost} |",
        "",
        "Whole: every sentence of the reference answer is in the streamed `token` text (markers stripped, whitespace "
        "and quotes normalised), `final.verified` is true, no quote-only fallback (`model_answer_unverified`, "
        "`model_abstained`) and no other text streamed. A false sentence counts as reaching the reader when its "
        "whole text is in the streamed `token` text.",
        "",
        'Below, "gate" is what the service reported for the answer (the `final` event\'s outcome and non-zero '
        "verification counts, its warnings, and the verdict and missing facts it logs for each sentence it fails, in "
        'order); "replayed" is the rules judge\'s verdict on that one sentence, replayed offline against the whole '
        "gold section with the question's topic words (`benchmarks/gate_replay.py`'s way), for its reasons.",
        "",
        "## Per question",
        "",
        "| id | kind | gold offered | true: sentences shown | verified | fallback | whole | change | false kept "
        "out | verified | seconds (true / altered) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        f"## True answers not delivered whole ({len(true_fail)})",
        "",
    ]
    for qid, kind, lost, extra, why in true_fail:
        lines.append(f"- **{qid}** ({kind}): {why}")
        lines.extend(f"  - not shown: {norm(s)} — replayed: {judged[(qid, s)]}" for s in lost)
        if extra:
            lines.append(f"  - also streamed: {extra[:300]}")
    kinds_n = Counter(str(refs[qid]["change"]) for qid in ids)
    leaked_by = Counter(change for _, change, _, _ in alt_fail)
    lines += ["", "## Altered answers by kind of change", "", "| change | answers | false sentence kept out |",
              "| --- | ---: | ---: |"]  # fmt: skip
    lines += [f"| {k} | {kinds_n[k]} | {kinds_n[k] - leaked_by[k]} |" for k in sorted(kinds_n)]
    lines += ["", f"## False sentences that reached the reader ({len(alt_fail)})", ""]
    by_change: dict[str, list[tuple[str, str, str]]] = {}
    for qid, change, sentence, why in alt_fail:
        by_change.setdefault(change, []).append((qid, sentence, why))
    for change in sorted(by_change):
        lines.append(f"### {change} ({len(by_change[change])})")
        lines.append("")
        lines.extend(f"- **{qid}**: {norm(s)} — gate: {why} — replayed: {judged[(qid, s)]}"
                     for qid, s, why in by_change[change])  # fmt: skip
        lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "gweta-reference-answers",
                        help="reused when it holds a data dir already; built there otherwise")  # fmt: skip
    parser.add_argument("--only", nargs="*", help="ask only these question ids")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    questions = answerable()
    refs = {r["id"]: r for r in map(json.loads, REFERENCES.read_text(encoding="utf-8").splitlines()) if r}
    if not (args.data_dir / "milvus.db").exists():
        build_data_dir(args.data_dir, questions)
    n_acts = len(subset_ids(questions, [json.loads(line)["id"] for line in ACTS.read_text().splitlines()]))
    if args.only:
        questions = [q for q in questions if q["id"] in args.only]
        refs = {k: v for k, v in refs.items() if k in args.only}
    kinds = {str(q["id"]): str(q["kind"]) for q in questions}
    runs = asyncio.run(run_all(args.data_dir, questions, refs))
    items = [
        (str(q["id"]), str(q["question"]), [f"{g['law_id']}#{g['section']}" for g in q["gold"]], sentence)
        for q in questions
        for sentence in [*sentences(refs[q["id"]]["answer"]), sentences(refs[q["id"]]["altered"])[
            refs[q["id"]]["altered_sentence"]]]
    ]  # fmt: skip
    verdicts = asyncio.run(replay_verdicts(args.data_dir, [(q, sections, s) for _, q, sections, s in items]))
    judged = {(qid, s): v for (qid, _, _, s), v in zip(items, verdicts, strict=True)}
    publish(report(runs, refs, kinds, args.data_dir, n_acts, judged), args.out)


if __name__ == "__main__":
    main()
