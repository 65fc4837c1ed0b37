"""Retrieval evaluation against question sets with gold passages or provisions.

Question files are JSONL in either shape:
- ObliQA-style: ``{"id", "question", "gold_ids": [passage ids]}``; a chunk matches through its ``source_id``.
- Zimbabwe-QA-style: ``{"id", "question", "kind", "gold": [{"law_id", "section"}]}``; a chunk matches when its
  section id is ``<law_id>#<section>``.
Questions with no gold (unanswerable, most injections) are left out of retrieval metrics and counted.

For every configuration the ranked chunks are collapsed to gold units (passages or sections), first occurrence
wins, and Recall@1/5/10, MRR@10 and nDCG@10 are computed with binary relevance.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

from api.orchestrators.query.orchestrator import QueryOrchestrator
from api.schemas.documents import Chunk
from api.schemas.events import ErrorEvent, FinalEvent, MetaEvent, TokenEvent, WarningEvent
from api.schemas.query import QueryRequest
from api.tools.memory import QaMemory
from api.tools.retrieval import HybridRetriever, Mode

K = (1, 5, 10)


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    text: str
    gold: frozenset[str]
    kind: str
    by_source_id: bool


@dataclass(slots=True)
class Scores:
    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in K})
    mrr: list[float] = field(default_factory=list)
    ndcg: list[float] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], gold: frozenset[str], ms: float) -> None:
        for k in K:
            self.recall[k].append(len(gold & set(ranked[:k])) / len(gold))
        first = next((i for i, unit in enumerate(ranked[:10], start=1) if unit in gold), None)
        self.mrr.append(1 / first if first else 0.0)
        dcg = sum(1 / math.log2(i + 1) for i, unit in enumerate(ranked[:10], start=1) if unit in gold)
        ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(gold), 10) + 1))
        self.ndcg.append(dcg / ideal)
        self.ms.append(ms)

    def row(self) -> dict[str, float]:
        n = len(self.mrr) or 1
        out = {f"R@{k}": sum(v) / n for k, v in self.recall.items()}
        out.update({"MRR@10": sum(self.mrr) / n, "nDCG@10": sum(self.ndcg) / n})
        out["P50 ms"] = sorted(self.ms)[len(self.ms) // 2] if self.ms else 0.0
        return out


def load_questions(path: Path) -> tuple[list[Question], int]:
    """Return the questions that have gold, and how many had none."""
    questions, without_gold = [], 0
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "gold_ids" in record:
            gold, by_source = frozenset(record["gold_ids"]), True
        else:
            gold, by_source = frozenset(f"{g['law_id']}#{g['section']}" for g in record.get("gold", [])), False
        if not gold:
            without_gold += 1
            continue
        questions.append(Question(str(record["id"]), record["question"], gold, record.get("kind", "all"), by_source))
    return questions, without_gold


class Config(NamedTuple):
    """One row of ``gweta eval retrieval``: how the retriever is asked."""

    name: str
    mode: Mode
    rerank: bool = False
    expand: bool = False
    learned: bool = False
    """Let the data dir's learned fusion order hybrid results (else RRF's order)."""


def section_unit(section_id: str) -> str:
    """A provision id as gold names it: without a repeat suffix ("~2") or a second source's tag ("@Act_PDF")."""
    doc_key, _, provision = section_id.split("~", 1)[0].partition("#")
    return f"{doc_key.split('@', 1)[0]}#{provision}"


def unit_of(chunk: Chunk, by_source_id: bool) -> str:
    return chunk.source_id if by_source_id else section_unit(chunk.section_id)


async def evaluate(
    retriever: HybridRetriever, questions: Sequence[Question], configs: Sequence[Config]
) -> dict[str, dict[str, Scores]]:
    """Scores per configuration name, then per question kind (and 'all')."""
    results: dict[str, dict[str, Scores]] = {}
    for name, mode, rerank, expand, learned in configs:
        per_kind: dict[str, Scores] = defaultdict(Scores)
        for q in questions:
            start = time.perf_counter()
            result = await retriever.retrieve(
                q.text, top_k=60, mode=mode, rerank=rerank, expand=expand, learned=learned
            )
            ms = (time.perf_counter() - start) * 1000
            ranked: list[str] = []
            for hit in result.hits:
                unit = unit_of(hit.chunk, q.by_source_id)
                if unit not in ranked:
                    ranked.append(unit)
            per_kind["all"].add(ranked, q.gold, ms)
            if q.kind != "all":
                per_kind[q.kind].add(ranked, q.gold, ms)
        results[name] = dict(per_kind)
    return results


