"""Retrieval alone for lay questions: where each question's gold provision ranks among the service's hybrid search
hits (distinct provisions counted as they come, chunks of one provision once), by question kind.

Faster than the full answer evaluation (no composing, no judge), so a search change is measured here first. The
service's own retriever and settings (environment variables ``GWETA_RETRIEVAL__*`` set a variant), cache off, the
public tenant's scope as every request applies it.

    python benchmarks/lay_reach.py --data-dir D --questions Q [--kinds lay_,heldout_,direct] [--misses out.jsonl]

Prints, per kind: questions, the gold provision among the top 6 chunks, among the best 1 / 3 / 6 distinct
provisions and among the top 10 / 30 chunks; among the evidence an answer's search hands on (the top 6 chunks and
the best chunk of further provisions, ``retrieval.section_chunks``), with its mean size; and among what a
``related`` reply chosen from that evidence shows. With ``--why``, also where the gold provision was for each
question whose evidence lacks it: found by neither search's list, by the dense or the BM25 list only, or by both
but ranked below the evidence; and whether its Act is among the six best distinct provisions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from api.composer.related import related_quotes
from api.evaluation.core import section_unit
from api.schemas.documents import Chunk
from api.services import open_services
from api.settings import Settings
from api.tools.retrieval import with_provisions

DEPTHS = (6, 10, 30)  # chunks
PROVISIONS = (1, 3, 6)  # distinct provisions


def load(path: Path, kinds: list[str]) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("gold") and any(str(r["kind"]).startswith(k) for k in kinds)]


def miss_reason(
    stages: Mapping[str, Sequence[tuple[str, float]]], chunks: Mapping[str, Chunk], wanted: set[str],
    distinct: Sequence[str],
) -> str:  # fmt: skip
    """Where a gold provision the evidence lacks was: in which search's list (neither, dense only, BM25 only, both),
    and whether its Act is among the six best distinct provisions (the wrong Act, or the right Act's wrong section)."""
    found = [name for name in ("dense", "bm25")
             if any(section_unit(chunks[cid].section_id) in wanted for cid, _ in stages.get(name, ()))]  # fmt: skip
    where = {0: "neither", 2: "both"}.get(len(found)) or f"{found[0]} only"
    acts = {unit.split("#", 1)[0] for unit in wanted}
    same_act = any(unit.split("#", 1)[0] in acts for unit in distinct[:6])
    return f"{where} / {'its Act' if same_act else 'another Act'}"


async def measure(args: argparse.Namespace) -> int:
    questions = load(args.questions, args.kinds.split(","))
    settings = Settings(data_dir=args.data_dir)
    settings = settings.model_copy(
        update={"retrieval": settings.retrieval.model_copy(update={"cache_ttl_s": 0, "top_k": max(DEPTHS)})}
    )
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses = []
    stages: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    why: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        filters = retriever.scoped_filters({}, "")
        related, among = settings.retrieval.related_provisions, settings.retrieval.related_among
        start = time.perf_counter()
        for q in questions:
            result = await retriever.retrieve(str(q["question"]), filters=filters)
            gold = q["gold"]
            assert isinstance(gold, list)
            wanted = {f"{g['law_id']}#{g['section']}" for g in gold}
            units = [section_unit(h.chunk.section_id) for h in result.hits]
            distinct = list(dict.fromkeys(units))
            row = counts[str(q["kind"])]
            row["n"] += 1
            for depth in DEPTHS:
                row[f"top{depth}"] += any(u in wanted for u in units[:depth])
            for n in PROVISIONS:
                row[f"prov{n}"] += any(u in wanted for u in distinct[:n])
            # The evidence as an answer's search hands it on: the first top_k chunks and the best chunk of further
            # provisions (retrieval.section_chunks), what the closest provisions are chosen from.
            evidence = with_provisions(result.hits, args.top_k, settings.retrieval.section_chunks)
            in_evidence = any(section_unit(h.chunk.section_id) in wanted for h in evidence)
            row["evidence"] += in_evidence
            if not in_evidence:
                why[str(q["kind"])][miss_reason(result.stages, services.corpus.chunks, wanted, distinct)] += 1
            row["evidence_n"] += len(evidence)
            shown = await related_quotes(
                retriever.embedder, str(q["question"]), evidence, result.lay_terms, related, among
            )
            row["related"] += any(section_unit(quote.hit.chunk.section_id) in wanted for quote in shown)
            for stage, ranked in result.stages.items():
                stage_units = [section_unit(services.corpus.chunks[cid].section_id) for cid, _ in ranked[:30]]
                for depth in (6, 30):
                    stages[str(q["kind"])][f"{stage}@{depth}"] += any(u in wanted for u in stage_units[:depth])
            if not any(u in wanted for u in units[:6]):
                misses.append({"id": q["id"], "kind": q["kind"], "gold": sorted(wanted), "top": distinct[:6]})
        elapsed = time.perf_counter() - start
    print(f"{len(questions)} questions, {elapsed:.1f} s ({1000 * elapsed / max(1, len(questions)):.0f} ms each)")
    print(
        "| kind | n | top 6 chunks | best provision | best 3 provisions | best 6 provisions | top 10 | top 30 "
        "| the evidence (chunks a question) | a related reply shows it |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in sorted(counts):
        r = counts[kind]
        cells = [r["top6"], r["prov1"], r["prov3"], r["prov6"], r["top10"], r["top30"]]
        shown = " | ".join(f"{c} ({c / r['n']:.2f})" for c in cells)
        evidence = f"{r['evidence']} ({r['evidence'] / r['n']:.2f}; {r['evidence_n'] / r['n']:.1f})"
        print(f"| {kind} | {r['n']} | {shown} | {evidence} | {r['related']} ({r['related'] / r['n']:.2f}) |")
    if args.stages:
        print("\nEach stage's list (chunks): the gold provision among its top 6 / 30")
        for kind in sorted(stages):
            cells = ", ".join(f"{name} {count}" for name, count in sorted(stages[kind].items()))
            print(f"- {kind} ({counts[kind]['n']}): {cells}")
    if args.why:
        print("\nWhere the gold provision was when the evidence lacks it (each search's list; its Act among the six)")
        for kind in sorted(why):
            cells = ", ".join(f"{reason} {count}" for reason, count in sorted(why[kind].items()))
            print(f"- {kind} ({counts[kind]['n'] - counts[kind]['evidence']}): {cells}")
    if args.misses:
        args.misses.write_text("".join(json.dumps(m) + "\n" for m in misses))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--kinds", default="lay_,heldout_,direct,paraphrase,multi_hop")
    parser.add_argument("--top-k", type=int, default=6, help="the evidence a related reply is chosen from")
    parser.add_argument("--stages", action="store_true", help="also each search stage's own reach")
    parser.add_argument("--why", action="store_true", help="also where the gold was when the evidence lacks it")
    parser.add_argument("--misses", type=Path, help="write the questions whose gold is not in the top 6 here")
    return asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
