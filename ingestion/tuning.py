"""Adapt retrieval to the ingested corpus with no labels: mine pairs from it, fine-tune the packaged MiniLM on them
(in-batch negatives plus BM25-mined hard negatives), fit BM25's k1/b and the fusion weights on held-out pairs, re-embed
into a new collection and switch to it; or go back to the packaged model.

With no labels, every query is made from the corpus's own text (a provision's title path and heading, a defined term,
one of its sentences, or, when a model is configured and ``--generate`` asks for it, the questions it writes for a
provision from that provision alone), and the BM25 and fusion choices are measured on pairs held out from training
(by provision). With ``--questions`` (questions the user labelled with their gold provisions), the model trains on a
pair per question and gold instead of the mined pairs (which taught it a task that does not carry over to questions:
benchmarks/results/tune_retrieval.md), BM25's analyzer, field weights, k1 and b are chosen on those training
questions, and the fusion weight and the report on the fifth held out by question, which nothing is trained on.
"""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from api.errors import BadRequestError, NotReadyError
from api.evaluation.core import load_questions, unit_of
from api.schemas.documents import Chunk
from api.settings import BM25Settings, RetrievalSettings, Settings
from api.tools.bm25 import Bm25sIndex, lexical_tokens
from api.tools.corpus import MANIFEST_KEY, Corpus, Manifest
from api.tools.embeddings import SentenceTransformerEmbedder, Vectors, load_sentence_transformer, model_label
from api.tools.fusion import Candidates, lexical_depth
from api.tools.object_store import build_object_store, put_json
from api.tools.onnx_embedder import export_folder, for_sentences, forget_export
from api.tools.sentence_vectors import artifact_key, rebuild_sentence_vectors
from api.tools.token_arrays import TokenArrays
from api.tools.vector_store import Hit, MilvusVectorStore, build_vector_store, collection_for
from api.tuning import PACKAGED_NAME, TuningState, load_state, save_state, write_atomically
from ingestion.indexes import write_lexical_index
from ingestion.learned_fusion import Asked, FusionChoice, choose
from ingestion.pairs import (
    GenerateStats,
    Pair,
    Progress,
    generate_pairs,
    held_out,
    labelled_pairs,
    mine_pairs,
    no_progress,
    section_key,
    split_pairs,
)  # fmt: skip

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

K1_GRID = (0.6, 0.9, 1.2, 1.5, 2.0)
B_GRID = (0.3, 0.5, 0.75, 0.9)
# Mined queries copy the corpus's words, so BM25 is nearly perfect on them and the pairs always favour it: a free
# choice dropped dense entirely, and a floor of half BM25's weight, chosen on both development corpora, cut the
# Zimbabwe lay questions' R@10 from 0.92 to 0.52 (benchmarks/results/tune_retrieval.md). The pairs may raise dense's
# weight, never lower it.
DENSE_WEIGHTS = (1.0, 2.0)
LABELLED_DENSE_WEIGHTS = (0.5, 1.0, 2.0)  # real questions are not biased to either side: any weight may win
# (stem, bigrams). Chosen only on labelled questions: mined queries copy whole phrases of their provision, so on them
# adjacent-word pairs always win on them whatever real questions say, and on lay questions they do not help
# (benchmarks/results/bm25_analyzers.md).
ANALYZERS = ((False, False), (True, False), (False, True), (True, True))
# (title, heading) weights against the text's 1. Chosen only on labelled questions too: a heading query is its
# provision's own heading, so on mined pairs the heading's weight would always win.
FIELD_WEIGHTS = tuple((title, heading) for title in (0, 1, 2) for heading in (0, 1, 2))
FUSION_POOL = 30  # candidates each side contributes to fusion, as the retriever's default