def report(title: str, results: dict[str, dict[str, Scores]], notes: Sequence[str]) -> str:
    columns = ["R@1", "R@5", "R@10", "MRR@10", "nDCG@10", "P50 ms"]
    lines = [f"# {title}", "", *notes, "", "| configuration | questions | " + " | ".join(columns) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in columns) + " |"]  # fmt: skip
    for name, per_kind in results.items():
        row = per_kind["all"].row()
        cells = " | ".join(f"{row[c]:.0f}" if c == "P50 ms" else f"{row[c]:.3f}" for c in columns)
        lines.append(f"| {name} | {len(per_kind['all'].mrr)} | {cells} |")
    kinds = sorted({k for per_kind in results.values() for k in per_kind if k != "all"})
    if kinds:
        lines += ["", "By question kind (R@10 / MRR@10):", "", "| configuration | " + " | ".join(kinds) + " |",
                  "| --- | " + " | ".join("---" for _ in kinds) + " |"]  # fmt: skip
        for name, per_kind in results.items():
            kind_cells: list[str] = []
            for kind in kinds:
                row = per_kind[kind].row() if kind in per_kind else {"R@10": 0.0, "MRR@10": 0.0}
                count = len(per_kind[kind].mrr) if kind in per_kind else 0
                kind_cells.append(f"{row['R@10']:.2f} / {row['MRR@10']:.2f} (n={count})")
            lines.append(f"| {name} | " + " | ".join(kind_cells) + " |")
    return "\n".join(lines) + "\n"


# --- Answers: the whole query graph, question by question -------------------------------------------------------------

TRACE_VERSION = 1
STRUCTURED_SKILLS = ("guard", "contextualize", "route", "plan", "rewrite", "expand", "grade", "replan", "choose")
FINAL_SHOWN = (
    "model as written", "model, citations re-attached", "model, statements removed", "extractive (model unverified)",
    "extractive (model abstained)", "abstention", "extractive (no model answer)", "not answered from the corpus",
    "error",
)  # fmt: skip
"""What a model-path question ended showing, from its ``final`` and warnings (see ``shown``)."""


class Answered(TypedDict):
    """One question answered by one pipeline, as the trace keeps it: enough to recompute every figure."""

    route: str
    answer: str
    abstained: bool
    outcome: str
    """``final.outcome``: answered, related, not_found or refused ("" for an error, or a trace from before it)."""
    verified: bool
    cached: bool
    error: str
    """The error event's code; "" when the stream ended with ``final``."""
    cited: list[str]
    """The provision (or passage) of each citation, in order, as gold names it (a repeat suffix "~2" dropped)."""
    sections: list[str]
    """The section of each citation, in order, as stored ("…#s4~7"): which of a source's entries under one reference
    it was (a Schedule's paragraph 4 or the Act's section 4); absent from traces written before it was kept."""
    verbatim: int
    """Citations whose quote occurs exactly in the cited provision."""
    ms: float
    budget: int
    """The LLM call budget that applied (meta's simple or multi-hop figure; 0 without a model)."""
    usage: dict[str, int]
    verification: dict[str, int]
    warnings: list[str]
    steps: list[str]
    """The kind of each research step: research, corrective, refinement."""
    corrective_added: int
    """Chunks the corrective step(s) added to the evidence."""
    drafts: list[str]
    """The text streamed, split at each ``answer_revised`` warning (sent by servers before verified streaming, which
    took back what they had streamed; a current server streams one draft: the final answer)."""


