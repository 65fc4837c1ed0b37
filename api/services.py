"""Build every client and tool once, for the app's lifespan and for the CLI alike."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from api.composer.skills import load_skills
from api.observability import build_callbacks
from api.orchestrators.query import QueryDeps, QueryOrchestrator, build_query_graph
from api.settings import Settings
from api.tools.bm25 import load_lexical_index
from api.tools.checkpoints import open_checkpointer
from api.tools.context import ContextBundler
from api.tools.corpus import Corpus
from api.tools.embeddings import build_embedder
from api.tools.llm import build_llm
from api.tools.memory import QaMemory
from api.tools.object_store import build_object_store
from api.tools.reranker import build_reranker
from api.tools.retrieval import HybridRetriever
from api.tools.vector_store import build_vector_store
from api.tuning import apply_tuning

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    corpus: Corpus
    orchestrator: QueryOrchestrator


@asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[Services]:
    settings = apply_tuning(settings)  # what `gweta tune` chose for this data dir
    skills = load_skills()  # a broken prompt fails the boot, not the first request
    pool = ThreadPoolExecutor(max_workers=settings.model_threads, thread_name_prefix="model")
    http = httpx.AsyncClient(timeout=httpx.Timeout(settings.llm.timeout_s, connect=5.0))
    try:
        store = build_object_store(settings.object_store, settings.data_dir)
        embedder = build_embedder(settings.embeddings, pool)
        vectors = build_vector_store(settings, embedder.dimensions)
        try:
            corpus = await Corpus.load(store)
            lexical = await load_lexical_index(store, settings.bm25)
            reranker = build_reranker(settings.reranker, pool)
            retriever = HybridRetriever(
                corpus, embedder, vectors, lexical, settings.retrieval, reranker, settings.reranker.candidates
            )
            bundler = ContextBundler(
                corpus, embedder.count_tokens, settings.retrieval.context_tokens, settings.retrieval.provision_tokens
            )
            memory = QaMemory(settings.llm.memory_similarity, settings.llm.memory_ttl_s)
            deps = QueryDeps(
                settings=settings, corpus=corpus, retriever=retriever, bundler=bundler,
                llm=build_llm(settings.llm, http), skills=skills, memory=memory,
            )  # fmt: skip
            log.info("corpus %s: %d documents, %d chunks", corpus.version, len(corpus.manifest.documents), len(corpus))
            async with open_checkpointer(settings) as checkpointer:
                graph = build_query_graph(checkpointer)
                yield Services(settings, corpus, QueryOrchestrator(graph, deps, build_callbacks(settings.tracing)))
        finally:
            await vectors.close()
    finally:
        await http.aclose()
        pool.shutdown(wait=False, cancel_futures=True)
