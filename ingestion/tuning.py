"""Adapt retrieval to the ingested corpus with no labels: mine pairs from it, fine-tune the packaged MiniLM on them
(in-batch negatives plus BM25-mined hard negatives), fit BM25's k1/b and the fusion weights on held-out pairs, re-embed
into a new collection and switch to it; or go back to the packaged model.

Nothing here reads a question set: every query is made from the corpus's own text (a provision's title path and
heading, a defined term, one of its sentences, or, when a model is configured and ``--generate`` asks for it, the
questions it writes for a provision from that provision alone), and the BM25 and fusion choices are measured on pairs
held out from training (by provision), so the evaluation questions of ``benchmarks/`` stay unseen.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import re
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx
import numpy as np

from api.composer.skills import Skill, load_skills
from api.composer.structured import ask_json
from api.errors import NotReadyError
from api.schemas.documents import Chunk
from api.settings import BM25Settings, Settings
from api.tools.bm25 import Bm25sIndex, lexical_text, tokenize
from api.tools.corpus import MANIFEST_KEY, Corpus, Manifest
from api.tools.embeddings import SentenceTransformerEmbedder, Vectors, load_sentence_transformer
from api.tools.llm import build_llm
from api.tools.object_store import build_object_store, put_json
from api.tools.vector_store import MilvusVectorStore, collection_for
from api.tuning import PACKAGED_NAME, TuningState, load_state, save_state

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int | None], None]
PairKind = Literal["heading", "definition", "sentence", "generated"]
K1_GRID = (0.6, 0.9, 1.2, 1.5, 2.0)
B_GRID = (0.3, 0.5, 0.75, 0.9)
# Mined queries copy the corpus's words, so BM25 is nearly perfect on them and a free choice drops dense entirely,
# which lost recall on real questions (benchmarks/results/tune_retrieval.md): dense keeps at least half BM25's weight.
DENSE_WEIGHTS = (0.5, 1.0, 2.0)
FUSION_POOL = 30  # candidates each side contributes to fusion, as the retriever's default
_SENTENCE = re.compile(r"(?<=[.;:])\s+(?=[A-Z(])")
_DEFINITION = re.compile(r"[\"“']([^\"”']{3,60})[\"”']\s+(?:means|includes|has the meaning)\b")
_WORDS = re.compile(r"[A-Za-z]{3,}")
_TOKENS = re.compile(r"\w+")
COPY_RUN = 8  # a generated question repeating this many consecutive words of its provision teaches nothing BM25 lacks
GENERATE_STAGE = "generating questions"


def _no_progress(stage: str, advance: int, total: int | None) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Pair:
    """A query mined from the corpus, the chunk text it should find, and a BM25-mined text it should not."""

    query: str
    positive: str
    negative: str
    chunk_id: str
    section_id: str
    kind: PairKind


def _section_key(chunk: Chunk) -> str:
    return chunk.section_id or chunk.chunk_id


def _queries(chunk: Chunk, rng: random.Random) -> list[tuple[PairKind, str, str]]:
    """(kind, query, positive) candidates for one chunk; the positive drops what the query copied from it."""
    found: list[tuple[PairKind, str, str]] = []
    heading = chunk.section_heading.strip()
    if len(_WORDS.findall(heading)) >= 2:  # a real heading, not a bare reference such as "AML 1.1.1.(1)"
        found.append(("heading", f"{chunk.title}: {heading}", chunk.text))
    for term in _DEFINITION.findall(chunk.text)[:1]:
        found.append(("definition", f"What does {term} mean in the {chunk.title}?", chunk.text))
    sentences = [s for s in _SENTENCE.split(chunk.text) if len(_WORDS.findall(s)) >= 6]
    if len(sentences) >= 2:  # inverse cloze: one sentence asks for the rest of its provision
        picked = rng.choice(sentences)
        rest = chunk.text.replace(picked, " ").strip()
        found.append(("sentence", picked, f"{chunk.title} {heading}\n{rest}"))
    elif len(_WORDS.findall(chunk.text)) >= 12 and not found:
        words = chunk.text.split()
        cut = max(6, len(words) // 3)
        found.append(("sentence", " ".join(words[:cut]), f"{chunk.title} {heading}\n{' '.join(words[cut:])}"))
    return found


def mine_pairs(chunks: Sequence[Chunk], max_pairs: int, seed: int = 0) -> list[Pair]:
    """Queries with their positive and a hard negative: the best BM25 hit from another provision (a neighbour in
    the same Act or a provision of another Act that shares the words), so the model learns what BM25 confuses."""
    rng = random.Random(seed)
    order = list(chunks)
    rng.shuffle(order)
    candidates: list[tuple[Chunk, PairKind, str, str]] = []
    for chunk in order:
        candidates += [(chunk, kind, q, pos) for kind, q, pos in _queries(chunk, rng)]
        if len(candidates) >= max_pairs:
            break
    candidates = candidates[:max_pairs]
    if not candidates:
        return []
    index = Bm25sIndex([c.chunk_id for c in chunks], [tokenize(lexical_text(c)) for c in chunks], BM25Settings())
    by_id = {c.chunk_id: c for c in chunks}
    pairs = []
    for chunk, kind, query, positive in candidates:
        negative = ""
        for hit in index._search(query, 10):
            other = by_id[hit.chunk_id]
            if _section_key(other) != _section_key(chunk):
                negative = other.embed_text
                break
        if not negative:  # nothing lexically close: any other provision still teaches the contrast
            other = rng.choice(order)
            negative = other.embed_text if _section_key(other) != _section_key(chunk) else ""
        if negative:
            pairs.append(Pair(query, positive, negative, chunk.chunk_id, _section_key(chunk), kind))
    return pairs


def split_pairs(pairs: Sequence[Pair], held_out: float = 0.2) -> tuple[list[Pair], list[Pair]]:
    """Train and held-out pairs, split by provision (a hash of its id), so no held-out provision is trained on."""
    train: list[Pair] = []
    held: list[Pair] = []
    for pair in pairs:
        bucket = int(hashlib.sha256(pair.section_id.encode()).hexdigest()[:8], 16) % 1000
        (held if bucket < held_out * 1000 else train).append(pair)
    return train, held


def attach_negatives(
    chunks: Sequence[Chunk], candidates: Sequence[tuple[Chunk, PairKind, str, str]], seed: int = 0
) -> list[Pair]:
    """Pairs for (chunk, kind, query, positive) candidates, each with the hard negative ``mine_pairs`` gives its own
    queries: the best BM25 hit from another provision, else any other provision; a candidate with neither is dropped."""
    if not candidates:
        return []
    rng = random.Random(seed)
    index = Bm25sIndex([c.chunk_id for c in chunks], [tokenize(lexical_text(c)) for c in chunks], BM25Settings())
    by_id = {c.chunk_id: c for c in chunks}
    pairs = []
    for chunk, kind, query, positive in candidates:
        negative = ""
        for hit in index._search(query, 10):
            other = by_id[hit.chunk_id]
            if _section_key(other) != _section_key(chunk):
                negative = other.embed_text
                break
        if not negative:
            other = rng.choice(chunks)
            negative = other.embed_text if _section_key(other) != _section_key(chunk) else ""
        if negative:
            pairs.append(Pair(query, positive, negative, chunk.chunk_id, _section_key(chunk), kind))
    return pairs


def copies_provision(question: str, text: str, run: int = COPY_RUN) -> bool:
    """Whether ``question`` repeats ``run`` or more consecutive words of ``text`` (case and punctuation aside)."""
    words = _TOKENS.findall(text.lower())
    seen = {tuple(words[at : at + run]) for at in range(len(words) - run + 1)}
    asked = _TOKENS.findall(question.lower())
    return any(tuple(asked[at : at + run]) in seen for at in range(len(asked) - run + 1))


def _usable_questions(reply: dict[str, Any]) -> list[str] | None:
    """The distinct questions (3 to 60 words, at most 3) in a reply; None when it lacks a ``questions`` list."""
    value = reply.get("questions")
    if not isinstance(value, list):
        return None
    found: list[str] = []
    for item in value:
        question = " ".join(item.split()) if isinstance(item, str) else ""
        if 3 <= len(_TOKENS.findall(question)) <= 60 and question not in found:
            found.append(question)
    return found[:3]


def _provisions_to_ask(chunks: Sequence[Chunk], limit: int, seed: int) -> list[Chunk]:
    """One chunk from each of up to ``limit`` provisions (seeded choice), each with enough text to ask about."""
    rng = random.Random(seed)
    by_section: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        if len(_WORDS.findall(chunk.text)) >= 12:
            by_section.setdefault(_section_key(chunk), []).append(chunk)
    keys = sorted(by_section)
    rng.shuffle(keys)
    return [rng.choice(by_section[key]) for key in keys[:limit]]


@dataclass(slots=True)
class GenerateStats:
    """What asking the model for questions gave; ``note`` says why nothing was asked, when nothing was."""

    requested: int = 0  # provisions asked for (--generate)
    asked: int = 0  # provisions whose call was made
    answered: int = 0  # provisions with at least one question kept
    questions: int = 0  # questions kept
    invalid: int = 0  # replies that were not a JSON object with a "questions" list
    empty: int = 0  # replies with no usable question in their list
    failed: int = 0  # calls that failed or timed out
    copied: int = 0  # questions dropped for repeating COPY_RUN consecutive words of their provision
    shared: int = 0  # questions written for two or more provisions, dropped from each: they point to none of them
    unasked: int = 0  # provisions never asked because the time budget ran out
    stopped_by: str = "done"
    seconds: float = 0.0
    note: str = ""


async def ask_questions(
    llm: BaseChatModel | None, skill: Skill, chunks: Sequence[Chunk], limit: int, *, max_seconds: float,
    call_timeout_s: float, attempts: int = 1, concurrency: int = 3, seed: int = 0, progress: Progress = _no_progress,
) -> tuple[list[tuple[Chunk, str]], GenerateStats]:  # fmt: skip
    """Ask ``llm`` for questions about up to ``limit`` provisions, ``concurrency`` at a time, within ``max_seconds``
    (a call in flight is cut at the deadline). A bad reply or a failed call skips its provision and is counted;
    it never ends the run. Returns (chunk, question) in the provisions' chosen order, so a seed repeats a run."""
    stats = GenerateStats(requested=max(0, limit))
    if limit <= 0:
        stats.note = "off"
        return [], stats
    if llm is None:
        stats.note = "no model configured"
        return [], stats
    todo = _provisions_to_ask(chunks, limit, seed)
    found: dict[int, list[str]] = {}
    start = time.perf_counter()
    deadline = start + max_seconds
    queue = iter(enumerate(todo))  # shared by the workers; the event loop hands out one item at a time
    progress(GENERATE_STAGE, 0, len(todo))

    async def ask(at: int, chunk: Chunk, remaining: float) -> None:
        values = {"title": chunk.title, "heading": chunk.section_heading or chunk.section_number, "text": chunk.text}
        reply, call = await ask_json(llm, skill, min(call_timeout_s, remaining), attempts, values)
        if reply is None:
            if call["outcome"] == "unparsable":
                stats.invalid += 1
            else:
                stats.failed += 1
                if call["outcome"] == "timeout" and time.perf_counter() >= deadline - 0.05:
                    stats.stopped_by = "time"  # cut at the deadline, not slow on its own
            return
        questions = _usable_questions(reply)
        if questions is None:
            stats.invalid += 1
            return
        if not questions:
            stats.empty += 1
            return
        kept = [q for q in questions if not copies_provision(q, chunk.embed_text)]
        stats.copied += len(questions) - len(kept)
        if kept:
            found[at] = kept

    async def worker() -> None:
        for at, chunk in queue:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                stats.unasked += 1
                stats.stopped_by = "time"
                continue
            stats.asked += 1
            await ask(at, chunk, remaining)
            progress(GENERATE_STAGE, 1, None)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(concurrency, len(todo)))):
            group.create_task(worker())
    # The local model asked "What is the purpose of the … Act?" of 4 provisions of one Act: as a training query it
    # would pull each of them towards the others.
    written_for: dict[tuple[str, ...], int] = {}
    for questions in found.values():
        for question in questions:
            key = tuple(_TOKENS.findall(question.lower()))
            written_for[key] = written_for.get(key, 0) + 1
    for at in list(found):
        kept = [q for q in found[at] if written_for[tuple(_TOKENS.findall(q.lower()))] == 1]
        stats.shared += len(found[at]) - len(kept)
        if kept:
            found[at] = kept
        else:
            del found[at]
    pairs = [(todo[at], q) for at in sorted(found) for q in found[at]]
    stats.answered, stats.questions = len(found), len(pairs)
    stats.seconds = round(time.perf_counter() - start, 1)
    return pairs, stats


