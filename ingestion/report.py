"""What an ingest run reports: one line per document (or per file that yielded none), totals, and stage timings."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["ingested", "unchanged", "removed", "failed", "skipped"]
STATUSES: tuple[Status, ...] = ("ingested", "unchanged", "removed", "skipped", "failed")

# (stage, advance, total): stage is "files" or "chunks"; total is None when unchanged.
ProgressHook = Callable[[str, int, int | None], None]


def no_progress(stage: str, advance: int, total: int | None) -> None:
    """A progress hook that shows nothing."""


@dataclass(slots=True)
class DocumentReport:
    """One document's outcome; a file that yielded no document (unsupported, unreadable) gets one too."""

    source: str  # the resolved path of the file it was read from
    status: Status
    doc_key: str = ""
    title: str = ""
    pages: int = 0
    characters: int = 0
    provisions: int = 0
    chunks: int = 0
    seconds: float = 0.0
    message: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class IngestReport:
    documents: list[DocumentReport] = field(default_factory=list)
    corpus_version: str = ""
    total_chunks: int = 0
    repealed: int = 0
    """Documents another document of the corpus says are repealed (``api.tools.repeals``)."""
    definitions: int = 0
    """Terms the documents define (``api.tools.links``)."""
    references: int = 0
    """References between provisions resolved to a provision of the corpus (``api.tools.links``)."""
    sentences: int = 0
    """Quotable sentences and provision headings whose vectors the corpus keeps (``api.tools.sentence_vectors``)."""
    sentences_embedded: int = 0
    """Of those, the ones this run embedded (the others were kept from the last run)."""
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    reconciled: int = 0
    parsed_files: int = 0  # files read and parsed this run; the others' fingerprints were already in the manifest
    parse_workers: int = 0

    def count(self, status: Status) -> int:
        return sum(1 for d in self.documents if d.status == status)

    @property
    def failures(self) -> int:
        return self.count("failed")

    def failed_sources(self) -> set[str]:
        return {d.source for d in self.documents if d.status == "failed"}


class StageClock:
    """Seconds spent per stage of a run (parse, chunk, embed, …), summed over every time the stage ran."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + seconds, 3)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - start)