def load_records(path: Path) -> list[dict[str, Any]]:
    """The question records of a JSONL file; a conversation's record becomes one record per turn (``conversation``)."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [turn for record in records for turn in conversation(record)]


def conversation(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A conversation (a record with ``turns``: each a ``question`` and its ``gold``, a follow-up also its
    ``self_contained`` wording) as question records asked in order in one session (``session``): the first turn of
    kind ``opening``, the others ``follow-up``, each follow-up followed by its self-contained wording asked in a
    session of its own (kind ``self-contained``), the baseline a follow-up is measured against. Any other record is
    returned as it is."""
    if "turns" not in record:
        return [record]
    cid = str(record["id"])
    rows: list[dict[str, Any]] = []
    for n, turn in enumerate(record["turns"], start=1):
        gold = turn.get("gold", [])
        kind = "opening" if n == 1 else "follow-up"
        rows.append({"id": f"{cid}/{n}", "question": turn["question"], "gold": gold, "kind": kind, "session": cid})
        if n > 1:
            alone = {"id": f"{cid}/{n}s", "question": turn["self_contained"], "gold": gold, "kind": "self-contained"}
            rows.append(alone)
    return rows


def interleave_kinds(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records round-robin by kind (each kind in file order), so a run cut short still covers every kind; a
    conversation's turns (records with a ``session``) keep their order, after the others."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if "session" not in record:
            by_kind[record.get("kind", "all")].append(record)
    queues = list(by_kind.values())
    mixed = [q[i] for i in range(max((len(q) for q in queues), default=0)) for q in queues if i < len(q)]
    return mixed + [r for r in records if "session" in r]


def gold_of(record: dict[str, Any]) -> set[str]:
    return {f"{g['law_id']}#{g['section']}" for g in record.get("gold", [])} | set(record.get("gold_ids", []))


async def answer_one(orchestrator: QueryOrchestrator, record: dict[str, Any], session_id: str) -> Answered:
    """Ask one question through ``orchestrator`` and keep what the report needs from its events."""
    gold = gold_of(record)
    corpus = orchestrator.deps.corpus
    start = time.perf_counter()
    events = [e async for e in orchestrator.stream(QueryRequest(q=record["question"], session_id=session_id))]
    elapsed = round((time.perf_counter() - start) * 1000, 1)
    meta = next((e for e in events if isinstance(e, MetaEvent)), None)
    warnings: list[str] = [e.code for e in events if isinstance(e, WarningEvent)]
    drafts = [""]
    for event in events:
        if isinstance(event, TokenEvent):
            drafts[-1] += event.text
        elif isinstance(event, WarningEvent) and event.code == "answer_revised" and drafts[-1]:
            drafts.append("")
    final = events[-1]
    answered = Answered(
        route=meta.route if meta else "unknown", answer="", abstained=False, outcome="", verified=False,
        cached=False, sections=[],
        error=final.code if isinstance(final, ErrorEvent) else "", cited=[], verbatim=0, ms=elapsed, budget=0,
        usage={}, verification={}, warnings=warnings, steps=[], corrective_added=0,
        drafts=[d for d in drafts if d],
    )  # fmt: skip
    if not isinstance(final, FinalEvent):
        return answered
    budgets = meta.budgets if meta else {}
    key = "llm_calls_multi_hop" if final.usage.get("multi_hop") else "llm_calls_simple"
    for citation in final.citations:
        chunk = corpus.chunks.get(citation.chunk_id)
        unit = section_unit(citation.section_id)
        answered["cited"].append(chunk.source_id if chunk is not None and chunk.source_id in gold else unit)
        answered["sections"].append(citation.section_id)
        document = await corpus.document(citation.doc_key)
        section = document.section(citation.section_id) if document else None
        answered["verbatim"] += bool(section is not None and citation.quote and citation.quote in section.text)
    answered["answer"], answered["abstained"], answered["verified"] = final.answer, final.abstained, final.verified
    answered["outcome"] = final.outcome
    answered["cached"], answered["budget"] = final.cached, int(budgets.get(key, 0))
    answered["usage"], answered["verification"] = dict(final.usage), dict(final.verification)
    answered["steps"] = [s.kind for s in final.research]
    answered["corrective_added"] = sum(len(s.added) for s in final.research if s.kind == "corrective")
    return answered


def extractive_twin(orchestrator: QueryOrchestrator) -> QueryOrchestrator:
    """The same graph, corpus and retrieval with no model (and a QA memory of its own, so neither pipeline is served
    the other's remembered answer): the quote-only answer to compare a model's with."""
    deps = dataclasses.replace(orchestrator.deps, llm=None, memory=QaMemory())
    return QueryOrchestrator(orchestrator.graph, deps)


Progress = Callable[[int, int, dict[str, Any]], None]
"""Called after each question: (questions done, questions in the run, its trace line)."""


@dataclass(slots=True)
class AnswerRun:
    lines: list[dict[str, Any]]
    """One per question asked (or resumed from the trace): id, kind, question, gold and ``answers`` by pipeline."""
    skipped: int = 0
    """Questions not started because the time budget was spent."""
    resumed: int = 0
    seconds: float = 0.0
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The lines a trace holds; a last line cut off mid-write (the run was killed) is dropped."""
    lines = []
    for raw in path.read_text().splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return lines


def append_line(path: Path, line: dict[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(line) + "\n")


async def evaluate_answers(
    pipelines: Mapping[str, QueryOrchestrator],
    records: Sequence[dict[str, Any]],
    trace: Path | None = None,
    time_budget_s: float = 0.0,
    progress: Progress | None = None,
    done: Sequence[dict[str, Any]] = (),
) -> AnswerRun:
    """Ask every question through each pipeline in turn, appending one JSON line per question to ``trace`` as it goes
    (so a run cut short keeps what it did). No question is started once ``time_budget_s`` (0: none) has passed;
    questions in ``done`` (trace lines of an earlier run) are kept as they are and not asked again."""
    start = time.monotonic()
    run = AnswerRun([])
    earlier = {str(line["id"]): line for line in done if set(pipelines) <= set(line.get("answers", {}))}
    for n, record in enumerate(records, start=1):
        qid = str(record["id"])
        if qid in earlier:
            run.lines.append(earlier[qid])
            run.resumed += 1
            continue
        if time_budget_s and time.monotonic() - start >= time_budget_s:
            run.skipped = sum(str(r["id"]) not in earlier for r in records[n - 1 :])
            break
        line: dict[str, Any] = {
            "v": TRACE_VERSION, "id": qid, "kind": record.get("kind", "all"), "question": record["question"],
            "gold": sorted(gold_of(record)), "answers": {},
        }  # fmt: skip
        for label, orchestrator in pipelines.items():
            # A session of its own per run: the data dir's checkpoints keep sessions, and a re-run that asked in the
            # same one would answer a follow-up (a model may repeat an earlier run's answer from the history).
            # A conversation's turns share their conversation's.
            session = re.sub(r"[^A-Za-z0-9._:-]", ".", f"eval-{run.run_id}-{label}-{record.get('session', qid)}")
            line["answers"][label] = await answer_one(orchestrator, record, session)
        run.lines.append(line)
        if trace is not None:
            await asyncio.to_thread(append_line, trace, line)
        if progress is not None:
            progress(n, len(records), line)
    run.seconds = time.monotonic() - start
    return run


def shown(answered: Answered) -> str:
    """Which of ``FINAL_SHOWN`` a model-path answer ended as, read from its ``final`` and warnings."""
    warnings, usage = answered["warnings"], answered["usage"]
    if answered["error"]:
        return "error"
    if answered["route"] != "rag_qa":
        return "not answered from the corpus"
    if answered["abstained"]:  # also where the model's answer fell short and the quote-only path abstains
        return "abstention"
    if "model_answer_unverified" in warnings:
        return "extractive (model unverified)"
    if "model_abstained" in warnings:
        return "extractive (model abstained)"
    if "statements_removed" in warnings:
        return "model, statements removed"
    synthesized = usage.get("calls_synthesize", 0) - usage.get("errors_synthesize", 0)
    if synthesized < 1 or answered["cached"]:
        return "extractive (no model answer)"
    # The gate put a marker on a sentence the model cited wrongly or not at all before it was sent.
    verification = answered["verification"]
    reattached = verification.get("citations_reattributed", 0) + verification.get("citations_located", 0)
    return "model, citations re-attached" if reattached else "model as written"


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1); 0 for no values."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


@dataclass(slots=True)
class AnswerTally:
    questions: int = 0
    with_gold: int = 0
    cited_gold: int = 0
    citations: int = 0
    gold_citations: int = 0
    verbatim: int = 0
    abstained: int = 0
    screened: int = 0
    verified: int = 0
    errors: int = 0
    answered: int = 0
    """Questions whose outcome was ``answered`` (an older trace: not abstained)."""
    answered_gold: int = 0
    """Questions with gold answered (not merely shown the closest provisions) with a gold provision cited."""
    related: int = 0
    ms: list[float] = field(default_factory=list)

    def add(self, answered: Answered, gold: set[str]) -> None:
        self.questions += 1
        outcome = answered.get("outcome") or ("" if answered["error"] or answered["abstained"] else "answered")
        self.answered += outcome == "answered"
        self.related += outcome == "related"
        self.answered_gold += outcome == "answered" and bool(gold & set(answered["cited"]))
        self.ms.append(answered["ms"])
        self.errors += bool(answered["error"])
        self.abstained += answered["abstained"]
        self.verified += answered["verified"]
        self.screened += answered["route"] == "blocked" or "prompt_injection" in answered["warnings"]
        self.with_gold += bool(gold)
        self.citations += len(answered["cited"])
        self.gold_citations += sum(u in gold for u in answered["cited"])
        self.cited_gold += bool(gold & set(answered["cited"]))
        self.verbatim += answered["verbatim"]


def tally(lines: Sequence[dict[str, Any]], label: str) -> dict[str, AnswerTally]:
    """One pipeline's figures per question kind, and for 'all'."""
    tallies: dict[str, AnswerTally] = defaultdict(AnswerTally)
    for line in lines:
        answered = line["answers"].get(label)
        if answered is None:
            continue
        for kind in {line["kind"], "all"}:
            tallies[kind].add(answered, set(line["gold"]))
    return dict(tallies)


def _share(a: int, b: int) -> str:
    return f"{a / b:.2f} ({a}/{b})" if b else "–"


def _kind_table(tallies: dict[str, AnswerTally]) -> list[str]:
    lines = ["| kind | questions | cites a gold provision | gold share of citations | quotes verbatim in cited "
             "provision | abstained | screened as injection | verified | P50 s | P95 s | answered | answered with "
             "gold | related (closest provisions) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for kind in sorted(tallies, key=lambda k: (k == "all", k)):
        t = tallies[kind]
        lines.append(
            f"| {kind} | {t.questions} | {_share(t.cited_gold, t.with_gold)} | {_share(t.gold_citations, t.citations)} "
            f"| {_share(t.verbatim, t.citations)} | {_share(t.abstained, t.questions)} | "
            f"{_share(t.screened, t.questions)} | {_share(t.verified, t.questions)} | "
            f"{percentile(t.ms, 0.5) / 1000:.1f} | {percentile(t.ms, 0.95) / 1000:.1f} | "
            f"{_share(t.answered, t.questions)} | {_share(t.answered_gold, t.with_gold)} | "
            f"{_share(t.related, t.questions)} |"
        )
    return lines


def _model_sections(lines: Sequence[dict[str, Any]]) -> list[str]:
    answers: list[Answered] = [line["answers"]["model"] for line in lines if "model" in line["answers"]]
    out: list[str] = []
    if not answers:
        return out
    usages = [a["usage"] for a in answers]
    skills = sorted({k.removeprefix("calls_") for u in usages for k in u if k.startswith("calls_")})
    out += ["", "### LLM calls by skill", "",
            "| skill | calls | answered JSON | JSON-valid rate (of replies) | unparsable | timed out | errors |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for skill in skills:
        calls, timeouts, errors, unparsable = (sum(u.get(f"{p}_{skill}", 0) for u in usages)
                                               for p in ("calls", "timeouts", "errors", "unparsable"))  # fmt: skip
        replies = calls - timeouts - errors
        ok = replies - unparsable
        valid = _share(ok, replies) if skill in STRUCTURED_SKILLS else "– (streamed text)"
        out.append(f"| {skill} | {calls} | {ok if skill in STRUCTURED_SKILLS else '–'} | {valid} | {unparsable} | "
                   f"{timeouts} | {errors} |")  # fmt: skip
    per_question = [u.get("llm_calls", 0) for u in usages]
    over = sum(a["usage"].get("llm_calls", 0) > a["budget"] for a in answers)
    budgets = sorted({a["budget"] for a in answers})
    tokens_in = [u.get("input_tokens", 0) for u in usages]
    tokens_out = [u.get("output_tokens", 0) for u in usages]
    out += ["", "### Budgets and tokens", "",
            f"- LLM calls per question: mean {statistics.fmean(per_question):.2f}, P50 "
            f"{percentile(per_question, 0.5):.0f}, max {max(per_question)}; budgets applied {budgets} "
            f"(meta.budgets: simple / multi-hop); over budget: {over}",
            f"- multi-hop questions: {sum(u.get('multi_hop', 0) for u in usages)}; research steps per question: mean "
            f"{statistics.fmean(u.get('research_steps', 0) for u in usages):.2f}; query rewrites: "
            f"{sum(u.get('query_rewrites', 0) for u in usages)}; retries: "
            f"{sum(u.get('llm_retries', 0) for u in usages)}",
            f"- tokens per question: input mean {statistics.fmean(tokens_in):.0f} (total {sum(tokens_in)}), output "
            f"mean {statistics.fmean(tokens_out):.0f} (total {sum(tokens_out)}); a streamed answer's output tokens are "
            "counted one per chunk (llama.cpp reports no usage in streams), timed-out calls report none"]  # fmt: skip
    synthesized = [a for a in answers if a["usage"].get("calls_synthesize", 0) > a["usage"].get("errors_synthesize", 0)]
    corrected = [a for a in synthesized if "corrective" in a["steps"]]

    def count(code: str) -> int:
        return sum(code in a["warnings"] for a in synthesized)

    v = {key: sum(a["verification"].get(key, 0) for a in synthesized) for key in (
        "claims", "claims_supported", "claims_unsupported", "claims_uncited", "claims_missing_facts",
        "claims_opposite", "claims_off_topic", "claims_dropped_condition", "quotes_checked", "quotes_failed",
        "citations_located",
        "citations_from_references", "citations_reattributed",
    )}  # fmt: skip
    out += ["", "### The model's answers through verification", "",
            f"- questions with a model answer (synthesize replied): {len(synthesized)} of {len(answers)}",
            f"- failed the first check: {len(corrected)} earned the corrective step (QuoteVerifier: "
            f"{count('unverified_quote')} with a quote not in the provisions; AttributionGate: "
            f"{count('unsupported_statement')} with unsupported or uncited statements; {count('single_source')} "
            "resting on one provision of several relevant); the corrective step added "
            f"{sum(a['corrective_added'] for a in corrected)} chunks in all and the answer was written again",
            f"- after it: {sum(a['verified'] for a in corrected)} of {len(corrected)} corrected answers ended verified "
            "(by the model's answer, trimmed, or the extractive fallback)",
            f"- the final gate, summed over the kept model answers: {v['claims']} statements about the law, "
            f"{v['claims_supported']} supported, {v['claims_unsupported']} cited but not supported, "
            f"{v['claims_uncited']} uncited, {v['claims_missing_facts']} with a number/date/body not in the source, "
            f"{v['claims_opposite']} saying the opposite of it, {v['claims_off_topic']} applying it to a topic it "
            f"never mentions, {v['claims_dropped_condition']} stating its rule without the condition it attaches; "
            f"quotes {v['quotes_checked']} checked, {v['quotes_failed']} not verbatim; the gate attached citations "
            f"itself: {v['citations_located']} located (no marker), {v['citations_from_references']} from a natural "
            f"reference ('section 3 of …'), {v['citations_reattributed']} moved from a wrong [n]",
            f"- the stall watchdog stopped {count('llm_stalled')} answers; {count('deadline_reached')} ran out of the "
            "question's time", "", "What the reader was shown (model path):", "", "| shown | questions |",
            "| --- | ---: |"]  # fmt: skip
    outcomes = [shown(a) for a in answers]
    out += [f"| {name} | {outcomes.count(name)} |" for name in FINAL_SHOWN if outcomes.count(name)]
    return out


def _comparison(lines: Sequence[dict[str, Any]]) -> list[str]:
    pairs = [(line, line["answers"]["model"], line["answers"]["extractive"]) for line in lines
             if {"model", "extractive"} <= set(line["answers"])]  # fmt: skip
    if not pairs:
        return []
    worse = [line["id"] for line, m, e in pairs if e["verified"] and not m["verified"]]
    gold = [(bool(set(line["gold"]) & set(m["cited"])), bool(set(line["gold"]) & set(e["cited"])))
            for line, m, e in pairs if line["gold"]]  # fmt: skip
    unanswerable = [(m["abstained"], e["abstained"]) for line, m, e in pairs if not line["gold"]]
    answerable = [(m["abstained"], e["abstained"]) for line, m, e in pairs if line["gold"]]
    out = ["", "## Model vs extractive, question by question", "",
           f"- {len(pairs)} questions answered by both on the same data dir",
           f"- verified: model {sum(m['verified'] for _, m, _ in pairs)}, extractive "
           f"{sum(e['verified'] for _, _, e in pairs)}; the model's answer less verified than the quote-only answer: "
           f"{len(worse)}" + (f" ({', '.join(worse)})" if worse else ""),
           f"- a gold provision cited (of {len(gold)} with gold): model {sum(m for m, _ in gold)}, extractive "
           f"{sum(e for _, e in gold)}; both {sum(m and e for m, e in gold)}, model only "
           f"{sum(m and not e for m, e in gold)}, extractive only {sum(e and not m for m, e in gold)}",
           f"- abstained when unanswerable (of {len(unanswerable)}): model {sum(m for m, _ in unanswerable)}, "
           f"extractive {sum(e for _, e in unanswerable)}; abstained when answerable (of {len(answerable)}): model "
           f"{sum(m for m, _ in answerable)}, extractive {sum(e for _, e in answerable)}",
           "", "| id | kind | model shows | verified (model / extr.) | gold cited (model / extr.) | abstained "
           "(model / extr.) | LLM calls | model s | extr. s |",
           "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |"]  # fmt: skip

    def yn(a: bool, b: bool) -> str:
        return f"{'yes' if a else 'no'} / {'yes' if b else 'no'}"

    for line, m, e in pairs:
        g = set(line["gold"])
        gold_cell = yn(bool(g & set(m["cited"])), bool(g & set(e["cited"]))) if g else "–"
        out.append(f"| {line['id']} | {line['kind']} | {shown(m)} | {yn(m['verified'], e['verified'])} | {gold_cell} "
                   f"| {yn(m['abstained'], e['abstained'])} | {m['usage'].get('llm_calls', 0)} | {m['ms'] / 1000:.0f} "
                   f"| {e['ms'] / 1000:.1f} |")  # fmt: skip
    return out


def answers_report(title: str, run: AnswerRun, notes: Sequence[str]) -> str:
    """The Markdown report: per pipeline a table by question kind, the model's calls, gate and fallbacks, and the
    model and extractive answers side by side when both ran."""
    asked = len(run.lines)
    lines = [f"# {title}", "", *notes,
             f"- questions reported: {asked} ({run.resumed} from an earlier run's trace); not started because the "
             f"time budget was spent: {run.skipped}", ""]  # fmt: skip
    labels = list(dict.fromkeys(label for line in run.lines for label in line["answers"]))
    for label in labels:
        tallies = tally(run.lines, label)
        errors = tallies["all"].errors if "all" in tallies else 0
        heading = "Extractive (no model)" if label == "extractive" else "With the model" if label == "model" else label
        lines += ([f"## {heading}", ""] if len(labels) > 1 or label == "model" else []) + _kind_table(tallies)
        if errors:
            lines += ["", f"{errors} question(s) ended with an error event instead of `final`."]
        if label == "model":
            lines += _model_sections(run.lines)
        lines.append("")
    lines += _comparison(run.lines)
    return "\n".join(lines).rstrip() + "\n"
