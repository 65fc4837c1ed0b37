"""Hybrid retrieval: dense (vector store) and lexical (BM25) searches run concurrently, each under its own
timeout, are fused with weighted reciprocal rank fusion (then ordered by the ranker ``gweta tune --questions``
learned, where it did), then optionally reranked by a cross-encoder.

Every stage's candidates are kept on the result, so the debug endpoint and the evaluation can look inside.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from api.errors import BackendError, GwetaError
from api.schemas.documents import Chunk
from api.schemas.events import WarningCode
from api.settings import RetrievalSettings
from api.text.units import heading_text, provision_heading
from api.tools.bm25 import LexicalIndex, Mask
from api.tools.cache import SemanticCache, TTLCache
from api.tools.chunk_table import ChunkTable
from api.tools.corpus import Corpus
from api.tools.embeddings import Embedder, Vectors
from api.tools.fusion import LearnedFusion, lexical_depth
from api.tools.reranker import Reranker
from api.tools.thesaurus import Thesaurus
from api.tools.vector_store import NO_FILTERS, Hit, SearchFilters, VectorStore

log = logging.getLogger(__name__)
Mode = Literal["hybrid", "dense", "bm25"]
EXPANSION_FEEDBACK = 3  # top BM25 chunks whose shared terms expand the query
MASK_CACHE_S = 3600.0  # a filter set's lexical mask is reused this long (the corpus does not change under it)


@dataclass(frozen=True, slots=True)
class Retrieved:
    chunk: Chunk
    score: float
    ranks: Mapping[str, int]


@dataclass(slots=True)
class RetrievalResult:
    hits: list[Retrieved]
    warnings: list[tuple[WarningCode, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    stages: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    """(chunk id, score) per stage: dense, bm25, heading_search (provisions found by their heading, when
    ``heading_source`` is on), fused (with the headings' ranking when it ran), before_headings (the searches' fusion
    alone, when the headings' ranking ran), learned (the learned ranker's log-odds), reranked."""
    cache_hits: dict[str, int] = field(default_factory=dict)
    expansion: list[str] = field(default_factory=list)
    """Terms query expansion added to the BM25 query, if it ran."""
    cache_similarity: float = 0.0
    """For a result served from the cache: 1.0 for the same text, else the cosine of the two queries."""
    expansions: int = 0
    """For ``retrieve_many``: how many alternative queries and hypothetical passages were searched and fused in."""
    lay_terms: list[str] = field(default_factory=list)
    """Legal terms the lay-term thesaurus added to both search sides."""
    own: RetrievalResult | None = None
    """For ``retrieve_many`` with expansions fused in: the question's own search (its hits carry dense/BM25 ranks, which
    the fused hits do not), for what is judged on one search's evidence."""