def _mrr(rankings: Sequence[Sequence[str]], gold: Sequence[str], k: int = 10) -> float:
    total = 0.0
    for ranked, want in zip(rankings, gold, strict=True):
        for rank, section in enumerate(ranked[:k], 1):
            if section == want:
                total += 1 / rank
                break
    return total / max(1, len(gold))


Unit = Callable[[Chunk], str]


def unit_map(chunks: Sequence[Chunk], unit: Unit = section_key) -> dict[str, str]:
    """Each chunk id's unit (its section key unless told), built once for every ranking ``_sections`` collapses."""
    return {c.chunk_id: unit(c) for c in chunks}


def _sections(units: Mapping[str, str], ids: Sequence[str]) -> list[str]:
    """Chunk ids in rank order as their units, first occurrence kept (several chunks of one provision count once)."""
    return list(dict.fromkeys(units[cid] for cid in ids))


@dataclass(slots=True)
class Bm25Fit:
    k1: float
    b: float
    mrr_default: float
    mrr_tuned: float
    stem: bool = False
    bigrams: bool = False
    title_weight: int = 1
    heading_weight: int = 1

    @property
    def settings(self) -> BM25Settings:
        return BM25Settings(k1=self.k1, b=self.b, stem=self.stem, bigrams=self.bigrams,
                            title_weight=self.title_weight, heading_weight=self.heading_weight)  # fmt: skip


def fit_bm25(
    chunks: Sequence[Chunk], fit_on: Sequence[Pair], report_on: Sequence[Pair], unit: Unit = section_key,
    analyzers: Sequence[tuple[bool, bool]] = ANALYZERS[:1], field_weights: Sequence[tuple[int, int]] = ((1, 1),),
) -> Bm25Fit:  # fmt: skip
    """The analyzer (stem, bigrams), then the field weights (title, heading), by MRR@10 of the pair's unit on
    ``fit_on`` at default k1 and b, then k1 x b with them; report default and chosen on ``report_on``. Ties go to
    the defaults."""
    ids = [c.chunk_id for c in chunks]
    tokens = TokenArrays.of_lists(*lexical_tokens(chunks))  # once: every fit below indexes the same tokens
    units = unit_map(chunks, unit)

    def mrr(fit: Bm25Fit, pairs: Sequence[Pair]) -> float:
        index = Bm25sIndex(ids, tokens, fit.settings)
        ranked = [_sections(units, [h.chunk_id for h in index._search(p.query, FUSION_POOL)]) for p in pairs]
        return _mrr(ranked, [p.section_id for p in pairs])

    default = BM25Settings()
    fit = Bm25Fit(default.k1, default.b, 0.0, 0.0)
    by_analyzer = {a: mrr(replace(fit, stem=a[0], bigrams=a[1]), fit_on) for a in analyzers}
    fit.stem, fit.bigrams = max(by_analyzer, key=lambda a: (by_analyzer[a], a == (False, False)))
    by_fields = {w: mrr(replace(fit, title_weight=w[0], heading_weight=w[1]), fit_on) for w in field_weights}
    fit.title_weight, fit.heading_weight = max(by_fields, key=lambda w: (by_fields[w], w == (1, 1)))
    scores = {(k1, b): mrr(replace(fit, k1=k1, b=b), fit_on) for k1 in K1_GRID for b in B_GRID}
    fit.k1, fit.b = max(scores, key=lambda kb: (scores[kb], kb == (default.k1, default.b)))
    fit.mrr_default = mrr(Bm25Fit(default.k1, default.b, 0.0, 0.0), report_on)
    fit.mrr_tuned = mrr(fit, report_on)
    return fit


def fuse(dense: Sequence[str], lexical: Sequence[str], dense_weight: float, rrf_k: int = 60) -> list[str]:
    """Weighted reciprocal rank fusion of two section rankings (BM25's weight is 1)."""
    scores: dict[str, float] = {}
    for weight, ranking in ((dense_weight, dense), (1.0, lexical)):
        for rank, key in enumerate(ranking, 1):
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
    return sorted(scores, key=lambda key: -scores[key])


