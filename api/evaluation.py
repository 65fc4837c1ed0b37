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

import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.schemas.documents import Chunk
from api.schemas.events import FinalEvent, MetaEvent, WarningEvent
from api.schemas.query import QueryRequest
from api.services import Services
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


Config = tuple[str, Mode, bool, bool]
"""(name, mode, rerank, expand)."""


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
    for name, mode, rerank, expand in configs:
        per_kind: dict[str, Scores] = defaultdict(Scores)
        for q in questions:
            start = time.perf_counter()
            result = await retriever.retrieve(q.text, top_k=60, mode=mode, rerank=rerank, expand=expand)
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
    ms: list[float] = field(default_factory=list)


def load_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def evaluate_answers(services: Services, records: Sequence[dict[str, Any]]) -> dict[str, AnswerTally]:
    """Ask every question through the orchestrator; tally citations, quotes, abstentions and screening per kind."""
    corpus = services.corpus
    tallies: dict[str, AnswerTally] = defaultdict(AnswerTally)
    for record in records:
        gold = {f"{g['law_id']}#{g['section']}" for g in record.get("gold", [])} | set(record.get("gold_ids", []))
        kind = record.get("kind", "all")
        start = time.perf_counter()
        request = QueryRequest(q=record["question"], session_id=f"eval-{record['id']}")
        events = [e async for e in services.orchestrator.stream(request)]
        ms = (time.perf_counter() - start) * 1000
        final = events[-1]
        if not isinstance(final, FinalEvent):
            continue
        route = next((e.route for e in events if isinstance(e, MetaEvent)), "")
        for tally in (tallies[kind], tallies["all"]):
            tally.questions += 1
            tally.ms.append(ms)
            tally.abstained += final.abstained
            tally.verified += final.verified
            tally.screened += route == "blocked" or any(
                isinstance(e, WarningEvent) and e.code == "prompt_injection" for e in events
            )
            if gold:
                tally.with_gold += 1
            units = []
            for citation in final.citations:
                unit = section_unit(citation.section_id)
                chunk = corpus.chunks.get(citation.chunk_id)
                units.append(chunk.source_id if chunk is not None and chunk.source_id in gold else unit)
                document = await corpus.document(citation.doc_key)
                section = document.section(citation.section_id) if document else None
                tally.verbatim += bool(section is not None and citation.quote in section.text)
            tally.citations += len(units)
            tally.gold_citations += sum(u in gold for u in units)
            tally.cited_gold += bool(gold & set(units))
    return dict(tallies)


def answers_report(title: str, tallies: dict[str, AnswerTally], notes: Sequence[str]) -> str:
    def share(a: int, b: int) -> str:
        return f"{a / b:.2f} ({a}/{b})" if b else "–"

    lines = [f"# {title}", "", *notes, "",
             "| kind | questions | cites a gold provision | gold share of citations | quotes verbatim in cited "
             "provision | abstained | screened as injection | verified | P50 ms |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for kind in sorted(tallies, key=lambda k: (k == "all", k)):
        t = tallies[kind]
        p50 = sorted(t.ms)[len(t.ms) // 2] if t.ms else 0.0
        lines.append(
            f"| {kind} | {t.questions} | {share(t.cited_gold, t.with_gold)} | {share(t.gold_citations, t.citations)} "
            f"| {share(t.verbatim, t.citations)} | {share(t.abstained, t.questions)} | "
            f"{share(t.screened, t.questions)} | {share(t.verified, t.questions)} | {p50:.0f} |"
        )
    return "\n".join(lines) + "\n"
