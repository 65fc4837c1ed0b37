"""Do a model's query expansions find what the question alone misses? R@10 on labelled questions, the served search
of the question alone against the same search with the model's alternative phrasings and hypothetical passages
fused in by RRF, the question's own list counting double (as ``HybridRetriever.retrieve_many`` fuses them for the
research node, here 60 hits deep for every list rather than the answer's 6), on the same questions.

Two phases, so the slow one can stop and resume: the ``expand`` skill is asked about each question (in a seeded
order, until ``--minutes`` run out; replies kept in ``--cache``, a failed call asked again next time), then every
question with a reply is searched three ways over the data dir as it serves (its tuned model, BM25 and learned
fusion, if any): alone, with the phrasings only, with phrasings and passages. The questions must be ones the data
dir was not tuned on (for ObliQA, the fifth ``gweta tune --questions`` holds out). Prints Markdown.

    nohup .venv-llm/bin/python scripts/local_llm.py serve &
    python -m benchmarks.model_expansions --data-dir D --questions HELD --minutes 60 --cache /tmp/expansions.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from api.composer.skills import load_skills
from api.composer.structured import ask_json
from api.evaluation import Question, load_questions, unit_of
from api.orchestrators.query.nodes.research import expansions_of
from api.services import open_services
from api.settings import LLMSettings, Settings
from api.tools.llm import build_llm
from api.tools.retrieval import HybridRetriever, RetrievalResult, fuse_searches

WAYS = ("question alone", "with phrasings", "with phrasings and passages")
DEPTH = 60


async def expand(questions: Sequence[Question], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The model's expansions of each question, asked in a seeded order until the time runs out."""
    cached: dict[str, dict[str, Any]] = {}
    if args.cache.exists():
        cached = {row["id"]: row for row in map(json.loads, args.cache.read_text().splitlines())}
    order = list(questions)
    random.Random(args.seed).shuffle(order)
    cfg = LLMSettings(
        backend="openai", base_url=args.base_url, model=args.model, max_tokens=450, timeout_s=args.timeout
    )
    deadline = time.monotonic() + args.minutes * 60
    async with httpx.AsyncClient(timeout=args.timeout) as http:
        llm = build_llm(cfg, http)
        assert llm is not None
        skill = load_skills()["expand"]
        with args.cache.open("a") as cache:
            for q in order:
                if q.qid in cached:
                    continue
                if time.monotonic() > deadline:
                    break
                reply, call = await ask_json(llm, skill, args.timeout, 1, {"query": q.text})
                print(f"{q.qid} {call['outcome']} {call['ms'] / 1000:.1f}s", file=sys.stderr, flush=True)
                if call["outcome"] == "ok":
                    row = {"id": q.qid, "expanded": reply, "ms": call["ms"], "out_tokens": call["output_tokens"]}
                    cache.write(json.dumps(row) + "\n")
                    cache.flush()
                    cached[q.qid] = row
    return cached


def ranked(hits: Sequence[str], retriever: HybridRetriever, by_source_id: bool) -> list[str]:
    return list(dict.fromkeys(unit_of(retriever.corpus.chunks[cid], by_source_id) for cid in hits))


async def searched(retriever: HybridRetriever, q: Question, reply: dict[str, Any]) -> dict[str, float]:
    """R@10 of the three ways of searching ``q``, its expansions read as the research node reads them."""
    expansions = expansions_of(reply, retriever.embedder.count_tokens)
    own = await retriever.retrieve(q.text, top_k=DEPTH)
    phrased = [await retriever.retrieve(text, top_k=DEPTH) for text in expansions.queries]
    imagined = [await retriever.retrieve(text, top_k=DEPTH, mode="dense") for text in expansions.passages]

    def fused(results: Sequence[RetrievalResult]) -> list[str]:
        return [cid for cid, _, _ in fuse_searches(results, retriever.cfg.rrf_k)]

    orders = [[h.chunk.chunk_id for h in own.hits], fused([own, *phrased]), fused([own, *phrased, *imagined])]
    return {
        way: len(q.gold & set(ranked(order, retriever, q.by_source_id)[:10])) / len(q.gold)
        for way, order in zip(WAYS, orders, strict=True)
    }


async def main(args: argparse.Namespace) -> None:
    questions, _ = load_questions(args.questions)
    replies = await expand(questions, args)
    asked = [q for q in questions if q.qid in replies and replies[q.qid]["expanded"]]
    rows: list[dict[str, float]] = []
    async with open_services(Settings(data_dir=args.data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        for q in asked:
            rows.append(await searched(retriever, q, replies[q.qid]["expanded"]))
    seconds = [replies[q.qid]["ms"] / 1000 for q in asked]
    print(f"Model `{args.model}`; {len(asked)} of {len(questions)} questions expanded "
          f"(P50 {statistics.median(seconds):.1f} s a call); data dir `{args.data_dir}`.\n")  # fmt: skip
    print("| search | R@10 | better than alone | worse than alone |\n| --- | ---: | ---: | ---: |")
    for way in WAYS:
        mean = sum(r[way] for r in rows) / len(rows)
        better = sum(r[way] > r[WAYS[0]] for r in rows)
        worse = sum(r[way] < r[WAYS[0]] for r in rows)
        print(f"| {way} | {mean:.3f} | {better} | {worse} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True, help="labelled questions the data dir never saw")
    parser.add_argument("--base-url", default="http://127.0.0.1:8090/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--minutes", type=float, default=60.0, help="stop asking the model after this long")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gweta-expansions.jsonl"))
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--seed", type=int, default=26)
    asyncio.run(main(parser.parse_args()))
