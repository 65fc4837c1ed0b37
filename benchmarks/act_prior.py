"""Whether ranking the Acts by how close a question is to each Act as a whole finds the gold provision's Act: offline,
over the vectors a data dir already holds, against the Acts of the evidence the service's search hands on.

    python benchmarks/act_prior.py --data-dir D --questions Q [--kinds lay_,direct] [--out per-question.jsonl]

An Act's vector, each way measured (unit vectors; cosine to the question's vector as the search embeds it, with the
lay-term thesaurus's words added when it is on):
- ``chunks``: the mean of its chunks' stored vectors;
- ``headings``: the mean of its provisions' heading vectors (``heading_text``: law title and heading);
- ``title``: its title's vector alone;
- ``best3``: the mean cosine of its three closest chunks (no centroid: the dense search's hits grouped by Act).

Prints, per question kind and per way: the gold Act first / among the best 3 / 5 / 10 Acts; and for the evidence (the
top 6 chunks and the best chunk of further provisions) the gold Act as the first hit's Act, among its first 3 distinct
Acts, anywhere in it. Then, for the questions whose evidence holds no provision of the gold Act, how many each way
puts it among its best 3 / 5 (what a prior could add), and for those whose evidence does, how many it leaves out of
its best 5 (what it could cost); and how often a dense search within each way's best 3 Acts has the gold provision
among its first 10 chunks (what such a search, as one more list, could bring in that the searches miss).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import numpy.typing as npt

from api.evaluation.core import section_unit
from api.services import open_services
from api.settings import Settings
from api.text.units import heading_text
from api.tools.retrieval import Retrieved, with_provisions

TOPS = (1, 3, 5, 10)
Matrix = npt.NDArray[np.float32]


def act_of(section_id: str) -> str:
    return section_unit(section_id).split("#", 1)[0]


def unit_rows(matrix: Matrix) -> Matrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def centroids(groups: dict[str, list[int]], vectors: Matrix, acts: list[str]) -> Matrix:
    """Each Act's mean of its unit rows of ``vectors`` (the rows ``groups`` lists for it), as a unit vector."""
    unit = unit_rows(vectors)
    return unit_rows(np.stack([unit[groups[a]].mean(axis=0) if groups.get(a) else unit[0] * 0 for a in acts]))


def in_evidence_unit(evidence: list[Retrieved], units: set[str]) -> bool:
    return any(section_unit(h.chunk.section_id) in units for h in evidence)


def best_mean(similarity: npt.NDArray[np.float32], owner: npt.NDArray[np.int64], n_acts: int, m: int) -> list[float]:
    """Per Act, the mean of its ``m`` highest ``similarity`` values (fewer where it has fewer rows)."""
    order = np.argsort(-similarity, kind="stable")
    taken = np.zeros(n_acts, dtype=np.int64)
    total = np.zeros(n_acts, dtype=np.float64)
    for i in order:
        a = owner[i]
        if taken[a] < m:
            taken[a] += 1
            total[a] += similarity[i]
    return [float(t / c) if c else -1.0 for t, c in zip(total, taken, strict=True)]