@dataclass(frozen=True, slots=True)
class Expansions:
    """Other ways to find what a question asks: alternative phrasings (searched like the question) and hypothetical
    passages (searched by meaning only, since they only have to land near the real provision)."""

    queries: Sequence[str] = ()
    passages: Sequence[str] = ()


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[Hit]], k: int = 60, weights: Mapping[str, float] | None = None
) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse ranked lists: score(d) = sum over lists of weight / (k + rank), ranks counted from 1.

    Only positions matter, so scores on different scales (cosine, BM25) combine without calibration.
    """
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for source, hits in rankings.items():
        weight = 1.0 if weights is None else weights.get(source, 1.0)
        for rank, hit in enumerate(hits, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (k + rank)
            ranks.setdefault(hit.chunk_id, {})[source] = rank
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [(cid, score, ranks[cid]) for cid, score in ordered]


def fuse_searches(results: Sequence[RetrievalResult], k: int) -> list[tuple[str, float, dict[str, int]]]:
    """A question's own search (first) and its expansions' searches in one ranking by RRF, the question's own
    counting double against any one expansion."""
    rankings = {f"q{i}": [Hit(h.chunk.chunk_id, h.score) for h in r.hits] for i, r in enumerate(results)}
    return reciprocal_rank_fusion(rankings, k, {"q0": 2.0})


def heading_order(texts: Sequence[str], vectors: Vectors, query: Vectors) -> list[str]:
    """``texts`` (headings, ``vectors`` their embeddings in the same order), closest in meaning to ``query`` first."""
    similarity = np.asarray(vectors, dtype=np.float32) @ np.asarray(query, dtype=np.float32).reshape(-1)
    return [texts[i] for i in sorted(range(len(texts)), key=lambda i: (-float(similarity[i]), texts[i]))]


def with_headings(fused: Sequence[Retrieved], order: Sequence[str], weight: float, k: int) -> list[Retrieved]:
    """``fused`` with the heading ranking fused in: every chunk whose provision's heading (``heading_text``) is the
    r-th of ``order`` gains ``weight / (k + r)``, as a third list of reciprocal rank fusion whose items are
    provisions, and records ``heading: r``; re-sorted by the new score (ties keep their order)."""
    place = {text: rank for rank, text in enumerate(order, start=1)}
    scored: list[Retrieved] = []
    for hit in fused:
        rank = place.get(heading_text(hit.chunk))
        if rank is None:
            scored.append(hit)
        else:
            scored.append(Retrieved(hit.chunk, hit.score + weight / (k + rank), {**hit.ranks, "heading": rank}))
    return sorted(scored, key=lambda h: -h.score)


@dataclass(frozen=True, slots=True)
class HeadingIndex:
    """Every provision's heading (``heading_text``: its law's title and its own heading) with its vector, for a
    search by meaning over all of them; ``provisions[i]`` holds the first chunk of each provision ``texts[i]``
    heads (one heading may head several provisions of a law), in the corpus's order."""

    texts: list[str]
    vectors: npt.NDArray[np.float32]
    provisions: list[list[str]]

    def search(self, query: Vectors, n: int, admits: Callable[[str], bool]) -> list[Hit]:
        """The first chunks of the ``n`` provisions whose headings are closest in meaning to ``query`` (cosine as
        the heading ranking reads it), among those whose chunk ``admits``; ties in the corpus's order."""
        if not len(self.texts) or n <= 0:
            return []
        # numpy's own loop, not BLAS: a BLAS product this size starts threads that spin on the cores the model
        # embedding questions needs (measured: a search's time nearly doubled on two cores); this takes about 2 ms.
        similarity = np.einsum("ij,j->i", self.vectors, np.asarray(query, dtype=np.float32).reshape(-1))
        hits: list[Hit] = []
        for i in _best_first(similarity, max(4 * n, 64)):
            for chunk_id in self.provisions[i]:
                if admits(chunk_id):
                    hits.append(Hit(chunk_id, float(similarity[i])))
                    if len(hits) == n:
                        return hits
        return hits


def _best_first(scores: npt.NDArray[np.float32], first: int) -> Iterator[int]:
    """Positions of ``scores``, highest first (ties by position): the best ``first`` found without sorting the rest,
    which is sorted only if a caller reads past them (filters that refuse most of the corpus)."""
    if first < len(scores):
        near = np.argpartition(-scores, first - 1)[:first]
        near = near[np.lexsort((near, -scores[near]))]
        yield from near.tolist()
        taken = set(near.tolist())
        yield from (i for i in np.argsort(-scores, kind="stable").tolist() if i not in taken)
    else:
        yield from np.argsort(-scores, kind="stable").tolist()


def provision_headings(chunks: ChunkTable) -> tuple[list[str], list[list[str]]]:
    """Each distinct provision heading of ``chunks`` (``heading_text``) and the first chunk of each provision it
    heads, in the table's order; provisions without a heading are left out."""
    heads: dict[str, list[str]] = {}
    seen: set[str] = set()
    for chunk_id, section_id, title, heading in chunks.headings():
        if section_id in seen:
            continue
        seen.add(section_id)
        if text := provision_heading(title, heading):
            heads.setdefault(text, []).append(chunk_id)
    return list(heads), list(heads.values())


