"""Build citations and stream answer text so each citation is sent when its marker first appears."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from api.schemas.documents import Chunk
from api.schemas.events import Citation, CitationEvent, TokenEvent

Emit = Callable[[BaseModel], None]
MARKER = re.compile(r"\[(\d{1,3})\]")


def provision_label(chunk: Chunk) -> str:
    if not chunk.section_number:
        return chunk.section_heading or "preamble"
    unit = "paragraph" if chunk.doc_type == "judgment" else "section"
    return f"{unit} {chunk.section_number}"


def make_citation(index: int, chunk: Chunk, quote: str, provision_id: str = "") -> Citation:
    return Citation(
        index=index,
        doc_key=chunk.doc_key,
        title=chunk.title,
        section_id=chunk.section_id,
        provision_id=provision_id or chunk.provision_id or chunk.section_id,
        section=provision_label(chunk),
        heading=chunk.section_heading,
        chunk_id=chunk.chunk_id,
        quote=quote,
    )


class CitationTracker:
    """Watches streamed text and emits each known citation once, right after its [n] marker is complete."""

    def __init__(self, available: Sequence[Citation], emit: Emit) -> None:
        self.available = {c.index: c for c in available}
        self.emit = emit
        self.text = ""
        self.used: list[Citation] = []

    def feed(self, piece: str) -> None:
        scan_from = max(0, len(self.text) - 4)  # a marker may straddle two pieces
        self.text += piece
        self.emit(TokenEvent(text=piece))
        for match in MARKER.finditer(self.text, scan_from):
            citation = self.available.get(int(match.group(1)))
            if citation is not None and citation not in self.used:
                self.used.append(citation)
                self.emit(CitationEvent(citation=citation))


def stream_words(text: str, tracker: CitationTracker, words_per_token: int = 3) -> None:
    """Send prepared text as token events a few words at a time."""
    pieces = re.findall(r"\S+\s*", text)
    for i in range(0, len(pieces), words_per_token):
        tracker.feed("".join(pieces[i : i + words_per_token]))