async def measure(args: argparse.Namespace) -> int:
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [r for r in rows if r.get("gold") and any(str(r["kind"]).startswith(k) for k in args.kinds.split(","))]
    settings = Settings(data_dir=args.data_dir)
    settings = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"cache_ttl_s": 0})})
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        corpus = services.corpus
        filters = retriever.scoped_filters({}, "")
        stored = await retriever.vectors.vectors()  # type: ignore[attr-defined]
        ids = sorted(stored)
        chunk_matrix = np.stack([stored[i] for i in ids]).astype(np.float32)
        chunk_act = [act_of(corpus.chunks[i].section_id) for i in ids]
        acts = sorted(set(chunk_act))
        index = {a: n for n, a in enumerate(acts)}
        owner = np.asarray([index[a] for a in chunk_act], dtype=np.int64)
        by_chunks: dict[str, list[int]] = defaultdict(list)
        for row, a in enumerate(chunk_act):
            by_chunks[a].append(row)
        headings: dict[str, list[str]] = defaultdict(list)
        titles: dict[str, str] = {}
        for chunk in corpus.chunks.values():
            a = act_of(chunk.section_id)
            titles.setdefault(a, chunk.title)
            if (text := heading_text(chunk)) and text not in headings[a]:
                headings[a].append(text)
        heading_texts = [t for a in acts for t in headings[a]]
        heading_vectors = np.asarray(await retriever.embedder.embed_documents(heading_texts), dtype=np.float32)
        by_headings: dict[str, list[int]] = defaultdict(list)
        for row, owner_act in enumerate(a for a in acts for _ in headings[a]):
            by_headings[owner_act].append(row)
        title_vectors = np.asarray(await retriever.embedder.embed_documents([titles[a] for a in acts]), np.float32)
        ways: dict[str, Matrix] = {
            "chunks": centroids(by_chunks, chunk_matrix, acts),
            "headings": centroids(by_headings, heading_vectors, acts),
            "title": unit_rows(title_vectors),
        }
        unit_chunks = unit_rows(chunk_matrix)
        print(f"{len(acts)} Acts, {len(ids)} chunks, {len(heading_texts)} headings; {len(questions)} questions")

        # As the search does: a lay word the corpus uses in 1 chunk in 200 is not expanded.
        common = max(1, len(retriever.lexical) // 200)
        in_use = lambda word: retriever.lexical.document_frequency(word) >= common  # noqa: E731
        counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        out = []
        for q in questions:
            kind = str(q["kind"]).split("_", 1)[0] if str(q["kind"]).startswith(("lay_", "heldout_")) else q["kind"]
            gold_acts = {str(g["law_id"]) for g in q["gold"]}
            lay = retriever.thesaurus.expand(str(q["question"]), in_use) if retriever.thesaurus else None
            query = lay.dense_query if lay else str(q["question"])
            vector = np.asarray(await retriever.embedder.embed_query(query), dtype=np.float32).reshape(-1)
            vector /= max(float(np.linalg.norm(vector)), 1e-12)
            result = await retriever.retrieve(str(q["question"]), filters=filters)
            evidence = with_provisions(result.hits, settings.retrieval.top_k, settings.retrieval.section_chunks)
            ev_acts = list(dict.fromkeys(act_of(h.chunk.section_id) for h in evidence))
            row = counts[str(kind)]
            row["n"] += 1
            in_evidence = bool(gold_acts & set(ev_acts))
            row["ev first"] += bool(ev_acts and ev_acts[0] in gold_acts)
            row["ev 3"] += bool(gold_acts & set(ev_acts[:3]))
            row["ev any"] += in_evidence
            row["ev missing"] += not in_evidence
            row["gold missing"] += not in_evidence_unit(evidence, {f"{g['law_id']}#{g['section']}" for g in q["gold"]})
            record = {"id": q["id"], "kind": q["kind"], "gold_acts": sorted(gold_acts), "evidence_acts": ev_acts}
            similarity = unit_chunks @ vector
            scores = {way: list(map(float, matrix @ vector)) for way, matrix in ways.items()}
            scores["best3"] = best_mean(similarity, owner, len(acts), 3)
            gold_units = {f"{g['law_id']}#{g['section']}" for g in q["gold"]}
            for way, values in scores.items():
                ranked = [acts[i] for i in sorted(range(len(acts)), key=lambda i: (-values[i], acts[i]))]
                place = min((ranked.index(a) + 1 for a in gold_acts if a in index), default=len(acts) + 1)
                # The dense search within this way's best 3 Acts: its first 10 chunks, by provision.
                scope = np.isin(owner, [index[a] for a in ranked[:3]])
                within = np.flatnonzero(scope)[np.argsort(-similarity[scope], kind="stable")[:10]]
                scoped = {section_unit(corpus.chunks[ids[i]].section_id) for i in within}
                record[way] = {"gold_rank": place, "top": ranked[:5], "scoped_gold": bool(scoped & gold_units)}
                row[f"{way} scoped"] += bool(scoped & gold_units)
                if not in_evidence_unit(evidence, gold_units):
                    row[f"{way} scoped adds"] += bool(scoped & gold_units)
                for top in TOPS:
                    row[f"{way} {top}"] += place <= top
                if not in_evidence:
                    row[f"{way} adds 3"] += place <= 3
                    row[f"{way} adds 5"] += place <= 5
                else:
                    row[f"{way} loses 5"] += place > 5
            out.append(record)
    for kind in sorted(counts):
        r = counts[kind]
        print(f"\n## {kind} (n {r['n']})")
        print(f"evidence: first hit's Act {r['ev first']}, first 3 Acts {r['ev 3']}, any {r['ev any']}")
        print(
            "| way | first | best 3 | best 5 | best 10 | gold Act not in evidence: best 3 / 5 "
            "| in evidence: not in best 5 |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for way in (*ways, "best3"):
            tops = " | ".join(str(r[f"{way} {t}"]) for t in TOPS)
            print(
                f"| {way} | {tops} | {r[f'{way} adds 3']} / {r[f'{way} adds 5']} of {r['ev missing']} "
                f"| {r[f'{way} loses 5']} of {r['ev any']} |"
            )
        print(
            "The dense search within each way's best 3 Acts: gold provision among its first 10 chunks "
            "(of the questions whose evidence lacks it)"
        )
        for way in (*ways, "best3"):
            print(f"- {way}: {r[f'{way} scoped']} of {r['n']} ({r[f'{way} scoped adds']} of {r['gold missing']})")
    if args.out:
        args.out.write_text("".join(json.dumps(o) + "\n" for o in out))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--kinds", default="lay_,direct,paraphrase,multi_hop")
    parser.add_argument("--out", type=Path, help="each question's gold Act rank and best Acts each way, as JSON lines")
    return asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
