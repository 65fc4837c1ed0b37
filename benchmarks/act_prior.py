"""Whether ranking the Acts by how close a question is to each Act as a whole finds the gold provision's Act, measured
offline (numpy over vectors), against the Acts of the evidence the service's search hands on where a data dir is given.

    python benchmarks/act_prior.py --source acts.jsonl --questions Q [--kinds lay_,direct]     # no data dir needed
    python benchmarks/act_prior.py --data-dir D --questions Q [--kinds lay_,direct] [--out per-question.jsonl]

An Act's vector, each way measured (unit vectors; cosine to the question's vector):
- ``headings``: the mean of its provisions' heading vectors (``heading_text``: law title and heading);
- ``title``: its title's vector alone;
- ``best_heading`` / ``best3_headings``: the cosine of its closest heading / the mean of its three closest (no
  centroid: the Act as near as its nearest provisions' headings, what the search's heading ranking reads);
- with ``--data-dir`` also ``chunks`` (the mean of its chunks' stored vectors) and ``best3_chunks`` (the mean cosine of
  its three closest chunks: the dense search's hits grouped by Act).

With ``--source`` the Acts are parsed from the file and their headings and titles embedded with the configured
embeddings model (minutes on a CPU), and the question is embedded as written. With ``--data-dir`` the vectors come
from the data dir (the chunks' stored vectors, the headings' from the stored sentence vectors), the question is
embedded as the search embeds it (with the lay-term thesaurus's words when it is on), and the service's search runs
for each question.

Prints, per question kind and per way: the gold Act first / among the best 3 / 5 / 10 Acts; the gold provision's
heading among the 1 / 3 / 10 / 30 closest headings of all Acts, and of the best 3 Acts by ``headings`` only (the prior
as a filter). With ``--data-dir`` also, for the evidence (the top 6 chunks and the best chunk of further provisions):
the gold Act as the first hit's Act, among its first 3 distinct Acts, anywhere in it; for the questions whose evidence
holds no provision of the gold Act, how many each way puts it among its best 3 / 5 (what a prior could add), and for
those whose evidence does, how many it leaves out of its best 5 (what it could cost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from api.evaluation.core import section_unit
from api.services import open_services
from api.settings import EmbeddingSettings, Settings
from api.text.units import heading_text
from api.tools.embeddings import build_embedder
from api.tools.retrieval import with_provisions

TOPS = (1, 3, 5, 10)
HEADING_TOPS = (1, 3, 10, 30)
Matrix = npt.NDArray[np.float32]


@dataclass
class Acts:
    """The Acts, their headings (text, the provisions it heads, the Act's index) and titles, in one order."""

    keys: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    provisions: list[set[str]] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)

    def add(self, key: str, title: str, heads: dict[str, set[str]]) -> None:
        self.keys.append(key)
        self.titles.append(title)
        for text, units in heads.items():
            self.headings.append(text)
            self.provisions.append(units)
            self.owner.append(len(self.keys) - 1)


def act_of(section_id: str) -> str:
    return section_unit(section_id).split("#", 1)[0]


def unit_rows(matrix: npt.ArrayLike) -> Matrix:
    rows = np.asarray(matrix, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def centroids(owner: npt.NDArray[np.int64], vectors: Matrix, n: int) -> Matrix:
    """Each Act's mean of its unit rows of ``vectors`` (``owner`` names each row's Act), as a unit vector."""
    unit = unit_rows(vectors)
    means = np.zeros((n, unit.shape[1]), dtype=np.float32)
    np.add.at(means, owner, unit)
    return unit_rows(means)


def best_mean(similarity: Matrix, owner: npt.NDArray[np.int64], n: int, m: int) -> Matrix:
    """Per Act, the mean of its ``m`` highest ``similarity`` values (fewer where it has fewer rows; -1 with none)."""
    taken = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    for i in np.argsort(-similarity, kind="stable"):
        if taken[owner[i]] < m:
            taken[owner[i]] += 1
            total[owner[i]] += similarity[i]
    return np.where(taken > 0, total / np.maximum(taken, 1), -1.0).astype(np.float32)


def place(order: Sequence[int], wanted: set[int]) -> int:
    return next((n for n, i in enumerate(order, start=1) if i in wanted), len(order) + 1)


def load_questions(path: Path, kinds: str) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("gold") and any(str(r["kind"]).startswith(k) for k in kinds.split(","))]


def kind_of(q: dict[str, object]) -> str:
    kind = str(q["kind"])
    return kind.split("_", 1)[0] if kind.startswith(("lay_", "heldout_")) else kind


