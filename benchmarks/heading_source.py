"""How far a heading search over every provision could reach: for each question, where its gold provision ranks among
all provisions ordered by how close their heading (``heading_text``: law title and heading) is in meaning to the
question, as the search embeds it (with the lay-term thesaurus's words), beside where the service's own search left
it.

    python benchmarks/heading_source.py --data-dir D --questions Q [--kinds lay_,heldout_,direct] [--out rows.jsonl]

The headings and their vectors are the service's own (``HybridRetriever.heading_index``: the heading vectors
ingestion kept). Prints, per question kind: the gold provision among the first 1 / 3 / 10 / 30 provisions of the
heading search; and for the questions whose evidence (the top 6 chunks and the best chunk of further provisions)
lacks the gold provision, by where it was (``lay_reach.py --why``: neither search's list, one only, both), how many
the heading search puts among its first 10 / 30: the most a heading list fused into the search could add. The
service's search runs as configured (``GWETA_RETRIEVAL__*``), so with ``GWETA_RETRIEVAL__HEADING_SOURCE`` above 0 the
misses are those left with the heading list fused in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from api.evaluation.core import section_unit
from api.services import open_services
from api.settings import Settings
from api.tools.retrieval import with_provisions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lay_reach import load, miss_reason  # noqa: E402

TOPS = (1, 3, 10, 30)


async def measure(args: argparse.Namespace) -> int:
    questions = load(args.questions, args.kinds.split(","))
    settings = Settings(data_dir=args.data_dir)
    top_k = settings.retrieval.top_k  # the evidence an answer's search hands on
    settings = settings.model_copy(
        update={"retrieval": settings.retrieval.model_copy(update={"cache_ttl_s": 0, "top_k": 30})}
    )
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    rows = []
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        chunks = services.corpus.chunks
        filters = retriever.scoped_filters({}, "")
        start = time.perf_counter()
        index = await retriever.heading_index()
        built = time.perf_counter() - start
        print(
            f"{len(index.texts)} distinct headings, {sum(map(len, index.provisions))} provisions with a heading; "
            f"index built in {built:.2f} s"
        )
        searching = 0.0
        common = max(1, len(retriever.lexical) // 200)  # as the search: a word the corpus uses often is not expanded
        in_use = lambda word: retriever.lexical.document_frequency(word) >= common  # noqa: E731
        for q in questions:
            question = str(q["question"])
            lay = retriever.thesaurus.expand(question, in_use) if retriever.thesaurus else None
            vector = await retriever.embedder.embed_query(lay.dense_query if lay else question)
            start = time.perf_counter()
            found = index.search(vector, max(TOPS), lambda cid: filters.admits(chunks[cid]))
            searching += time.perf_counter() - start
            gold = q["gold"]
            assert isinstance(gold, list)
            wanted = {f"{g['law_id']}#{g['section']}" for g in gold}
            at = next((n for n, h in enumerate(found, 1) if section_unit(chunks[h.chunk_id].section_id) in wanted), 0)
            result = await retriever.retrieve(question, filters=filters)
            evidence = with_provisions(result.hits, top_k, settings.retrieval.section_chunks)
            in_evidence = any(section_unit(h.chunk.section_id) in wanted for h in evidence)
            kind = str(q["kind"])
            row = counts[kind]
            row["n"] += 1
            row["evidence"] += in_evidence
            for top in TOPS:
                row[f"heading {top}"] += 0 < at <= top
            reason = ""
            if not in_evidence:
                distinct = list(dict.fromkeys(section_unit(h.chunk.section_id) for h in result.hits))
                reason = miss_reason(result.stages, chunks, wanted, distinct).split(" / ")[0]
                tally = misses[kind][reason]
                tally[0] += 1
                tally[1] += 0 < at <= 10
                tally[2] += 0 < at <= 30
            rows.append({"id": q["id"], "kind": kind, "heading_rank": at, "in_evidence": in_evidence, "miss": reason})
    print(f"heading search: {1000 * searching / max(1, len(questions)):.1f} ms a question ({max(TOPS)} provisions)")
    print("| kind | n | gold in the evidence | heading search: gold first | best 3 | best 10 | best 30 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in sorted(counts):
        r = counts[kind]
        cells = " | ".join(str(r[f"heading {t}"]) for t in TOPS)
        print(f"| {kind} | {r['n']} | {r['evidence']} | {cells} |")
    print("\nEvidence misses by where the gold provision was: how many, and of those the heading search's best 10 / 30")
    for kind in sorted(misses):
        tallies = sorted(misses[kind].items())
        cells = "; ".join(f"{reason} {n} ({top10} / {top30})" for reason, (n, top10, top30) in tallies)
        print(f"- {kind} ({sum(t[0] for t in misses[kind].values())} missing): {cells}")
    if args.out:
        args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--kinds", default="lay_,heldout_,direct,paraphrase,multi_hop")
    parser.add_argument("--out", type=Path, help="each question's gold heading rank and miss reason, as JSON lines")
    return asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
