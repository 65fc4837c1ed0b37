"""Small-to-big: retrieval finds chunks; the model reads provisions.

The bundler groups the top hits by the provision (section) they come from, in rank order, and fetches each parent
document from the object store (through the corpus's one-hour fetch cache). A provision that fits its share of the
budget goes in whole; a longer one contributes its hit chunks widened by their neighbours, overlapping and adjacent
spans merged, cut only where chunks are cut (so provision boundaries hold). Pieces are added best first until the
token budget is spent; each carries the citation label the prompt shows for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from api.schemas.documents import Chunk, Section
from api.tools.corpus import Corpus
from api.tools.retrieval import Retrieved


@dataclass(frozen=True, slots=True)
class ContextPiece:
    index: int
    """The [n] the prompt labels it with."""
    chunk: Chunk
    """The best-ranked hit inside it: names the document, provision and citation."""
    text: str
    """Verbatim text of the provision, or of the merged spans taken from it."""
    chunk_ids: tuple[str, ...]
    whole_provision: bool
    tokens: int
    score: float


@dataclass(slots=True)
class ContextBundle:
    pieces: list[ContextPiece] = field(default_factory=list)
    tokens: int = 0
    budget: int = 0
    left_out: list[str] = field(default_factory=list)
    """Chunk ids of hits whose provision did not fit the budget."""
    fetches: int = 0
    """Parent documents read from the object store (the rest came from the fetch cache)."""
    ms: float = 0.0


def merge_spans(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of [start, end) spans: overlapping or touching spans become one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class ContextBundler:
    def __init__(
        self,
        corpus: Corpus,
        count_tokens: Callable[[str], int],
        budget_tokens: int = 1500,
        provision_tokens: int = 600,
        wait_s: float = 2.0,
    ) -> None:
        self.corpus = corpus
        self.wait_s = wait_s
        self.count_tokens = count_tokens
        self.budget_tokens = budget_tokens
        self.provision_tokens = provision_tokens

    def _span(self, section_text: str, chunk: Chunk) -> tuple[int, int] | None:
        at = section_text.find(chunk.text)
        return None if at < 0 else (at, at + len(chunk.text))

    def _widened(self, section_text: str, hits: list[Retrieved]) -> tuple[str, tuple[str, ...]]:
        """The hit chunks plus neighbours, merged, within the per-provision share of the budget."""
        chunks = self.corpus.chunks
        taken = {h.chunk.chunk_id: h.chunk for h in hits}
        for hit in hits:
            for ordinal in (hit.chunk.ordinal - 1, hit.chunk.ordinal + 1):
                neighbour = chunks.get(f"{hit.chunk.section_id}/c{ordinal}")
                if neighbour is None or neighbour.chunk_id in taken:
                    continue
                trial = {**taken, neighbour.chunk_id: neighbour}
                if sum(self.count_tokens(c.text) for c in trial.values()) <= self.provision_tokens:
                    taken = trial
        spans = [s for c in taken.values() if (s := self._span(section_text, c)) is not None]
        text = "\n…\n".join(section_text[a:b] for a, b in merge_spans(spans))
        return text, tuple(sorted(taken, key=lambda cid: taken[cid].ordinal))

    async def bundle(self, hits: Sequence[Retrieved]) -> ContextBundle:
        start = time.perf_counter()
        groups: dict[str, list[Retrieved]] = {}
        for hit in hits:
            groups.setdefault(hit.chunk.section_id, []).append(hit)
        # Counted per call (the corpus is shared by every request in flight); a parent that is late or gone leaves
        # its chunks to say what they say.
        reads = await self.corpus.documents([g[0].chunk.doc_key for g in groups.values()], self.wait_s)
        parents: dict[str, Section | None] = {}
        for section_id, group in groups.items():
            document = reads.found.get(group[0].chunk.doc_key)
            parents[section_id] = document.section(section_id) if document else None
        # Counting tokens of whole provisions is model-tokenizer work: off the event loop.
        result = await asyncio.to_thread(self._assemble, groups, parents)
        result.fetches = reads.fetched
        result.ms = round((time.perf_counter() - start) * 1000, 2)
        return result

    def _assemble(self, groups: dict[str, list[Retrieved]], parents: dict[str, Section | None]) -> ContextBundle:
        result = ContextBundle(budget=self.budget_tokens)
        for section_id, group in groups.items():
            best, section = group[0], parents[section_id]
            if section is None:  # the parent is gone: the chunks still say what they say
                text, ids, whole = (
                    "\n…\n".join(h.chunk.text for h in group),
                    tuple(h.chunk.chunk_id for h in group),
                    False,
                )
            else:
                whole = self.count_tokens(section.text) <= self.provision_tokens
                if whole:
                    text, ids = section.text, tuple(c for c in self._section_chunk_ids(section_id))
                else:
                    text, ids = self._widened(section.text, group)
            tokens = self.count_tokens(text)
            if result.tokens + tokens > self.budget_tokens:
                result.left_out += [h.chunk.chunk_id for h in group]
                continue
            result.pieces.append(ContextPiece(len(result.pieces) + 1, best.chunk, text, ids, whole, tokens, best.score))
            result.tokens += tokens
        return result

    def _section_chunk_ids(self, section_id: str) -> list[str]:
        ids, ordinal = [], 0
        while (cid := f"{section_id}/c{ordinal}") in self.corpus.chunks:
            ids.append(cid)
            ordinal += 1
        return ids