def gold_of(q: dict[str, object]) -> tuple[set[str], set[str]]:
    gold = q["gold"]
    assert isinstance(gold, list)
    return {str(g["law_id"]) for g in gold}, {f"{g['law_id']}#{g['section']}" for g in gold}


def score(
    acts: Acts, ways: dict[str, Matrix], heading_vectors: Matrix, vector: Matrix, q: dict[str, object],
    row: dict[str, int], evidence_acts: list[str] | None, chunk_similarity: tuple[Matrix, npt.NDArray[np.int64]] | None,
) -> dict[str, object]:  # fmt: skip
    """Count one question into ``row``; return its record (each way's gold Act place and best 5 Acts)."""
    gold_acts, gold_units = gold_of(q)
    wanted = {i for i, key in enumerate(acts.keys) if key in gold_acts}
    owner = np.asarray(acts.owner, dtype=np.int64)
    heading_similarity = heading_vectors @ vector
    scores = {way: matrix @ vector for way, matrix in ways.items()}
    scores["best_heading"] = best_mean(heading_similarity, owner, len(acts.keys), 1)
    scores["best3_headings"] = best_mean(heading_similarity, owner, len(acts.keys), 3)
    if chunk_similarity is not None:
        scores["best3_chunks"] = best_mean(chunk_similarity[0], chunk_similarity[1], len(acts.keys), 3)
    row["n"] += 1
    record: dict[str, object] = {"id": q["id"], "kind": q["kind"], "gold_acts": sorted(gold_acts)}
    in_evidence = evidence_acts is not None and bool(gold_acts & set(evidence_acts))
    if evidence_acts is not None:
        record["evidence_acts"] = evidence_acts
        row["ev first"] += bool(evidence_acts and evidence_acts[0] in gold_acts)
        row["ev 3"] += bool(gold_acts & set(evidence_acts[:3]))
        row["ev any"] += in_evidence
    for way, values in scores.items():
        order = sorted(range(len(acts.keys)), key=lambda i: (-float(values[i]), acts.keys[i]))
        at = place(order, wanted)
        record[way] = {"gold_rank": at, "top": [acts.keys[i] for i in order[:5]]}
        for top in TOPS:
            row[f"{way} {top}"] += at <= top
        if evidence_acts is not None:
            row[f"{way} adds 3"] += not in_evidence and at <= 3
            row[f"{way} adds 5"] += not in_evidence and at <= 5
            row[f"{way} loses 5"] += in_evidence and at > 5
    gold_headings = {i for i, units in enumerate(acts.provisions) if units & gold_units}
    every = np.argsort(-heading_similarity, kind="stable")
    at = place(list(every), gold_headings)
    best_acts = np.argsort(-scores["headings"], kind="stable")[:3]
    at_within = place([i for i in every if owner[i] in best_acts], gold_headings)
    record["gold_heading_rank"] = at
    for top in HEADING_TOPS:
        row[f"heading {top}"] += at <= top
        row[f"heading within 3 {top}"] += at_within <= top
    return record


def report(counts: dict[str, dict[str, int]], ways: Sequence[str], evidence: bool) -> None:
    for kind in sorted(counts):
        r = counts[kind]
        print(f"\n## {kind} (n {r['n']})")
        if evidence:
            print(f"evidence: first hit's Act {r['ev first']}, first 3 Acts {r['ev 3']}, any {r['ev any']}")
        extra = " | gold Act not in evidence: in best 3 / 5 | in evidence: not in best 5" if evidence else ""
        print(f"| way | first | best 3 | best 5 | best 10{extra} |")
        print("| --- | ---: | ---: | ---: | ---:" + (" | ---: | ---:" if evidence else "") + " |")
        for way in ways:
            cells = " | ".join(str(r[f"{way} {t}"]) for t in TOPS)
            if evidence:
                missing = r["n"] - r["ev any"]
                cells += f" | {r[f'{way} adds 3']} / {r[f'{way} adds 5']} of {missing}"
                cells += f" | {r[f'{way} loses 5']} of {r['ev any']}"
            print(f"| {way} | {cells} |")
        every = ", ".join(f"{r[f'heading {t}']}" for t in HEADING_TOPS)
        within = ", ".join(f"{r[f'heading within 3 {t}']}" for t in HEADING_TOPS)
        print(f"gold provision's heading among the closest {HEADING_TOPS} of all Acts: {every}; of the best 3 Acts by "
              f"headings: {within}")  # fmt: skip