async def generate_pairs(
    settings: Settings, chunks: Sequence[Chunk], limit: int, max_seconds: float, concurrency: int = 3, seed: int = 0,
    progress: Progress = _no_progress,
) -> tuple[list[Pair], GenerateStats]:  # fmt: skip
    """Pairs of kind "generated": the settings' model's questions for up to ``limit`` provisions, each with its
    chunk (as embedded) as the positive and a BM25-mined hard negative. No model configured: nothing, and said so."""
    # A server that answers one request at a time (llama.cpp) keeps a call waiting behind the others in flight, so a
    # call's limit is the configured one per call in flight: with 30 s each, 3 at a time to the local model timed out
    # 5 calls of 6 (it answers one provision in ~20 s on 2 busy cores), and a call given up on still holds the server.
    llm_cfg = settings.llm.model_copy(update={"timeout_s": settings.llm.timeout_s * max(1, concurrency)})
    skill = load_skills()["generate_questions"]
    async with httpx.AsyncClient(timeout=httpx.Timeout(llm_cfg.timeout_s, connect=5.0)) as http:
        found, stats = await ask_questions(
            build_llm(llm_cfg, http) if limit > 0 else None, skill, chunks, limit, max_seconds=max_seconds,
            call_timeout_s=llm_cfg.timeout_s, attempts=llm_cfg.call_attempts, concurrency=concurrency, seed=seed,
            progress=progress,
        )  # fmt: skip
    candidates: list[tuple[Chunk, PairKind, str, str]] = [(c, "generated", q, c.embed_text) for c, q in found]
    pairs = await asyncio.to_thread(attach_negatives, chunks, candidates, seed)
    return pairs, stats


