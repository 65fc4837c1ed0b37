"""Replicas that agree: each one watches the object store's manifest and moves to a new corpus version by itself.

Every ``poll_s`` seconds the watcher reads ``indexes/manifest.json``; when its version differs from the one being
served, it loads the new corpus and BM25 index beside the old ones (queries keep being answered from the old ones
meanwhile, so there is never a moment with no index) and then hands both to ``swap`` in one step. Whatever is keyed
by the corpus version (the retrieval result cache, QA memory, parent documents) stops matching at that moment.

The ingestion writes the BM25 artifact and the manifest as two objects, so a replica may read one before the other;
a loaded lexical index that does not cover exactly the loaded corpus's chunks is served (it is no older than the
last one) but not taken as current, and the next poll loads both again.

With shared state in Redis the watcher also listens for the version an ingestion announces (``gweta ingest``
publishes it when it ends) and checks at once, so replicas switch within a second; polling stays as the fallback
for a missed announcement or a Redis outage.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from api.settings import BM25Settings, StateSettings
from api.tools.bm25 import LexicalIndex, load_lexical_index
from api.tools.corpus import Corpus, Manifest
from api.tools.object_store import ObjectStore
from api.tools.shared_state import RedisState, RedisVersionChannel

log = logging.getLogger(__name__)

Swap = Callable[[Corpus, LexicalIndex], Awaitable[None]]


class CorpusWatcher:
    """Polls the manifest and swaps in a new corpus and lexical index when another process has ingested."""

    def __init__(
        self, store: ObjectStore, bm25: BM25Settings, served: str, swap: Swap, poll_s: float,
        state: StateSettings | None = None,
    ) -> None:  # fmt: skip
        self.store = store
        self.bm25 = bm25
        self.served = served
        """The corpus version fully loaded (corpus and a lexical index that matches it)."""
        self.swap = swap
        self.poll_s = poll_s
        self.reloads = 0
        self.state = state if state is not None and state.backend == "redis" else None
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._checking = asyncio.Lock()

    async def check(self) -> bool:
        """Load and swap in the stored corpus if its version is not the one served; True when it swapped."""
        async with self._checking:  # a poll and an announcement may come together: load once
            return await self._check()

    async def _check(self) -> bool:
        manifest = await Manifest.load(self.store)
        if manifest.version == self.served:
            return False
        corpus = await Corpus.load(self.store)
        lexical = await load_lexical_index(self.store, self.bm25)
        await self.swap(corpus, lexical)
        self.reloads += 1
        complete = corpus.chunks.holds_exactly(lexical.chunk_ids)
        if complete:
            self.served = corpus.version
        log.info(
            "corpus %s loaded from the object store: %d documents, %d chunks%s", corpus.version,
            len(corpus.manifest.documents), len(corpus), "" if complete else " (BM25 behind; reloading next poll)",
        )  # fmt: skip
        return True

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                await self.check()
            except Exception:  # a store outage must not end the watch: the replica keeps serving what it has
                log.exception("could not check the object store for a new corpus version")

    async def _listen(self, state: StateSettings) -> None:
        """Check whenever an ingestion announces a version; after a Redis failure, subscribe again."""
        redis = RedisState(state)
        try:
            while True:
                try:
                    async for version in RedisVersionChannel(redis).listen():
                        if version != self.served:
                            await self.check()
                except Exception:  # Redis down, or the store failing this once: polling covers it meanwhile
                    log.warning("corpus announcements: listening again in 1 s", exc_info=True)
                    await asyncio.sleep(1.0)
        finally:
            await redis.close()

    def start(self) -> None:
        if self.poll_s > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(), name="corpus-watch")
        if self.state is not None and self._listener is None:
            self._listener = asyncio.create_task(self._listen(self.state), name="corpus-announcements")

    async def stop(self) -> None:
        for task in (self._task, self._listener):
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        self._task = self._listener = None
