"""What several nodes share: stage timing, warnings sent to the client, the update that closes a turn."""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.runtime import Runtime

from api.composer.citations import MARKER, CitationTracker
from api.composer.prompts import format_history
from api.schemas.events import Citation, WarningCode, WarningEvent
from api.tools.corpus import Corpus
from api.tools.vector_store import SearchFilters
from api.tools.versions import today

from ..choices import split_choices
from ..deps import QueryDeps
from ..state import QueryState, QueryUpdate, SentWarning, Turn

log = logging.getLogger(__name__)


MemoryKey = tuple[str, tuple[tuple[str, str], ...], str]


def memory_key(state: QueryState, deps: QueryDeps) -> MemoryKey:
    """QA memory answers again only for the same corpus, filters and tenant."""
    return deps.corpus.version, tuple(sorted(state.filters.items())), state.tenant


def ms(start: float) -> float:
    """Milliseconds since ``start`` (a ``time.perf_counter()`` reading)."""
    return round((time.perf_counter() - start) * 1000, 2)


def warn(runtime: Runtime[QueryDeps], code: WarningCode, message: str) -> SentWarning:
    """Send a warning event now and log it; the pair goes into the state's ``warnings``. The log names the code
    only: some messages quote the question, which is logged only as the privacy setting says."""
    log.warning("warning sent: %s", code)
    runtime.stream_writer(WarningEvent(code=code, message=message))
    return code, message


def scope(state: QueryState, deps: QueryDeps) -> SearchFilters:
    """The request's filters within what the caller's tenant may see, less the documents not in force on its
    ``as_of`` day; a follow-up answered within the Act(s) just discussed (``prefer``) searches only those, unless the
    request names a law itself."""
    filters = deps.corpus.search_filters(state.filters, state.tenant)
    if state.prefer and filters.doc_keys is None:
        filters = dataclasses.replace(filters, doc_keys=tuple(state.prefer))
    return filters


def as_of(state: QueryState) -> str:
    """The day the question asks about the law on: the request's ``as_of``, else today."""
    return state.filters.get("as_of") or today()


def history(state: QueryState) -> str:
    return format_history([(t["question"], t["answer"]) for t in state.turns])


def depends_on_session(state: QueryState) -> bool:
    """A question rewritten from earlier turns means something only in its session: not for QA memory."""
    return bool(state.turns) and state.asked != split_choices(state.question)[0]


def turn(state: QueryState, answer: str, citations: list[dict[str, Any]] | None = None) -> Turn:
    """The closed turn: what was asked and answered, and the Acts and headings its citations (by default the
    state's) point to."""
    cited = state.citations if citations is None else citations
    acts = list(dict.fromkeys(str(c["doc_key"]) for c in cited))
    headings = [h for h in dict.fromkeys(str(c.get("heading") or "") for c in cited) if h]
    return Turn(question=state.question, query=state.asked, answer=answer, acts=acts, headings=headings)


def finish(
    state: QueryState,
    tracker: CitationTracker,
    abstained: bool,
    elapsed: float = 0.0,
    record_turn: bool = True,
) -> QueryUpdate:
    """The answer streamed through ``tracker``, its citations, and (unless verification still follows) the turn."""
    tracker.flush()
    update = QueryUpdate(
        answer=tracker.text,
        citations=[c.model_dump() for c in tracker.used],
        abstained=abstained,
        timings={"synthesize": elapsed},
    )
    if record_turn:
        update["turns"] = [turn(state, tracker.text, update["citations"])]
    return update


async def provisions_for(
    runtime: Runtime[QueryDeps], citations: Iterable[Citation]
) -> tuple[dict[str, str], list[SentWarning]]:
    """The cited provisions' text, by section id, from their parent documents, read at once and for at most the
    object store's ``answer_wait_s``. A provision whose document is late (a slow or failing store) is checked
    against its indexed text instead, with a warning; one whose document is gone is left out (its quotes fail)."""
    deps = runtime.context
    cited = list(citations)
    reads = await deps.corpus.documents([c.doc_key for c in cited], deps.settings.object_store.answer_wait_s)
    provisions: dict[str, str] = {}
    for citation in cited:
        document = reads.found.get(citation.doc_key)
        section = document.section(citation.section_id) if document else None
        if section is not None:
            provisions[citation.section_id] = section.text
        elif citation.doc_key in reads.late and (text := deps.corpus.section_text(citation.section_id)):
            provisions[citation.section_id] = text
    if not reads.late:
        return provisions, []
    return provisions, [warn(runtime, "sources_slow", f"the document store did not answer in time for "
                             f"{len(reads.late)} cited document(s), so their quotes were checked against the indexed "
                             "text of the provisions")]  # fmt: skip


