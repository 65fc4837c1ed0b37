"""Build every client and tool once, for the app's lifespan and for the CLI alike."""

from __future__ import annotations

import dataclasses
import gc
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.callbacks import BaseCallbackHandler

from api.auth import LOCAL, Caller, IdTokenVerifier, build_id_token_verifier
from api.composer.answerability import load_answerability_model
from api.composer.judge.judge import build_claim_judge, llm_asker
from api.composer.skills import load_skills
from api.composer.structured import TimeoutPause
from api.errors import ConfigError
from api.observability import build_callbacks
from api.orchestrators.query import Asker, QueryDeps, QueryOrchestrator, build_query_graph
from api.orchestrators.query.evidence import FittedJudge
from api.schemas.events import StreamEvent
from api.schemas.query import QueryRequest
from api.settings import Settings
from api.tools.audit import AuditTrail, build_audit_log
from api.tools.bm25 import LexicalIndex, load_lexical_index
from api.tools.checkpoints import open_checkpointer
from api.tools.context import ContextBundler
from api.tools.corpus import Corpus
from api.tools.corpus_watch import CorpusWatcher
from api.tools.embeddings import build_embedder, build_shared_embedder, core_share, model_label, share_cores
from api.tools.firestore import close_firestore, open_firestore
from api.tools.fusion import Candidates, LearnedFusion, load_trees
from api.tools.llm import build_chat_stream, build_llm
from api.tools.memory import build_memory
from api.tools.object_store import build_object_store
from api.tools.onnx_embedder import export_folder, for_queries
from api.tools.reranker import build_reranker
from api.tools.retrieval import HybridRetriever
from api.tools.sentence_vectors import SentenceVectors, StoredSentences, load_sentence_vectors
from api.tools.thesaurus import load_thesaurus
from api.tools.vector_store import MilvusVectorStore, build_vector_store
from api.tuning import apply_tuning
from api.workers import GraphWorkers

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    orchestrator: QueryOrchestrator
    """This process's own graph: the debug routes and the CLI use its tools."""
    asker: Asker
    """What answers the questions clients ask: ``orchestrator``, or the graph workers (``graph_workers``)."""
    id_tokens: IdTokenVerifier | None = None
    """Verifies sign-in tokens against an identity provider's published keys (``identity.provider``)."""
    watcher: CorpusWatcher | None = None
    """Moves this replica to a new corpus version when another process ingests (``corpus_poll_s``)."""

    @property
    def corpus(self) -> Corpus:
        """The corpus version being served now (it changes when the watcher loads a new one)."""
        return self.orchestrator.deps.corpus


class AuditedOrchestrator(QueryOrchestrator):
    """The query orchestrator, with every question's outcome written to the audit log as its stream ends."""

    def __init__(self, graph: Any, deps: QueryDeps, callbacks: list[BaseCallbackHandler], audit: AuditTrail) -> None:
        super().__init__(graph, deps, callbacks)
        self.audit = audit

    async def stream(self, request: QueryRequest, caller: Caller = LOCAL) -> AsyncIterator[StreamEvent]:
        events = super().stream(request, caller)
        async for event in self.audit.watch(events, question=request.q, caller=caller.subject, tenant=caller.tenant,
                                            session_id=request.session_id):  # fmt: skip
            yield event


def _uses_firestore(settings: Settings) -> bool:
    return "firestore" in (settings.checkpointer.backend, settings.audit.backend, settings.memory.backend)