def _mrr(rankings: Sequence[Sequence[str]], gold: Sequence[str], k: int = 10) -> float:
    total = 0.0
    for ranked, want in zip(rankings, gold, strict=True):
        for rank, section in enumerate(ranked[:k], 1):
            if section == want:
                total += 1 / rank
                break
    return total / max(1, len(gold))


def _sections(chunks: Sequence[Chunk], ids: Sequence[str]) -> list[str]:
    """Chunk ids in rank order as section keys, first occurrence kept (several chunks of one provision count once)."""
    by_id = {c.chunk_id: c for c in chunks}
    seen: dict[str, None] = {}
    for cid in ids:
        seen.setdefault(_section_key(by_id[cid]), None)
    return list(seen)


@dataclass(slots=True)
class Bm25Fit:
    k1: float
    b: float
    mrr_default: float
    mrr_tuned: float


def fit_bm25(chunks: Sequence[Chunk], fit_on: Sequence[Pair], report_on: Sequence[Pair]) -> Bm25Fit:
    """Grid k1 x b by MRR@10 of the pair's provision on ``fit_on``; report default and chosen on ``report_on``."""
    ids = [c.chunk_id for c in chunks]
    tokens = [tokenize(lexical_text(c)) for c in chunks]

    def mrr(k1: float, b: float, pairs: Sequence[Pair]) -> float:
        index = Bm25sIndex(ids, tokens, BM25Settings(k1=k1, b=b))
        ranked = [_sections(chunks, [h.chunk_id for h in index._search(p.query, FUSION_POOL)]) for p in pairs]
        return _mrr(ranked, [p.section_id for p in pairs])

    default = BM25Settings()
    scores = {(k1, b): mrr(k1, b, fit_on) for k1 in K1_GRID for b in B_GRID}
    best = max(scores, key=lambda kb: (scores[kb], kb == (default.k1, default.b)))
    return Bm25Fit(best[0], best[1], mrr(default.k1, default.b, report_on), mrr(*best, report_on))