_REPEAL_NOTE = "(The {title} was repealed by {by}: this may no longer be the law.)"
# A title may hold its own brackets ("… Amendment (No. 20) Act, 2013"): a name is any run of text and bracketed parts.
_NAME = r"(?:[^()\n]|\([^()\n]*\))+?"
_A_REPEAL_NOTE = re.compile(rf" ?\(The {_NAME} was repealed by {_NAME}: this may no longer be the law\.\)")
_VERSION_NOTE = "(Quoted from the {title} as consolidated on {day}.)"
_A_VERSION_NOTE = re.compile(rf" ?\(Quoted from the {_NAME} as consolidated on \d{{4}}-\d{{2}}-\d{{2}}\.\)")


def without_repeal_notes(text: str) -> str:
    """``text`` without the notes ``noted_repeals`` and ``noted_consolidations`` added."""
    return _A_VERSION_NOTE.sub("", _A_REPEAL_NOTE.sub("", text))


def noted_repeals(text: str, citations: Iterable[Citation], corpus: Corpus, as_of: str | None = None) -> str:
    """A quote-only answer with a note after each paragraph that quotes a repealed law, saying what repealed it:
    the law's own words are quoted as they stand, and the reader is told they may no longer be the law. (The note
    rests on the repealing provision's own words, found at ingestion; the paragraph keeps its citation marker.)
    ``as_of``: the day the question asks about; a repeal that had not taken effect by then is not noted."""
    repealed = corpus.repealed_on(as_of)
    by_index = {c.index: c for c in citations}
    if not repealed.keys() & {c.doc_key for c in by_index.values()}:
        return text  # no quote of a repealed law: nothing to note
    titles = {c.doc_key: c.title for c in by_index.values()}
    paragraphs = []
    for paragraph in text.split("\n\n"):
        laws = dict.fromkeys(
            c.doc_key for m in MARKER.findall(paragraph) if (c := by_index.get(int(m))) and c.doc_key in repealed
        )
        notes = [_REPEAL_NOTE.format(title=titles[key], by=repealed[key]) for key in laws]
        paragraphs.append(" ".join([paragraph.rstrip(), *notes]) if notes else paragraph)
    return "\n\n".join(paragraphs)


def noted_consolidations(text: str, citations: Iterable[Citation], corpus: Corpus, shown: str = "") -> str:
    """A quote-only answer with a note after the paragraph that first quotes a law whose consolidation date is known,
    saying which consolidation it quotes ("as consolidated on 2017-09-07"): a consolidated text is the law as
    amended up to that day, and may not show later amendments. A law ``shown`` already names (an answer this one
    is added below) is not noted again. (The date is the corpus's own record of the text, read at ingestion.)"""
    by_index = {c.index: c for c in citations}
    noted = {note.strip() for note in _A_VERSION_NOTE.findall(shown)}
    paragraphs = []
    for paragraph in text.split("\n\n"):
        notes = []
        for marker in MARKER.findall(paragraph):
            citation = by_index.get(int(marker))
            day = corpus.versions.consolidated(citation.doc_key) if citation else ""
            if citation and day and (note := _VERSION_NOTE.format(title=citation.title, day=day)) not in noted:
                noted.add(note)
                notes.append(note)
        paragraphs.append(" ".join([paragraph.rstrip(), *notes]) if notes else paragraph)
    return "\n\n".join(paragraphs)


def noted(state: QueryState, text: str, citations: Sequence[Citation], corpus: Corpus) -> str:
    """A quote-only answer with its notes: the repeals in effect on the question's ``as_of`` day, and the
    consolidation each law is quoted from (once an answer, counting what was sent before it)."""
    text = noted_repeals(text, citations, corpus, state.filters.get("as_of"))
    return noted_consolidations(text, citations, corpus, state.answer)