@asynccontextmanager
async def open_services(settings: Settings, serving: bool = False) -> AsyncIterator[Services]:
    """Everything a question needs, for the lifespan of the block. ``serving`` (the web app and its graph workers):
    what is loaded stays out of the garbage collector's reach while the block lasts (``settle_heap``), and with
    ``settings.graph_workers`` questions are answered by that many worker processes (the CLI answers in process)."""
    given, settings = settings, apply_tuning(settings)  # what `gweta tune` chose for this data dir
    skills = load_skills()  # a broken prompt fails the boot, not the first request
    pool = ThreadPoolExecutor(max_workers=settings.model_threads, thread_name_prefix="model")
    http = httpx.AsyncClient(timeout=httpx.Timeout(settings.llm.timeout_s, connect=5.0))
    firestore = open_firestore(settings.firestore_settings) if _uses_firestore(settings) else None
    try:
        store = build_object_store(settings.object_store, settings.data_dir)
        # Requests share vectors (LRU) and model calls (micro-batches); ingestion uses the bare embedder.
        local = build_embedder(settings.embeddings, pool, http)
        onnx_dir = export_folder(settings.embeddings, settings.data_dir)
        local = for_queries(local, settings.embeddings, onnx_dir, settings.model_threads)
        embedder = build_shared_embedder(settings.embeddings, local, settings.model_threads)
        share_cores(settings.model_threads)
        vectors = build_vector_store(settings, embedder.dimensions, model_label(embedder.name, embedder.dimensions))
        try:
            corpus = await Corpus.load(store)
            label = model_label(embedder.name, embedder.dimensions)
            if corpus.manifest.embedder and corpus.manifest.embedder != label:
                raise ConfigError(
                    f"the corpus was embedded with {corpus.manifest.embedder}, but the configured embeddings model "
                    f"is {label}: run 'gweta reembed' with these settings first (or configure the model it was "
                    "embedded with)"
                )
            vectors.warm()  # the in-memory exact index, built while the rest loads (Milvus Lite only)
            lexical = await load_lexical_index(store, settings.bm25)
            # With graph workers this process's own graph serves only the debug routes: the workers answer, and
            # they hold the sentence vectors (115 MB over the 385 Acts), not this process too.
            answers_here = not (serving and settings.graph_workers)
            sentences = await load_sentence_vectors(store, label) if answers_here else None
            reranker = build_reranker(settings.reranker, pool)
            thesaurus = load_thesaurus(settings.retrieval.lay_terms_path) if settings.retrieval.lay_terms else None
            answerability = (
                load_answerability_model(settings.retrieval.answerability_path)
                if settings.retrieval.answerability
                else None
            )

            trees = load_trees(settings.retrieval.learned_fusion_path) if settings.retrieval.learned_fusion else None

            def assemble(
                corpus: Corpus, lexical: LexicalIndex, sentences: SentenceVectors | None
            ) -> tuple[HybridRetriever, ContextBundler, FittedJudge | None]:
                """The tools that hold one corpus version (each with its own caches); its answers read their
                sentences' vectors from ``sentences`` where ingestion kept them."""
                fusion = LearnedFusion(trees, Candidates(corpus.chunks, lexical)) if trees else None
                retriever = HybridRetriever(
                    corpus, StoredSentences(embedder, sentences), vectors, lexical, settings.retrieval, reranker,
                    settings.reranker.candidates, thesaurus, fusion,
                )  # fmt: skip
                bundler = ContextBundler(
                    corpus, embedder.count_tokens, settings.retrieval.context_tokens,
                    settings.retrieval.provision_tokens, settings.object_store.answer_wait_s,
                )  # fmt: skip
                judge = (
                    FittedJudge(answerability, lexical, thesaurus, corpus.titles_for)
                    if answerability is not None
                    else None
                )
                return retriever, bundler, judge

            retriever, bundler, judge = assemble(corpus, lexical, sentences)
            memory = build_memory(settings, firestore)
            llm = build_llm(settings.llm, http)
            ask = (
                llm_asker(llm, skills["judge"], settings.gate.llm_timeout_s, settings.llm.call_attempts)
                if llm is not None and settings.gate.judge == "llm"
                else None
            )
            deps = QueryDeps(
                settings=settings, corpus=corpus, retriever=retriever, bundler=bundler,
                llm=llm, chat=build_chat_stream(settings.llm, http), skills=skills,
                memory=memory, judge=judge,
                pauses=TimeoutPause(settings.llm.pause_after_timeouts, settings.llm.pause_s),
                claims=build_claim_judge(settings.gate, ask),
            )  # fmt: skip
            log.info("corpus %s: %d documents, %d chunks", corpus.version, len(corpus.manifest.documents), len(corpus))
            model = settings.llm.model if settings.llm.backend != "none" else "extractive"
            audit = AuditTrail(build_audit_log(settings, firestore), settings.audit, model)
            try:
                async with open_checkpointer(settings, firestore) as checkpointer:
                    graph = build_query_graph(checkpointer)
                    orchestrator = AuditedOrchestrator(graph, deps, build_callbacks(settings.tracing), audit)

                    async def swap(corpus: Corpus, lexical: LexicalIndex) -> None:
                        # Requests already running keep the deps they started with; new ones get the new version.
                        sentences = await load_sentence_vectors(store, label) if answers_here else None
                        retriever, bundler, judge = assemble(corpus, lexical, sentences)
                        orchestrator.deps = dataclasses.replace(
                            orchestrator.deps, corpus=corpus, retriever=retriever, bundler=bundler, judge=judge
                        )
                        if serving:
                            settle_heap()

                    # Every answer searches the same way from the first: the exact index, built while the rest loaded.
                    await vectors.exact_ready()
                    served = corpus.version if corpus.chunks.holds_exactly(lexical.chunk_ids) else ""
                    # From here the first version is reached through the orchestrator's deps only, so a swap frees it
                    # (held here too, each process kept its first corpus and BM25 index beside the current one).
                    del corpus, lexical, sentences, retriever, bundler, judge, deps
                    watcher = CorpusWatcher(
                        store, settings.bm25, served, swap, settings.corpus_poll_s, settings.state if serving else None
                    )
                    watcher.start()
                    if serving:
                        settle_heap()
                    try:
                        async with _graph_workers(given if serving else None, vectors) as workers:
                            yield Services(
                                settings, orchestrator, workers or orchestrator,
                                build_id_token_verifier(settings.identity, http), watcher,
                            )  # fmt: skip
                    finally:
                        await watcher.stop()
                        if serving:
                            gc.unfreeze()  # what this block loaded is garbage now; the collector may take it back
            finally:
                await audit.close()
        finally:
            await vectors.close()
    finally:
        await http.aclose()
        if firestore is not None:
            await close_firestore(firestore)
        pool.shutdown(wait=False, cancel_futures=True)