def diverse(hits: Sequence[Retrieved], k: int, per_section: int) -> list[Retrieved]:
    """The first ``k`` of ``hits`` (best first) holding at most ``per_section`` chunks of one section while chunks of
    other sections remain; the chunks passed over fill any places left, and the chosen keep ``hits``' order.

    Several chunks of one long section often rank together: the evidence an answer is composed from (and the closest
    provisions shown when it does not answer) then holds fewer provisions than places. ``per_section`` 0: no limit."""
    if per_section <= 0:
        return list(hits[:k])
    chosen: list[int] = []
    passed: list[int] = []
    held: dict[str, int] = {}
    for i, hit in enumerate(hits):
        if len(chosen) == k:
            break
        section = hit.chunk.section_id
        if held.get(section, 0) < per_section:
            chosen.append(i)
            held[section] = held.get(section, 0) + 1
        else:
            passed.append(i)
    return [hits[i] for i in sorted(chosen + passed[: k - len(chosen)])]


def with_provisions(hits: Sequence[Retrieved], k: int, per_section: int) -> list[Retrieved]:
    """The first ``k`` of ``hits`` (best first), and with them, in their place in ``hits``' order, the chunks
    ``diverse`` chooses (at most ``per_section`` of one section): the evidence holds the search's first chunks as
    ranked, and the best chunk of as many further provisions as it takes to hold ``k`` distinct ones where the search
    found them. ``per_section`` 0: the first ``k`` only.

    The first chunks are kept whole: a long provision's answering sentence is often in its second chunk, and the
    evidence judge reads the first chunks as it was fitted on them; the provisions added after them widen what the
    closest provisions are chosen from and what the answer may quote."""
    if per_section <= 0:
        return list(hits[:k])
    chosen = {id(h) for h in [*hits[:k], *diverse(hits, k, per_section)]}
    return [h for h in hits if id(h) in chosen]


def normalize_query(query: str) -> str:
    """The cache's view of a query: case, spacing and closing punctuation do not change what it asks."""
    return " ".join(query.lower().split()).rstrip("?.!")


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def filter_mask(chunks: ChunkTable, lexical: LexicalIndex, filters: SearchFilters) -> Mask:
    """Which of ``lexical``'s entries ``filters`` admits. Every filter reads a document's fields, so each document is
    decided once and its chunks marked, without reading the chunks themselves."""
    admitted = {
        key for key, f in chunks.documents.items()
        if filters.admits_document(key, f.jurisdiction, f.doc_type, f.date, f.tenant)
    }  # fmt: skip
    positions = lexical.positions
    mask = np.zeros(len(lexical), dtype=bool)
    for chunk_id, doc_key in chunks.doc_keys():
        if doc_key in admitted and (at := positions.get(chunk_id)) is not None:
            mask[at] = True
    return mask