async def from_source(args: argparse.Namespace) -> int:
    from ingestion.parsers import parse

    questions = load_questions(args.questions, args.kinds)
    acts = Acts()
    for doc in parse(args.source, args.source.read_bytes()):
        heads: dict[str, set[str]] = {}
        for s in doc.sections:
            if s.heading.strip():  # heading_text's form: the law's title and the provision's heading
                heads.setdefault(f"{doc.title} — {s.heading}", set()).add(section_unit(s.section_id))
        acts.add(doc.doc_key.split("@", 1)[0], doc.title, heads)
    with ThreadPoolExecutor(1) as pool:
        embedder = build_embedder(EmbeddingSettings(), pool)
        heading_vectors = unit_rows(await embedder.embed_documents(acts.headings))
        titles = unit_rows(await embedder.embed_documents(acts.titles))
        asked = unit_rows(await embedder.embed_documents([str(q["question"]) for q in questions]))
    owner = np.asarray(acts.owner, dtype=np.int64)
    ways = {"headings": centroids(owner, heading_vectors, len(acts.keys)), "title": titles}
    print(f"{len(acts.keys)} Acts, {len(acts.headings)} headings; {len(questions)} questions")
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    out = [
        score(acts, ways, heading_vectors, vector, q, counts[kind_of(q)], None, None)
        for q, vector in zip(questions, asked, strict=True)
    ]
    report(counts, [*ways, "best_heading", "best3_headings"], evidence=False)
    if args.out:
        args.out.write_text("".join(json.dumps(o) + "\n" for o in out))
    return 0


async def from_data_dir(args: argparse.Namespace) -> int:
    questions = load_questions(args.questions, args.kinds)
    settings = Settings(data_dir=args.data_dir)
    settings = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"cache_ttl_s": 0})})
    async with open_services(settings) as services:
        retriever = services.orchestrator.deps.retriever
        corpus = services.corpus
        filters = retriever.scoped_filters({}, "")
        stored = await retriever.vectors.vectors()  # type: ignore[attr-defined]
        ids = sorted(stored)
        per_act: dict[str, tuple[str, dict[str, set[str]]]] = {}
        for chunk in corpus.chunks.values():
            _, heads = per_act.setdefault(act_of(chunk.section_id), (chunk.title, {}))
            if text := heading_text(chunk):
                heads.setdefault(text, set()).add(section_unit(chunk.section_id))
        acts = Acts()
        for key in sorted(per_act):
            acts.add(key, *per_act[key])
        index = {key: i for i, key in enumerate(acts.keys)}
        chunk_owner = np.asarray([index[act_of(corpus.chunks[i].section_id)] for i in ids], dtype=np.int64)
        chunk_vectors = unit_rows(np.stack([stored[i] for i in ids]))
        heading_vectors = unit_rows(await retriever.embedder.embed_documents(acts.headings))
        owner = np.asarray(acts.owner, dtype=np.int64)
        ways = {
            "headings": centroids(owner, heading_vectors, len(acts.keys)),
            "title": unit_rows(await retriever.embedder.embed_documents(acts.titles)),
            "chunks": centroids(chunk_owner, chunk_vectors, len(acts.keys)),
        }
        print(f"{len(acts.keys)} Acts, {len(ids)} chunks, {len(acts.headings)} headings; {len(questions)} questions")
        # As the search does: a lay word the corpus uses in 1 chunk in 200 is not expanded.
        common = max(1, len(retriever.lexical) // 200)
        in_use = lambda word: retriever.lexical.document_frequency(word) >= common  # noqa: E731
        counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        out = []
        for q in questions:
            lay = retriever.thesaurus.expand(str(q["question"]), in_use) if retriever.thesaurus else None
            asked = await retriever.embedder.embed_query(lay.dense_query if lay else str(q["question"]))
            vector = unit_rows(np.asarray(asked, dtype=np.float32).reshape(1, -1)).reshape(-1)
            result = await retriever.retrieve(str(q["question"]), filters=filters)
            evidence = with_provisions(result.hits, settings.retrieval.top_k, settings.retrieval.section_chunks)
            evidence_acts = list(dict.fromkeys(act_of(h.chunk.section_id) for h in evidence))
            similarity = (chunk_vectors @ vector, chunk_owner)
            out.append(score(acts, ways, heading_vectors, vector, q, counts[kind_of(q)], evidence_acts, similarity))
    report(counts, [*ways, "best_heading", "best3_headings", "best3_chunks"], evidence=True)
    if args.out:
        args.out.write_text("".join(json.dumps(o) + "\n" for o in out))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", type=Path)
    where.add_argument("--source", type=Path, help="a legislation file to parse (no data dir, no evidence)")
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--kinds", default="lay_,direct,paraphrase,multi_hop")
    parser.add_argument("--out", type=Path, help="each question's gold Act rank and best Acts each way, as JSON lines")
    args = parser.parse_args()
    return asyncio.run(from_data_dir(args) if args.data_dir else from_source(args))


if __name__ == "__main__":
    sys.exit(main())