def choose_fusion(
    dense: Sequence[Sequence[str]], lexical: Sequence[Sequence[str]], gold: Sequence[str],
    weights: Sequence[float] = DENSE_WEIGHTS,
) -> float:  # fmt: skip
    """The dense weight (BM25's is 1, dense's within ``weights``) whose fused ranking has the best MRR@10 on the
    held-out pairs; ties go to equal weights."""
    scores = {w: _mrr([fuse(d, s, w) for d, s in zip(dense, lexical, strict=True)], gold) for w in weights}
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
    progress: Progress = no_progress,
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
    held_out_on: str = "mined pairs"
    kept: Literal["tuned", "packaged"] = "tuned"  # which model serves: the packaged one when tuning did not beat it
    fusion: FusionChoice | None = None  # the learned fusion, tried only with labelled questions


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
    # Questions labelled with their gold provisions (the formats `gweta eval retrieval` reads), trained on instead of
    # mined pairs; a fifth, split by question, is held out to choose the fusion weight and to report.
    questions: Path | None = None
    # The tuned model is switched to only when it ranks the held-out pairs better than the packaged one; force
    # switches to it whatever it scored (the report still gives both).
    force: bool = False
    learning_rate: float = 2e-5


async def _embed_into(
    settings: Settings, collection: str, embedder: SentenceTransformerEmbedder, chunks: Sequence[Chunk],
    progress: Progress, batch: int = 256, known: Vectors | None = None,
) -> Vectors:  # fmt: skip
    """Embed every chunk with ``embedder`` (or store the ``known`` vectors, in chunk order, it gave earlier) into a
    fresh ``collection``; returns the vectors (chunk order)."""
    cfg = settings.vector_store
    store = MilvusVectorStore(
        settings.milvus_uri, collection, embedder.dimensions, cfg.token.get_secret_value(), cfg.index_type,
        cfg.index_params, cfg.search_params, model_label(embedder.name, embedder.dimensions),
    )  # fmt: skip
    try:
        await asyncio.to_thread(store.client.drop_collection, collection)  # leftovers of a killed run
        store._ensure_collection()
        progress("re-embedding chunks", 0, len(chunks))
        parts = []
        for at in range(0, len(chunks), batch):
            part = list(chunks[at : at + batch])
            if known is None:
                vectors = await embedder.embed_documents([c.embed_text for c in part])
            else:
                vectors = known[at : at + batch]
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
    manifest.embedder, manifest.dimensions = model_label(name, dimensions), dimensions
    await put_json(build_object_store(settings.object_store, settings.data_dir), MANIFEST_KEY, manifest.model_dump())
    return manifest.version


def _check_packaged(settings: Settings) -> None:
    if settings.embeddings.backend != "minilm" or settings.embeddings.model:
        raise NotReadyError("gweta tune adapts the packaged MiniLM; this deploy names its own embedder")