class HybridRetriever:
    def __init__(
        self,
        corpus: Corpus,
        embedder: Embedder,
        vectors: VectorStore,
        lexical: LexicalIndex,
        cfg: RetrievalSettings,
        reranker: Reranker | None = None,
        rerank_candidates: int = 20,
        thesaurus: Thesaurus | None = None,
        fusion: LearnedFusion | None = None,
    ) -> None:
        self.corpus = corpus
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.cfg = cfg
        self.reranker = reranker
        self.rerank_candidates = rerank_candidates
        self.thesaurus = thesaurus
        self.fusion = fusion
        # Caller-supplied filters key this cache, so it is bounded like the others (a mask is one byte per chunk).
        self._masks: TTLCache[Mask] = TTLCache(MASK_CACHE_S, cfg.mask_cache_entries)
        # Query -> results, found by the normalised text or by a query embedding close enough to a cached one,
        # within a group that holds everything else that changes results; the corpus version is part of the group,
        # so a re-ingested corpus (a new Corpus, a new version) never sees another's entries.
        self.cache: SemanticCache[RetrievalResult] = SemanticCache(
            cfg.cache_ttl_s, cfg.cache_entries, cfg.cache_similarity
        )
        self._heading_index: HeadingIndex | None = None
        self._heading_lock = asyncio.Lock()

    def scoped_filters(self, filters: Mapping[str, str], tenant: str) -> SearchFilters:
        """A request's filters plus the caller's tenant scope: what every search made for that caller applies."""
        return self.corpus.search_filters(filters, tenant)

    async def _dense(self, query: str, filters: SearchFilters, vector: Vectors | None = None) -> list[Hit]:
        if vector is None:
            vector = await self.embedder.embed_query(query)
        return await self.vectors.search(vector, self.cfg.candidates, filters)

    async def _embed(self, query: str, result: RetrievalResult) -> Vectors | None:
        """The query's embedding, computed once for the cache lookup and the dense search; None if it fails (the
        dense search then tries again and reports the failure as its own)."""
        start = time.perf_counter()
        try:
            return await asyncio.wait_for(self.embedder.embed_query(query), self.cfg.timeout_s)
        except (GwetaError, TimeoutError) as exc:
            log.warning("query embedding failed: %r", exc)
            return None
        finally:
            result.timings["embed_query"] = _ms(start)

    def _mask(self, filters: SearchFilters) -> Mask | None:
        """Which lexical-index entries the filters admit (cached per filter set; the corpus does not change)."""
        if not filters:
            return None
        mask = self._masks.get(filters)
        if mask is None:
            mask = filter_mask(self.corpus.chunks, self.lexical, filters)
            self._masks.put(filters, mask)
        return mask

    async def _timed(self, name: str, work: Awaitable[list[Hit]], timings: dict[str, float]) -> list[Hit]:
        start = time.perf_counter()
        try:
            return await asyncio.wait_for(work, self.cfg.timeout_s)
        finally:
            timings[f"retrieve_{name}"] = _ms(start)

    async def _lexical(
        self, query: str, filters: SearchFilters, expand: bool, result: RetrievalResult, depth: int
    ) -> list[Hit]:
        """BM25's best ``depth`` chunks; with ``expand``, a second pass adds the terms the first pass's top chunks
        share (RM3-style)."""
        hits = await self.lexical.search(query, depth, self._mask(filters))
        if not expand or not hits:
            return hits
        terms = self.lexical.expansion_terms([h.chunk_id for h in hits[:EXPANSION_FEEDBACK]], query)
        result.expansion = terms
        if not terms:
            return hits
        result.stages["bm25_unexpanded"] = [(h.chunk_id, h.score) for h in hits[: self.cfg.candidates]]
        # The question's own words count twice, so the added terms refine rather than replace it.
        expanded = f"{query} {query} {' '.join(terms)}"
        return await self.lexical.search(expanded, depth, self._mask(filters))

    async def _search(
        self,
        query: str,
        mode: Mode,
        filters: SearchFilters,
        result: RetrievalResult,
        expand: bool = False,
        vector: Vectors | None = None,
        lexical_query: str | None = None,
        scored: dict[str, float] | None = None,
    ) -> dict[str, list[Hit]]:
        """Each backend's candidates. ``scored``, when given, receives BM25's scores down to ``lexical_depth`` (what
        the learned fusion reads); its list stays ``candidates`` long."""
        sources: dict[str, Awaitable[list[Hit]]] = {}
        if mode in ("hybrid", "dense"):
            sources["dense"] = self._dense(query, filters, vector)
        if mode in ("hybrid", "bm25"):
            depth = self.cfg.candidates if scored is None else lexical_depth(self.cfg.candidates)
            sources["bm25"] = self._lexical(lexical_query or query, filters, expand, result, depth)
        outcomes = await asyncio.gather(
            *(self._timed(name, work, result.timings) for name, work in sources.items()), return_exceptions=True
        )
        rankings: dict[str, list[Hit]] = {}
        for name, outcome in zip(sources, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, GwetaError | TimeoutError):
                    raise outcome
                kind = "timed out" if isinstance(outcome, TimeoutError) else "failed"
                log.warning("%s retrieval %s: %r", name, kind, outcome)
                code: WarningCode = "dense_unavailable" if name == "dense" else "bm25_unavailable"
                result.warnings.append((code, f"{name} search {kind}; results come from the rest"))
            else:
                if name == "bm25" and scored is not None:
                    scored.update((h.chunk_id, h.score) for h in outcome)
                    outcome = outcome[: self.cfg.candidates]
                rankings[name] = outcome
                result.stages[name] = [(h.chunk_id, h.score) for h in outcome]
        return rankings

    @staticmethod
    def _learned(
        fusion: LearnedFusion, query: str, rankings: Mapping[str, Sequence[Hit]], fused: list[Retrieved],
        result: RetrievalResult, scored: Mapping[str, float] | None,
    ) -> list[Retrieved]:  # fmt: skip
        """``fused`` in the learned ranker's order (ties keep RRF's); each hit keeps its RRF score and gains its
        ``learned`` rank."""
        start = time.perf_counter()
        order = fusion.ranked(query, rankings, [h.chunk.chunk_id for h in fused], scored)
        learned = [Retrieved(fused[i].chunk, fused[i].score, {**fused[i].ranks, "learned": n})
                   for n, (i, _) in enumerate(order, start=1)]  # fmt: skip
        result.stages["learned"] = [(fused[i].chunk.chunk_id, score) for i, score in order]
        result.timings["learned_fusion"] = _ms(start)
        return learned

    async def _headings(self, fused: list[Retrieved], vector: Vectors, result: RetrievalResult) -> list[Retrieved]:
        """``fused`` with the provisions' headings ranked by closeness in meaning to the question (``vector``) and
        fused in (``with_headings``, weight ``heading_weight``).

        A question put as a situation in everyday words shares few words with its provision, and its meaning is
        diluted in a chunk's many sentences; a heading is short and names the provision's subject, so the provision
        whose heading is closest to the question rises among those both searches found. Only the candidates' own
        headings are ranked (the searches decide what is found; the headings only reorder it), each embedded once
        and then served from the embedder's cache. A hybrid search only, with both backends answering (a degraded search
        keeps its one list's order); when embedding the headings fails the order is left as it was."""
        start = time.perf_counter()
        texts = list(dict.fromkeys(t for h in fused[: 2 * self.cfg.candidates] if (t := heading_text(h.chunk))))
        if not texts:
            return fused
        try:
            vectors = await asyncio.wait_for(self.embedder.embed_documents(texts), self.cfg.timeout_s)
        except (GwetaError, TimeoutError) as exc:
            log.warning("heading ranking skipped: %r", exc)
            return fused
        order = heading_order(texts, vectors, vector)[: self.cfg.candidates]
        ranked = with_headings(fused, order, self.cfg.heading_weight, self.cfg.rrf_k)
        result.timings["headings"] = _ms(start)
        return ranked

    async def heading_index(self) -> HeadingIndex:
        """Every provision's heading and its vector (``HeadingIndex``), built at the first search that asks for it
        and kept with this corpus version: the vectors come from the embedder, which reads those ingestion kept
        (``api.tools.sentence_vectors``) and embeds only the headings it lacks."""
        async with self._heading_lock:
            if self._heading_index is None:
                texts, provisions = await asyncio.to_thread(provision_headings, self.corpus.chunks)
                vectors = await self.embedder.embed_documents(texts) if texts else np.zeros((0, 0))
                matrix = np.ascontiguousarray(vectors, dtype=np.float32)
                self._heading_index = HeadingIndex(texts, matrix, provisions)
            return self._heading_index

    async def _heading_search(self, vector: Vectors, filters: SearchFilters, result: RetrievalResult) -> list[Hit]:
        """The first chunks of the ``heading_source`` provisions whose headings, out of every provision's, are
        closest in meaning to the question (``vector``), as one more list for fusion.

        A situation told in everyday words often shares no word with its provision, and its meaning is diluted in a
        chunk's many sentences, so neither search finds the provision; its heading is short and names its subject.
        Unlike the heading ranking (which reorders what the searches found), this list brings in provisions of its
        own. Empty when the headings cannot be embedded (the searches' lists are fused as before)."""
        start = time.perf_counter()
        try:
            index = await self.heading_index()
        except GwetaError as exc:
            log.warning("heading search skipped: %r", exc)
            return []
        chunks = self.corpus.chunks

        def admits(chunk_id: str) -> bool:
            chunk = chunks.get(chunk_id)
            return chunk is not None and (not filters or filters.admits(chunk))

        hits = index.search(vector, self.cfg.heading_source, admits)
        result.stages["heading_search"] = [(h.chunk_id, h.score) for h in hits]
        result.timings["heading_search"] = _ms(start)
        return hits

    async def _rerank(self, query: str, fused: list[Retrieved], result: RetrievalResult) -> list[Retrieved]:
        if self.reranker is None:
            result.timings["rerank_passthrough"] = 0.0
            return fused
        start = time.perf_counter()
        head, tail = fused[: self.rerank_candidates], fused[self.rerank_candidates :]
        try:
            scores, cached = await self.reranker.score(query, [h.chunk for h in head])
        except GwetaError as exc:
            log.warning("rerank failed: %s", exc.message)
            result.warnings.append(("rerank_unavailable", "reranking failed; results are in fused order"))
            return fused
        finally:
            result.timings["rerank"] = _ms(start)
        result.cache_hits["rerank"] = cached
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        reranked = [Retrieved(head[i].chunk, scores[i], {**head[i].ranks, "rerank": n}) for n, i in
                    enumerate(order, start=1)]  # fmt: skip
        result.stages["reranked"] = [(h.chunk.chunk_id, h.score) for h in reranked]
        return reranked + tail

    async def retrieve(
        self,
        query: str,
        top_k: int | None = None,
        mode: Mode = "hybrid",
        rerank: bool = True,
        filters: SearchFilters = NO_FILTERS,
        expand: bool = False,
        learned: bool = True,
    ) -> RetrievalResult:
        """``learned``: order hybrid results by the learned fusion when the data dir has one (else RRF's order)."""
        start_all = time.perf_counter()
        group = (top_k or self.cfg.top_k, mode, rerank, filters, expand, learned, self.corpus.version)
        text = normalize_query(query)
        caching = self.cfg.cache_ttl_s > 0

        def from_cache(cached: RetrievalResult, similarity: float) -> RetrievalResult:
            timings = {**result.timings, "cache": _ms(start_all)}
            return RetrievalResult(
                hits=list(cached.hits), warnings=[], timings=timings, stages=cached.stages,
                cache_hits={"retrieval": 1}, expansion=cached.expansion,
                cache_similarity=similarity, lay_terms=cached.lay_terms,
            )  # fmt: skip

        result = RetrievalResult(hits=[])
        if caching and (cached := self.cache.get(group, text)) is not None:
            return from_cache(cached, 1.0)
        if not len(self.corpus):
            return result
        # A lay word the corpus itself uses in at least 1 chunk in 200 is already the statutes' word: not expanded.
        common = max(1, len(self.lexical) // 200)
        in_use = lambda word: self.lexical.document_frequency(word) >= common  # noqa: E731
        lay = self.thesaurus.expand(query, in_use) if self.thesaurus is not None else None
        dense_query = lay.dense_query if lay else query
        result.lay_terms = list(lay.added) if lay else []
        vector = await self._embed(dense_query, result) if mode in ("hybrid", "dense") else None
        if caching and vector is not None and (similar := self.cache.get_similar(group, vector)) is not None:
            return from_cache(*similar)
        fusion = self.fusion if learned and mode == "hybrid" else None  # orders the result if both lists answer
        scored: dict[str, float] | None = {} if fusion is not None else None
        rankings = await self._search(
            dense_query, mode, filters, result, expand, vector, lay.lexical_query if lay else None, scored
        )
        if not rankings:
            result.warnings.append(("retrieval_unavailable", "no search backend answered"))
            return result
        lists: dict[str, list[Hit]] = dict(rankings)
        if self.cfg.heading_source > 0 and vector is not None and mode == "hybrid":
            if found := await self._heading_search(vector, filters, result):
                lists["heading_search"] = found
        start = time.perf_counter()
        weights = {
            "dense": self.cfg.dense_weight, "bm25": self.cfg.bm25_weight,
            "heading_search": self.cfg.heading_source_weight,
        }  # fmt: skip
        fused = [
            Retrieved(self.corpus.chunks[cid], score, ranks)
            for cid, score, ranks in reciprocal_rank_fusion(lists, self.cfg.rrf_k, weights)
            if cid in self.corpus.chunks and filters.admits(self.corpus.chunks[cid])
        ]
        result.timings["fuse"] = _ms(start)
        if self.cfg.heading_weight > 0 and vector is not None and len(rankings) == 2 and fused:
            result.stages["before_headings"] = [(h.chunk.chunk_id, h.score) for h in fused]
            fused = await self._headings(fused, vector, result)
        result.stages["fused"] = [(h.chunk.chunk_id, h.score) for h in fused]
        if fusion is not None and fusion.applies(rankings):
            fused = self._learned(fusion, query, rankings, fused, result, scored)
        if rerank:
            fused = await self._rerank(query, fused, result)
        result.hits = with_provisions(fused, top_k or self.cfg.top_k, self.cfg.section_chunks)
        result.cache_hits.setdefault("retrieval", 0)
        if not result.warnings and caching:  # a degraded result is not worth keeping
            self.cache.put(group, text, vector, result)
        return result

    async def retrieve_many(
        self,
        query: str,
        expansions: Awaitable[Expansions] | None = None,
        filters: SearchFilters = NO_FILTERS,
        first: RetrievalResult | None = None,
    ) -> RetrievalResult:
        """Search ``query`` at once and, when ``expansions`` arrive (a model may still be writing them), each of
        them too; fuse the rankings, the question's own counting double against any one expansion. Hits are every
        fused chunk, best first (the question's own ``top_k`` when nothing expanded it); each backend's warning comes
        once; timings are the question's own search.

        Raises BackendError when no search backend answered; ``expansions`` is cancelled if the question's own
        search fails. ``first``: the question's own search, when it has already run.
        """
        pending = asyncio.ensure_future(expansions) if expansions is not None else None
        try:
            main = first if first is not None else await self.retrieve(query, filters=filters)
            _raise_if_unavailable(main)
        except BaseException:
            if pending is not None:
                pending.cancel()
            raise
        results = [main]
        if pending is not None:
            more = await pending
            results += await asyncio.gather(
                *(self.retrieve(q, filters=filters) for q in more.queries),
                *(self.retrieve(p, mode="dense", filters=filters) for p in more.passages),
            )
        warnings: list[tuple[WarningCode, str]] = []
        for result in results:
            _raise_if_unavailable(result)
            for code, message in result.warnings:
                if code not in {c for c, _ in warnings}:
                    warnings.append((code, message))
        if len(results) == 1:
            hits = list(main.hits)
        else:
            fused = fuse_searches(results, self.cfg.rrf_k)
            hits = [Retrieved(self.corpus.chunks[cid], score, ranks) for cid, score, ranks in fused]
        return RetrievalResult(
            hits=hits, warnings=warnings, timings=main.timings, stages=main.stages, cache_hits=main.cache_hits,
            expansion=main.expansion, cache_similarity=main.cache_similarity, expansions=len(results) - 1,
            lay_terms=main.lay_terms, own=main if len(results) > 1 else None,
        )  # fmt: skip


def _raise_if_unavailable(result: RetrievalResult) -> None:
    if any(code == "retrieval_unavailable" for code, _ in result.warnings):
        raise BackendError("search is unavailable right now; please try again shortly")