def fuse(dense: Sequence[str], lexical: Sequence[str], dense_weight: float, rrf_k: int = 60) -> list[str]:
    """Weighted reciprocal rank fusion of two section rankings (BM25's weight is 1)."""
    scores: dict[str, float] = {}
    for weight, ranking in ((dense_weight, dense), (1.0, lexical)):
        for rank, key in enumerate(ranking, 1):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
    return sorted(scores, key=lambda key: -scores[key])


def choose_fusion(dense: Sequence[Sequence[str]], lexical: Sequence[Sequence[str]], gold: Sequence[str]) -> float:
    """The dense weight (BM25's is 1, dense's within ``DENSE_WEIGHTS``) whose fused ranking has the best MRR@10 on
    the held-out mined pairs; ties go to equal weights."""
    scores = {w: _mrr([fuse(d, s, w) for d, s in zip(dense, lexical, strict=True)], gold) for w in DENSE_WEIGHTS}
    return max(scores, key=lambda w: (scores[w], w == 1.0))


@dataclass(slots=True)
class TrainStats:
    pairs: int
    steps: int
    seconds: float
    stopped_by: str
    losses: list[float] = field(default_factory=list)


def train(
    model: SentenceTransformer,
    pairs: Sequence[Pair],
    epochs: int = 1,
    batch_size: int = 16,
    max_seconds: float = 600.0,
    learning_rate: float = 2e-5,
    seed: int = 0,
    progress: Progress = _no_progress,
) -> TrainStats:
    """Fine-tune with MultipleNegativesRankingLoss (in-batch negatives plus each pair's hard negative), on CPU,
    stopping at ``max_seconds`` after the step that crosses it."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(seed)
    loss_fn = MultipleNegativesRankingLoss(model)
    encode = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 6 renamed it
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    rng = random.Random(seed)
    batches_per_epoch = max(1, (len(pairs) + batch_size - 1) // batch_size)
    total = batches_per_epoch * epochs
    progress("training steps", 0, total)
    start, steps, losses, stopped_by = time.perf_counter(), 0, [], "epochs"
    model.train()
    for _ in range(epochs):
        order = list(pairs)
        rng.shuffle(order)
        for at in range(0, len(order), batch_size):
            batch = order[at : at + batch_size]
            if len(batch) < 2:  # one pair has no in-batch negatives to learn from
                continue
            features = [encode([getattr(p, part) for p in batch]) for part in ("query", "positive", "negative")]
            loss = loss_fn(features, torch.empty(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            losses.append(round(float(loss.item()), 4))
            progress("training steps", 1, None)
            if time.perf_counter() - start >= max_seconds:
                stopped_by = "time"
                break
        if stopped_by == "time":
            break
    model.eval()
    return TrainStats(len(pairs), steps, round(time.perf_counter() - start, 1), stopped_by, losses)


@dataclass(slots=True)
class TuneReport:
    action: Literal["tuned", "reverted"]
    version: int
    corpus_version_before: str
    corpus_version_after: str
    collection: str
    model_dir: str = ""
    pairs: dict[str, int] = field(default_factory=dict)
    train: TrainStats | None = None
    bm25: Bm25Fit | None = None
    dense_weight: float = 1.0
    held_out_mrr: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    generated: GenerateStats | None = None


@dataclass(slots=True)
class TuneOptions:
    max_pairs: int = 2000
    max_minutes: float = 10.0
    epochs: int = 1
    batch_size: int = 16
    seed: int = 0
    # Off unless asked for: each provision is one model call (billed on a hosted API, ~tens of seconds on a local
    # CPU model), and `gweta tune` otherwise runs offline. With no model configured it is a no-op, said in the report.
    generate: int = 0
    generate_minutes: float = 10.0
    generate_concurrency: int = 3


async def _embed_into(
    settings: Settings, collection: str, embedder: SentenceTransformerEmbedder, chunks: Sequence[Chunk],
    progress: Progress, batch: int = 256,
) -> Vectors:  # fmt: skip
    """Embed every chunk with ``embedder`` into a fresh ``collection``; returns the vectors (chunk order)."""
    cfg = settings.vector_store
    store = MilvusVectorStore(
        settings.milvus_uri, collection, embedder.dimensions, cfg.token.get_secret_value(), cfg.index_type,
        cfg.index_params, cfg.search_params, f"{embedder.name}:{embedder.dimensions}",
    )  # fmt: skip
    try:
        await asyncio.to_thread(store.client.drop_collection, collection)  # leftovers of a killed run
        store._ensure_collection()
        progress("re-embedding chunks", 0, len(chunks))
        parts = []
        for at in range(0, len(chunks), batch):
            part = list(chunks[at : at + batch])
            vectors = await embedder.embed_documents([c.embed_text for c in part])
            await store.upsert(part, vectors)
            parts.append(vectors)
            progress("re-embedding chunks", len(part), None)
        await store.flush()
        found = await store.count()
        if found != len(chunks):
            raise NotReadyError(f"collection {collection} holds {found} vectors, expected {len(chunks)}")
    finally:
        await store.close()
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dimensions), dtype=np.float32)


def _drop_collection(settings: Settings, collection: str) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(settings.milvus_uri)
    try:
        if client.has_collection(collection):
            client.drop_collection(collection)
    finally:
        client.close()


async def _write_manifest(settings: Settings, manifest: Manifest, name: str, dimensions: int) -> str:
    manifest.embedder, manifest.dimensions = f"{name}:{dimensions}", dimensions
    await put_json(build_object_store(settings.object_store, settings.data_dir), MANIFEST_KEY, manifest.model_dump())
    return manifest.version


def _check_packaged(settings: Settings) -> None:
    if settings.embeddings.backend != "minilm" or settings.embeddings.model:
        raise NotReadyError("gweta tune adapts the packaged MiniLM; this deploy names its own embedder")


async def tune(settings: Settings, options: TuneOptions, progress: Progress = _no_progress) -> TuneReport:
    """Mine, fit BM25, fine-tune, re-embed into a new collection, choose fusion weights, then switch (the manifest
    with the new embedder name, so the corpus version and every cache keyed on it change, then the state file)."""
    _check_packaged(settings)
    clock: dict[str, float] = {}
    state = load_state(settings.data_dir)
    store = build_object_store(settings.object_store, settings.data_dir)
    corpus = await Corpus.load(store)
    chunks = sorted(corpus.chunks.values(), key=lambda c: c.chunk_id)
    if not chunks:
        raise NotReadyError("no documents are ingested in this data dir: run 'gweta ingest' first")
    before = corpus.version

    start = time.perf_counter()
    pairs = await asyncio.to_thread(mine_pairs, chunks, options.max_pairs, options.seed)
    clock["mine"] = time.perf_counter() - start
    start = time.perf_counter()
    generated, generate_stats = await generate_pairs(
        settings, chunks, options.generate, options.generate_minutes * 60, options.generate_concurrency, options.seed,
        progress,
    )  # fmt: skip
    if options.generate:
        clock["generate"] = time.perf_counter() - start
    pairs += generated  # split with the mined ones by provision: a held-out provision is unseen in either kind
    train_pairs, held = split_pairs(pairs)
    if len(train_pairs) < 2:
        raise NotReadyError(f"the corpus gave {len(pairs)} training pairs; at least 2 are needed")
    held = held or train_pairs[: max(1, len(train_pairs) // 5)]
    kinds = {kind: sum(p.kind == kind for p in pairs) for kind in ("heading", "definition", "sentence", "generated")}

    start = time.perf_counter()
    bm25 = await asyncio.to_thread(fit_bm25, chunks, train_pairs[:500], held)
    clock["bm25_fit"] = time.perf_counter() - start

    start = time.perf_counter()
    model = await asyncio.to_thread(load_sentence_transformer)
    stats = await asyncio.to_thread(
        train, model, train_pairs, options.epochs, options.batch_size, options.max_minutes * 60, 2e-5,
        options.seed, progress,
    )  # fmt: skip
    version = state.last_version + 1
    model_dir = f"models/tuned-v{version}"
    target = settings.data_dir / model_dir
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    await asyncio.to_thread(model.save, str(tmp))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    clock["train"] = time.perf_counter() - start

    start = time.perf_counter()
    name = TuningState(version=version).embedder_name
    with ThreadPoolExecutor(settings.model_threads, thread_name_prefix="model") as pool:
        tuned_model = await asyncio.to_thread(load_sentence_transformer, str(target))  # as serving will, offline
        embedder = SentenceTransformerEmbedder(tuned_model, pool, settings.embeddings.batch_size, name)
        collection = collection_for(settings.vector_store.collection, f"{name}:{embedder.dimensions}")
        vectors = await _embed_into(settings, collection, embedder, chunks, progress)
        clock["re_embed"] = time.perf_counter() - start
        queries = await embedder.embed_documents([p.query for p in held])
    dense = [_sections(chunks, [chunks[i].chunk_id for i in np.argsort(-(vectors @ q))[:FUSION_POOL]]) for q in queries]
    index = Bm25sIndex([c.chunk_id for c in chunks], [tokenize(lexical_text(c)) for c in chunks],
                       BM25Settings(k1=bm25.k1, b=bm25.b))  # fmt: skip
    lexical = [_sections(chunks, [h.chunk_id for h in index._search(p.query, FUSION_POOL)]) for p in held]
    gold = [p.section_id for p in held]
    dense_weight = choose_fusion(dense, lexical, gold)
    held_out = {
        "dense (tuned)": _mrr(dense, gold), "bm25 (default)": bm25.mrr_default, "bm25 (tuned)": bm25.mrr_tuned,
        "fused": _mrr([fuse(d, s, dense_weight) for d, s in zip(dense, lexical, strict=True)], gold),
    }  # fmt: skip

    new_state = TuningState(
        version=version, last_version=version, model_dir=model_dir, collection=collection,
        base_collection=settings.vector_store.collection,
        base_version=state.base_version or before, k1=bm25.k1, b=bm25.b, dense_weight=dense_weight, bm25_weight=1.0,
    )  # fmt: skip
    after = await _write_manifest(settings, corpus.manifest, name, embedder.dimensions)
    save_state(settings.data_dir, new_state)  # the switch
    if state.version and state.collection != collection:  # the previous tuned collection is no longer read
        await asyncio.to_thread(_drop_collection, settings, state.collection)
    return TuneReport(
        "tuned", version, before, after, collection, model_dir, {"train": len(train_pairs), "held_out": len(held),
        **kinds}, stats, bm25, dense_weight, held_out, {k: round(v, 1) for k, v in clock.items()}, generate_stats,
    )  # fmt: skip


async def revert(settings: Settings, progress: Progress = _no_progress) -> TuneReport:
    """Back to the packaged model, BM25 defaults and equal fusion weights. The base collection is reused when the
    corpus has not changed since tuning; otherwise every chunk is embedded again with the packaged model."""
    _check_packaged(settings)
    state = load_state(settings.data_dir)
    store = build_object_store(settings.object_store, settings.data_dir)
    corpus = await Corpus.load(store)
    before = corpus.version
    base = settings.vector_store.collection  # the packaged model's vectors live in the configured collection
    manifest = corpus.manifest
    packaged_version = Manifest(embedder=f"{PACKAGED_NAME}:{manifest.dimensions or 384}",
                                documents=manifest.documents).version  # fmt: skip
    start = time.perf_counter()
    dims = manifest.dimensions or 384
    if state.version and packaged_version != state.base_version:
        chunks = sorted(corpus.chunks.values(), key=lambda c: c.chunk_id)
        with ThreadPoolExecutor(settings.model_threads, thread_name_prefix="model") as pool:
            model = await asyncio.to_thread(load_sentence_transformer)
            embedder = SentenceTransformerEmbedder(model, pool, settings.embeddings.batch_size)
            dims = embedder.dimensions
            await _embed_into(settings, base, embedder, chunks, progress)
    after = await _write_manifest(settings, manifest, PACKAGED_NAME, dims)
    save_state(settings.data_dir, TuningState(last_version=state.last_version))
    if state.version:
        await asyncio.to_thread(_drop_collection, settings, state.collection)
    return TuneReport("reverted", 0, before, after, base, seconds={"re_embed": round(time.perf_counter() - start, 1)})