def settle_heap() -> None:
    """Put what a serving process has loaded to stay (the corpus, BM25's lists, the models) out of the garbage
    collector's reach. Its full collections walk every tracked object while the event loop answers nothing: 0.4 s over
    the 385 Acts' 770k objects, about once every 20 s under load; frozen, under 10 ms
    (``benchmarks/results/load_gc.md``). No collection first: one finds about 20 unreachable objects after loading
    and would stop the event loop for 0.3-0.4 s itself, at start-up, after every corpus swap, and in every test that
    serves the app."""
    gc.freeze()


@asynccontextmanager
async def _graph_workers(settings: Settings | None, vectors: MilvusVectorStore) -> AsyncIterator[GraphWorkers | None]:
    """``settings.graph_workers`` worker processes answering with these settings, or None when there are none (or no
    settings). A Milvus Lite folder is opened by this process only, so the workers reach it through the engine this
    one hosts."""
    if settings is None or not settings.graph_workers:
        yield None
        return
    store = settings.vector_store.model_copy(update={"uri": vectors.shared_uri(), "hosted_lite": vectors.is_lite})
    # Each worker runs its model on its share of the cores: one model thread per core, so its embedding batches
    # grow under load instead of queueing (44.8 against 36.9 answers/s at 50 streams on 2 cores, load_workers.md).
    threads = core_share(settings.graph_workers)
    answering = settings.model_copy(update={"graph_workers": 0, "vector_store": store, "model_threads": threads})
    workers = GraphWorkers(answering, settings.graph_workers)
    try:
        await workers.start()
        log.info("%d graph workers answering (pids %s)", settings.graph_workers, workers.pids)
        yield workers
    finally:
        await workers.close()