async def _labelled(chunks: Sequence[Chunk], path: Path | None) -> tuple[list[Pair], list[Pair], Unit]:
    """Training and held-out pairs from a labelled question file, and the unit its gold names (passage ids or
    provisions); nothing without a file."""
    if path is None:
        return [], [], section_key
    try:
        questions, _ = await asyncio.to_thread(load_questions, path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadRequestError(f"{path} is not a question file with gold provisions ({exc})") from None
    by_source = bool(questions) and questions[0].by_source_id
    pairs = await asyncio.to_thread(labelled_pairs, chunks, questions)
    train = [p for p in pairs if not held_out(p.query)]  # split as ``split_questions`` splits: by the question's text
    held = [p for p in pairs if held_out(p.query)]
    if len(train) < 2 or not held:
        raise BadRequestError(
            f"{path}: {len(questions)} questions with gold gave {len(train)} training and {len(held)} held-out pairs "
            "whose gold provision is in this corpus; at least 2 and 1 are needed"
        )
    return train, held, lambda chunk: unit_of(chunk, by_source)


async def tune(settings: Settings, options: TuneOptions, progress: Progress = no_progress) -> TuneReport:
    """Mine, fit BM25, fine-tune, re-embed into a new collection, choose fusion weights, then switch (the manifest
    with the new embedder name, so the corpus version and every cache keyed on it change, then the state file). The
    switch is to the tuned model only when its dense ranking of the held-out pairs beats the packaged model's (or
    ``options.force``); otherwise the packaged model serves on with the BM25 and fusion fit here."""
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
    # Labelled questions replace the mined pairs in training and in every choice: mining them would be thrown away.
    mined = options.questions is None
    pairs = await asyncio.to_thread(mine_pairs, chunks, options.max_pairs, options.seed) if mined else []
    clock["mine"] = time.perf_counter() - start
    labelled, held_labelled, unit = await _labelled(chunks, options.questions)
    start = time.perf_counter()
    generated, generate_stats = await generate_pairs(
        settings, chunks, options.generate, options.generate_minutes * 60, options.generate_concurrency, options.seed,
        progress,
    )  # fmt: skip
    if options.generate:
        clock["generate"] = time.perf_counter() - start
    pairs += generated  # split with the mined ones by provision: a held-out provision is unseen in either kind
    train_pairs, held = split_pairs(pairs)
    kinds = {kind: sum(p.kind == kind for p in pairs) for kind in ("heading", "definition", "sentence", "generated")}
    start = time.perf_counter()
    if not mined:  # real questions teach what mined pairs cannot (pairs holds only generated ones here)
        train_pairs = labelled + train_pairs
        held = held_labelled
        kinds = {"labelled": len(labelled), "generated": kinds["generated"]}
        bm25 = await asyncio.to_thread(fit_bm25, chunks, labelled[:500], held, unit, ANALYZERS, FIELD_WEIGHTS)
    else:
        held = held or train_pairs[: max(1, len(train_pairs) // 5)]
        bm25 = await asyncio.to_thread(fit_bm25, chunks, train_pairs[:500], held)
    clock["bm25_fit"] = time.perf_counter() - start
    if len(train_pairs) < 2:
        raise NotReadyError(f"the corpus gave {len(train_pairs)} training pairs; at least 2 are needed")

    start = time.perf_counter()
    model = await asyncio.to_thread(load_sentence_transformer)
    stats = await asyncio.to_thread(
        train, model, train_pairs, options.epochs, options.batch_size, options.max_minutes * 60,
        options.learning_rate, options.seed, progress,
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
        collection = collection_for(settings.vector_store.collection, model_label(name, embedder.dimensions))
        vectors = await _embed_into(settings, collection, embedder, chunks, progress)
        clock["re_embed"] = time.perf_counter() - start
        queries = await embedder.embed_documents([p.query for p in held])
        packaged = SentenceTransformerEmbedder(await asyncio.to_thread(load_sentence_transformer), pool,
                                               settings.embeddings.batch_size)  # fmt: skip
        start = time.perf_counter()
        base = settings.vector_store.collection  # the packaged model's vectors live in the configured collection
        base_current = _base_is_current(state, corpus.manifest)
        packaged_vectors = await _packaged_vectors(settings, packaged, chunks, base_current)
        packaged_queries = await packaged.embed_documents([p.query for p in held])
        clock["baseline"] = time.perf_counter() - start
        # The learned fusion trains on lists whose dense model never saw its questions: the packaged model's.
        train_gold = _gold_by_question(labelled)
        packaged_train = await packaged.embed_documents(list(train_gold)) if not mined else packaged_queries[:0]
    ids = [c.chunk_id for c in chunks]
    units = unit_map(chunks, unit)

    def ranked(matrix: Vectors, asked: Vectors) -> list[list[str]]:
        return [_sections(units, [h.chunk_id for h in hits]) for hits in _dense_hits(matrix, asked, ids)]

    dense, dense_packaged = ranked(vectors, queries), ranked(packaged_vectors, packaged_queries)
    gold = [p.section_id for p in held]
    scores = {"dense (tuned)": _mrr(dense, gold), "dense (packaged)": _mrr(dense_packaged, gold)}
    kept: Literal["tuned", "packaged"] = "tuned"
    tuned_collection = collection
    if not options.force and scores["dense (tuned)"] <= scores["dense (packaged)"]:
        kept, dense = "packaged", dense_packaged
    index = Bm25sIndex.of_chunks(chunks, bm25.settings)
    lexical = [_sections(units, [h.chunk_id for h in index._search(p.query, FUSION_POOL)]) for p in held]
    weights = DENSE_WEIGHTS if mined else LABELLED_DENSE_WEIGHTS
    dense_weight = choose_fusion(dense, lexical, gold, weights)
    held_out = {
        **scores, "bm25 (default)": bm25.mrr_default, "bm25 (tuned)": bm25.mrr_tuned,
        "fused": _mrr([fuse(d, s, dense_weight) for d, s in zip(dense, lexical, strict=True)], gold),
    }  # fmt: skip
    fusion: FusionChoice | None = None
    fusion_file = ""
    if not mined:
        start = time.perf_counter()
        served, served_queries = (vectors, queries) if kept == "tuned" else (packaged_vectors, packaged_queries)
        first = {p.query: i for i, p in reversed(list(enumerate(held)))}
        held_gold = _gold_by_question(held)
        depth = settings.retrieval.candidates  # the lists as the retriever will fuse them
        train_hits = _dense_hits(packaged_vectors, packaged_train, ids, depth)
        held_hits = _dense_hits(served, served_queries[[first[q] for q in held_gold]], ids, depth)
        train_rows = list(zip(train_gold.items(), train_hits, strict=True))
        held_rows = list(zip(held_gold.items(), held_hits, strict=True))
        fusion = await asyncio.to_thread(
            _fusion_choice, corpus, index, units, dense_weight, settings.retrieval, train_rows, held_rows
        )
        clock["learned_fusion"] = time.perf_counter() - start
        if fusion.kept and fusion.trees is not None:
            fusion_file = f"tuning/fusion-v{version}.json"
            write_atomically(settings.data_dir / fusion_file, fusion.trees.model_dump_json())

    fitted = {"k1": bm25.k1, "b": bm25.b, "stem": bm25.stem, "bigrams": bm25.bigrams, "dense_weight": dense_weight,
              "title_weight": bm25.title_weight, "heading_weight": bm25.heading_weight, "bm25_weight": 1.0,
              "fusion_file": fusion_file}  # fmt: skip
    if kept == "tuned":
        new_state = TuningState(
            version=version, last_version=version, model_dir=model_dir, collection=collection, base_collection=base,
            base_version=state.base_version or before, **fitted,
        )  # fmt: skip
    else:  # the packaged model serves on, with BM25 and the fusion weight fit here; this version's model is dropped
        if not base_current:
            await _embed_into(settings, base, packaged, chunks, progress, known=packaged_vectors)
        new_state = TuningState(last_version=version, **fitted)
        name, collection, model_dir = PACKAGED_NAME, base, ""
    # A data dir ingested before field weights has no field boundaries in its BM25 artifact: write them (half a
    # second at 15k chunks) before the switch, so the weights chosen here are the weights served.
    await write_lexical_index(store, chunks)
    if settings.ingestion.sentence_vectors:  # the served model's, so answers read them from the switch on
        start = time.perf_counter()
        served_model = tuned_model if kept == "tuned" else packaged.model
        with ThreadPoolExecutor(settings.model_threads, thread_name_prefix="model") as pool:
            answering = SentenceTransformerEmbedder(served_model, pool, settings.embeddings.batch_size, name)
            answering_runtime = for_sentences(answering, settings.embeddings, settings.data_dir)
            await rebuild_sentence_vectors(store, chunks, answering_runtime, progress)
        clock["sentence_vectors"] = time.perf_counter() - start
    after = await _write_manifest(settings, corpus.manifest, name, embedder.dimensions)
    save_state(settings.data_dir, new_state)  # the switch
    _drop_fusion(settings, state, new_state)
    if state.version and state.collection != collection:  # the previous tuned model is no longer read
        await asyncio.to_thread(_drop_collection, settings, state.collection)
        await asyncio.to_thread(_drop_model, settings, state)
        # and its sentence vectors
        await store.delete(artifact_key(model_label(state.embedder_name, embedder.dimensions)))
    if kept == "packaged":
        await asyncio.to_thread(_drop_collection, settings, tuned_collection)
        shutil.rmtree(target, ignore_errors=True)
    return TuneReport(
        "tuned", new_state.version, before, after, collection, model_dir, {"train": len(train_pairs), "held_out":
        len(held), **kinds}, stats, bm25, dense_weight, held_out, {k: round(v, 1) for k, v in clock.items()},
        generate_stats, "mined pairs" if mined else "labelled questions", kept, fusion,
    )  # fmt: skip


def _dense_hits(matrix: Vectors, asked: Vectors, ids: Sequence[str], depth: int = FUSION_POOL) -> list[list[Hit]]:
    """Each query's top ``depth`` chunks by cosine (the vectors are normalised), as the vector store returns them."""
    out = []
    for query in asked:
        scores = matrix @ query
        top = np.argsort(-scores, kind="stable")[:depth]
        out.append([Hit(ids[i], float(scores[i])) for i in top])
    return out


def _gold_by_question(pairs: Sequence[Pair]) -> dict[str, frozenset[str]]:
    """Each labelled question (pairs are one per gold provision) with all its gold units, in first-seen order."""
    gold: dict[str, set[str]] = {}
    for pair in pairs:
        gold.setdefault(pair.query, set()).add(pair.section_id)
    return {query: frozenset(units) for query, units in gold.items()}


def _fusion_choice(
    corpus: Corpus, index: Bm25sIndex, units: Mapping[str, str], dense_weight: float, cfg: RetrievalSettings,
    train: Sequence[tuple[tuple[str, frozenset[str]], list[Hit]]],
    held: Sequence[tuple[tuple[str, frozenset[str]], list[Hit]]],
) -> FusionChoice:  # fmt: skip
    """The learned fusion trained on ``train`` ((question, gold), packaged dense hits) and judged on ``held`` (with the
    dense hits of the model that serves), BM25's lists from the BM25 fit here, fused as the retriever (``cfg``)
    fuses."""

    def asked(rows: Sequence[tuple[tuple[str, frozenset[str]], list[Hit]]]) -> list[Asked]:
        depth = lexical_depth(cfg.candidates)
        return [Asked.of(text, dense, index._search(text, depth), dense_weight, gold, cfg.candidates, cfg.rrf_k)
                for (text, gold), dense in rows]  # fmt: skip

    return choose(Candidates(corpus.chunks, index), asked(train), asked(held), units)


def _drop_fusion(settings: Settings, before: TuningState, after: TuningState) -> None:
    """The learned fusion the switch left behind, if any (only a file under the data dir's tuning folder)."""
    if not before.fusion_file or before.fusion_file == after.fusion_file:
        return
    path = (settings.data_dir / before.fusion_file).resolve()
    if path.parent == (settings.data_dir / "tuning").resolve():
        path.unlink(missing_ok=True)


def _drop_model(settings: Settings, state: TuningState) -> None:
    """The weights of a tuned model no longer served, and the graph the query path exported from them (about 90 MB
    each: every tune used to leave both behind)."""
    models = (settings.data_dir / "models").resolve()
    folder = (settings.data_dir / state.model_dir).resolve()
    if not state.model_dir or folder.parent != models:  # never a path the state file points elsewhere
        return
    if (folder / "config.json").is_file():
        try:
            exports = export_folder(settings.embeddings, settings.data_dir)
            gone = forget_export(load_sentence_transformer(str(folder)), exports)
            log.info("deleted the exported graph of %s: %s", state.model_dir, ", ".join(p.name for p in gone) or "none")
        except Exception as exc:  # noqa: BLE001 - the weights go anyway; a stray export only takes disk
            log.warning("could not find the exported graph of %s (%s); it stays", state.model_dir, exc)
    shutil.rmtree(folder, ignore_errors=True)


def _base_is_current(state: TuningState, manifest: Manifest) -> bool:
    """Whether the base collection holds the packaged model's vectors of the corpus as it is now: it is the one
    served when nothing is tuned, and it stays current while tuned until documents are ingested or removed."""
    packaged = Manifest(embedder=f"{PACKAGED_NAME}:{manifest.dimensions or 384}", documents=manifest.documents)
    return not state.version or packaged.version == state.base_version


async def _packaged_vectors(
    settings: Settings, packaged: SentenceTransformerEmbedder, chunks: Sequence[Chunk], current: bool
) -> Vectors:
    """The packaged model's vectors of ``chunks`` (in order): read from the base collection when it is current, else
    embedded here."""
    if current:
        store = build_vector_store(settings, packaged.dimensions, model_label(PACKAGED_NAME, packaged.dimensions))
        try:
            stored = await store.vectors()
        finally:
            await store.close()
        if all(c.chunk_id in stored for c in chunks):
            return np.stack([stored[c.chunk_id] for c in chunks]).astype(np.float32)
    return await packaged.embed_documents([c.embed_text for c in chunks])


async def revert(settings: Settings, progress: Progress = no_progress) -> TuneReport:
    """Back to the packaged model, BM25 defaults and equal fusion weights. The base collection is reused when the
    corpus has not changed since tuning; otherwise every chunk is embedded again with the packaged model."""
    _check_packaged(settings)
    state = load_state(settings.data_dir)
    store = build_object_store(settings.object_store, settings.data_dir)
    corpus = await Corpus.load(store)
    before = corpus.version
    base = settings.vector_store.collection  # the packaged model's vectors live in the configured collection
    manifest = corpus.manifest
    start = time.perf_counter()
    dims = manifest.dimensions or 384
    current = _base_is_current(state, manifest)
    if not current or settings.ingestion.sentence_vectors:
        chunks = sorted(corpus.chunks.values(), key=lambda c: c.chunk_id)
        with ThreadPoolExecutor(settings.model_threads, thread_name_prefix="model") as pool:
            model = await asyncio.to_thread(load_sentence_transformer)
            embedder = SentenceTransformerEmbedder(model, pool, settings.embeddings.batch_size, PACKAGED_NAME)
            dims = embedder.dimensions
            if not current:
                await _embed_into(settings, base, embedder, chunks, progress)
            if settings.ingestion.sentence_vectors:  # only what the packaged model's last artifact lacks
                runtime = for_sentences(embedder, settings.embeddings, settings.data_dir)
                await rebuild_sentence_vectors(store, chunks, runtime, progress)
    after = await _write_manifest(settings, manifest, PACKAGED_NAME, dims)
    reverted = TuningState(last_version=state.last_version)
    save_state(settings.data_dir, reverted)
    _drop_fusion(settings, state, reverted)
    if state.version:
        await asyncio.to_thread(_drop_collection, settings, state.collection)
        await asyncio.to_thread(_drop_model, settings, state)
        await store.delete(artifact_key(model_label(state.embedder_name, dims)))  # and its sentence vectors
    return TuneReport("reverted", 0, before, after, base, seconds={"re_embed": round(time.perf_counter() - start, 1)})
