"""Answer nodes: reuse a remembered answer, write one from the evidence (the model under a stall watchdog and the
question's deadline, else verbatim quotes), or abstain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Sequence
from functools import partial

from langgraph.runtime import Runtime

from api.composer.answerability import missing_laws, topic_words
from api.composer.citations import MARKER, CitationTracker, TextSink, stream_words
from api.composer.definitions import (
    Needed,
    asked_term,
    defining_chunk,
    definitions_of,
    definitions_text,
    meaning_of,
    needed_definitions,
)
from api.composer.extractive import Part, abstention, extractive_answer, extractive_answer_in_parts
from api.composer.judge.gate import SentenceGate, gate_model_answer, verify_answer
from api.composer.judge.streaming import GatedTracker
from api.composer.llm import is_abstention, source_citations, stream_llm_answer
from api.composer.references import needed_references, needed_referring, references_text
from api.composer.related import related_quotes, related_text
from api.composer.structured import LLMCall, LLMOutcome
from api.errors import BackendError, UpstreamLLMError
from api.schemas.events import Citation, WarningCode
from api.text.instruments import instruments_named, names
from api.tools.links import FOLLOWED
from api.tools.retrieval import Retrieved, with_provisions

from ..deps import QueryDeps
from ..evidence import searched_note, suggestions
from ..state import Cut, QueryState, QueryUpdate, SentWarning
from .common import (
    as_of,
    depends_on_session,
    finish,
    history,
    memory_key,
    ms,
    noted,
    provisions_for,
    scope,
    warn,
)

log = logging.getLogger(__name__)
POLL_S = 0.1


async def recall(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Serve a verified answer given before to a near-identical question (same corpus, filters and tenant)."""
    start = time.perf_counter()
    deps = runtime.context
    if depends_on_session(state):
        return {}
    vector = await deps.retriever.embedder.embed_query(state.asked)
    found = await deps.memory.arecall(memory_key(state, deps), vector)
    if found is None:
        return {"timings": {"recall": ms(start)}}
    tracker = CitationTracker([Citation.model_validate(c) for c in found.citations], runtime.stream_writer)
    stream_words(found.answer, tracker)
    warning = warn(runtime, "cached_answer", f"answered from memory: a verified answer to {found.question!r} "
                   f"(similarity {found.similarity:.2f})")  # fmt: skip
    update = finish(state, tracker, abstained=False)
    update |= QueryUpdate(warnings=[warning], cached=True, verified=True, timings={"recall": ms(start)})
    return update


def evidence_hits(state: QueryState, deps: QueryDeps) -> list[Retrieved]:
    """The hits in the order synthesis reads them: what the corrective or refinement step found first."""
    first = [h for cid in state.focus for h in state.hits if h["chunk_id"] == cid]
    rest = [h for h in state.hits if h["chunk_id"] not in set(state.focus)]
    ordered = list({h["chunk_id"]: h for h in [*first, *rest]}.values())
    return [Retrieved(deps.corpus.chunks[h["chunk_id"]], h["score"], h["ranks"]) for h in ordered]


def evidence_of(hits: Sequence[Retrieved], deps: QueryDeps) -> list[Retrieved]:
    """A search's evidence: its first ``top_k`` hits and the best chunk of further provisions (``with_provisions``)."""
    return with_provisions(hits, deps.settings.retrieval.top_k, deps.settings.retrieval.section_chunks)


async def one_version(state: QueryState, deps: QueryDeps, hits: Sequence[Retrieved]) -> list[Retrieved]:
    """``hits`` with one version of each law: where they hold passages of two versions of one law (one repeals the
    other, or the same title with another year), only the passages of the version the answer already cites, else
    the one the question names by its title, else, of the versions the quote-only answer would quote from these hits
    (all of them when it quotes none), the one in force on the question's day (``api.tools.versions``). So an answer
    never quotes two versions of one law, and quotes a version not in force (with a warning) only when that is
    where the words that answer are."""
    versions, day = deps.corpus.versions, as_of(state)
    keys = [h.chunk.doc_key for h in hits]
    cited = [str(c["doc_key"]) for c in state.citations]
    if not versions.choose(keys, day, state.asked, cited):
        return list(hits)  # no two versions of one law among them: nothing to choose
    _, quotes = await extractive_answer(deps.retriever.embedder, state.asked, list(hits), 1, state.lay_terms)
    chosen = versions.choose(keys, day, state.asked, cited, quoted={c.doc_key for c in quotes})
    return [h for h in hits if chosen.get(h.chunk.doc_key, h.chunk.doc_key) == h.chunk.doc_key]


async def quote_only_evidence(state: QueryState, deps: QueryDeps) -> list[Retrieved] | None:
    """What the quote-only path would quote from, for a model answer that falls short: None when that path would
    abstain. It judges, without the model's grade, each part of the question as that path splits and searches it:
    the parts the model path searched as they are were judged then (the hits found are quoted from); the others
    (the model planned its own steps) are searched and judged now, and an answering part's own hits are quoted."""
    if deps.judge is None or state.answerable_without_grade:
        return await one_version(state, deps, evidence_hits(state, deps))
    filters = scope(state, deps)
    found: dict[str, Retrieved] = {}
    judged = {p.casefold() for p in state.judged_parts}
    for part in [p for p in state.parts or [state.asked] if p.casefold() not in judged]:
        try:
            result = await deps.retriever.retrieve_many(part, filters=filters)
        except BackendError:  # no search answered: nothing shows that the quotes would answer
            log.warning("the quote-only path's search failed; the fallback abstains")
            return None
        if deps.judge(part, result, None, state.tenant).without_grade:
            found |= {h.chunk.chunk_id: h for h in evidence_of(result.hits, deps)}
    return await one_version(state, deps, list(found.values())) or None


async def asked_definition(state: QueryState, deps: QueryDeps, hits: list[Retrieved]) -> Needed | None:
    """For a question that asks what a term means, the term's definition: from the first document of the evidence
    that defines it, else from a readable document the question names; None when the question asks something else
    or no such document defines the term."""
    term = asked_term(state.asked)
    if not term or not deps.settings.retrieval.add_definitions:
        return None
    keys = list(dict.fromkeys(h.chunk.doc_key for h in hits))
    readable = {"", state.tenant}
    named = [words for _, words in instruments_named(state.asked)]
    for key, entry in deps.corpus.manifest.documents.items():
        chunk = deps.corpus.chunks.get(entry.chunk_ids[0]) if entry.chunk_ids else None
        if chunk is not None and chunk.tenant in readable and any(names(entry.title, w) for w in named):
            keys.append(key)
    definitions = definitions_of(term, deps.corpus.links, list(dict.fromkeys(keys)))
    if not definitions:
        return None
    reads = await deps.corpus.documents([d.doc_key for d in definitions], deps.settings.object_store.answer_wait_s)
    for definition in definitions:
        chunk = defining_chunk(definition, deps.corpus.chunks, reads.found.get(definition.doc_key))
        if chunk is not None and chunk.tenant in readable:
            return Needed(definition, chunk)
    return None


async def definitions_for(
    state: QueryState, deps: QueryDeps, cited: list[Citation], start: int, asked: Needed | None = None
) -> tuple[str, list[Citation]]:
    """The paragraphs quoting the definitions an answer citing ``cited`` depends on (``needed_definitions``), markers
    from ``start``, and their citations; ``asked`` (the definition the question asks for) is not repeated."""
    keys = [c.doc_key for c in cited if c.kind == "provision"]
    most = deps.settings.retrieval.add_definitions - (asked is not None)
    if most <= 0 or not keys or not deps.corpus.links.definitions.keys() & set(keys):
        return "", []
    reads = await deps.corpus.documents(keys, deps.settings.object_store.answer_wait_s)
    needed = needed_definitions(state.asked, cited, deps.corpus.links, deps.corpus.chunks, reads.found, state.tenant,
                                limit=most + 1)  # fmt: skip
    return definitions_text([n for n in needed if asked is None or n.definition != asked.definition][:most], start)


async def references_for(
    state: QueryState, deps: QueryDeps, cited: list[Citation], start: int
) -> tuple[str, list[Citation]]:
    """The paragraphs quoting the provisions an answer's cited words refer to (``needed_references``, at most
    ``retrieval.add_references``), then those that refer to a cited provision as what they depend on
    (``needed_referring``, at most ``retrieval.add_referring``), markers from ``start``, and their citations."""
    most, back = deps.settings.retrieval.add_references, deps.settings.retrieval.add_referring
    provisions = [c for c in cited if c.kind == "provision"]
    links = deps.corpus.links
    if (most <= 0 and back <= 0) or not provisions or not links.references:
        return "", []
    keys = [c.doc_key for c in provisions]
    readable = ("", state.tenant)
    heads = [deps.corpus.chunks.get(r.target.split("(")[0] + "/c0") for c in provisions
             for r in links.refers_to(c.section_id)] if most > 0 else []  # fmt: skip
    targets = [h.doc_key for h in heads if h is not None and h.tenant in readable]
    evidence = list(dict.fromkeys(h["chunk_id"].rsplit("/c", 1)[0] for h in state.hits))
    held = set(evidence)
    sources = [r.source.split("#")[0] for c in provisions for r in links.referred_by(c.section_id)
               if back > 0 and r.relation in FOLLOWED and r.source.split("(")[0] in held]  # fmt: skip
    if not targets and not (back > 0 and any(links.referred_by(c.section_id) for c in provisions)):
        return "", []
    reads = await deps.corpus.documents(list(dict.fromkeys([*keys, *targets, *sources])),
                                        deps.settings.object_store.answer_wait_s)  # fmt: skip
    needed = needed_references(state.asked, cited, links, deps.corpus.chunks, reads.found, state.tenant,
                               limit=most + 1) if most > 0 else []  # fmt: skip
    referring = needed_referring(state.asked, cited, links, deps.corpus.chunks, reads.found, state.tenant, evidence,
                                 limit=back + 1) if back > 0 else []  # fmt: skip
    # Each paragraph passes the sentence gate the answer's own quotes pass before it is added: one the gate would
    # reject is left out here rather than cost the answer its verified mark.
    topic = topic_words(state.asked, deps.retriever.lexical, deps.retriever.thesaurus)
    texts: list[str] = []
    kept: list[Citation] = []
    for items, limit in ((needed, most), (referring, back)):
        added = 0
        for item in items:
            if added == limit:
                break
            if item.refers and any(c.section_id == item.chunk.section_id for c in kept):
                continue  # a provision both referred to and referring is quoted once
            document = reads.found.get(item.chunk.doc_key)
            section = document.section(item.chunk.section_id) if document is not None else None
            texts_by_section = {item.chunk.section_id: section.text if section is not None else ""}
            text, referred = references_text([item], start + len(kept), texts_by_section)
            offered = {c.index: c for c in referred}
            check = partial(gate_model_answer, text, offered, texts_by_section, topic, deps.claims, {})
            gate = await asyncio.to_thread(check) if deps.claims.blocking else check()
            if gate.passed and not gate.failed:
                texts.append(text)
                kept += referred
                added += 1
    return "\n\n".join(texts), kept


async def context_for(
    state: QueryState, deps: QueryDeps, cited: list[Citation], start: int, asked: Needed | None = None
) -> tuple[str, list[Citation]]:
    """What an answer citing ``cited`` is read with, below it: the definitions its cited words depend on
    (``definitions_for``), then the provisions they refer to (``references_for``), markers from ``start``."""
    defined_text, defined = await definitions_for(state, deps, cited, start, asked)
    after = max((c.index for c in defined), default=start - 1) + 1
    # The definitions just added count as quoted: a provision is not quoted again as what refers to a cited one.
    referred_text, referred = await references_for(state, deps, [*cited, *defined], after)
    return "\n\n".join(p for p in (defined_text, referred_text) if p), defined + referred


async def quoted(state: QueryState, deps: QueryDeps, hits: list[Retrieved], start: int) -> tuple[str, list[Citation]]:
    """The quote-only answer from ``hits`` (numbered from ``start``), with the definitions it depends on and the
    provisions its quotes refer to below it (``context_for``); a question that asks what a term means is answered
    from its definition first."""
    asked = await asked_definition(state, deps, hits)
    lead, lead_cited = definitions_text([asked], start) if asked is not None else ("", [])
    text, cited = await _quoted(state, deps, hits, start + len(lead_cited))
    if asked is not None:
        # A quote of the very definition the answer leads with is not repeated below it.
        meaning = meaning_of(asked.definition)
        repeated = {f"[{c.index}]" for c in cited if meaning in c.quote or c.quote in asked.definition.text}
        text = "\n\n".join(p for p in text.split("\n\n") if p and not any(m in p for m in repeated))
        text, cited = renumbered(text, [c for c in cited if f"[{c.index}]" not in repeated], start + 1)
    cited = lead_cited + cited
    after = max((c.index for c in cited), default=start - 1) + 1
    more, more_cited = await context_for(state, deps, cited, after, asked)
    text = "\n\n".join(p for p in (lead, text, more) if p)
    return text, cited + more_cited


def renumbered(text: str, cited: list[Citation], start: int) -> tuple[str, list[Citation]]:
    """``text`` and ``cited`` with the markers numbered from ``start`` in order, none skipped."""
    new = {c.index: start + i for i, c in enumerate(cited)}
    text = MARKER.sub(lambda m: f"[{new.get(int(m.group(1)), int(m.group(1)))}]", text)
    return text, [c.model_copy(update={"index": new[c.index]}) for c in cited]


def sections_of(hits: Sequence[Retrieved], deps: QueryDeps) -> dict[str, str]:
    """The hits' sections' indexed text, by section id: where a quoted list item's opening may be read."""
    return {section: deps.corpus.section_text(section) for section in {h.chunk.section_id for h in hits}}


async def _quoted(state: QueryState, deps: QueryDeps, hits: list[Retrieved], start: int) -> tuple[str, list[Citation]]:
    """The quote-only answer from ``hits`` (numbered from ``start``). A question asked in parts also quotes what
    each part's own search adds (``extractive_answer_in_parts``): the research step's search, which the retrieval
    cache serves again. A failed search leaves the answer from ``hits`` alone."""
    embedder = deps.retriever.embedder
    if len(state.parts) > 1 and hits:
        filters = scope(state, deps)
        try:
            found = await asyncio.gather(*(deps.retriever.retrieve_many(part, filters=filters) for part in state.parts))
        except BackendError:
            log.warning("a part's search failed; the quotes are chosen from all the evidence")
        else:
            among = [h for result in found for h in evidence_of(result.hits, deps)]
            evidence = {h.chunk.chunk_id: h for h in [*hits, *among]}
            kept = {h.chunk.chunk_id for h in await one_version(state, deps, list(evidence.values()))}
            parts = [Part([h for h in evidence_of(result.hits, deps) if h.chunk.chunk_id in kept], result.lay_terms)
                     for result in found]  # fmt: skip
            hits = [h for h in hits if h.chunk.chunk_id in kept]
            text, cited = await extractive_answer_in_parts(embedder, state.asked, hits, parts, start, state.lay_terms,
                                                           sections_of([*hits, *among], deps))  # fmt: skip
            return noted(state, text, cited, deps.corpus), cited
    text, cited = await extractive_answer(embedder, state.asked, hits, start, state.lay_terms, sections_of(hits, deps))
    return noted(state, text, cited, deps.corpus), cited


async def watched(
    work: Awaitable[dict[str, int]], tracker: TextSink, stall_s: float, deadline: float
) -> tuple[Cut, dict[str, int]]:
    """Run the model's answer; stop it when no token has come for ``stall_s`` or at ``deadline`` (a
    ``time.monotonic()`` reading, 0 for none). Returns why it was stopped ("" when it finished) and the usage it
    reported; its errors propagate."""
    task = asyncio.ensure_future(work)
    seen, last = -1, time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if len(tracker.text) != seen or tracker.judging:  # a sentence being checked is not a stalled model
                seen, last = len(tracker.text), now
            cut: Cut = "deadline" if deadline and now >= deadline else "stalled" if now - last >= stall_s else ""
            if cut:
                return cut, {}
            done, _ = await asyncio.wait({task}, timeout=POLL_S)
            if done:
                return "", task.result()
    finally:
        if not task.done():
            task.cancel()  # closes the model's stream: the model stops
            with contextlib.suppress(asyncio.CancelledError, UpstreamLLMError):
                await task


def finish_by(state: QueryState, deps: QueryDeps) -> float:
    """When the model must stop for the question to end on time: its deadline less a margin to verify and finish."""
    if not state.deadline:
        return 0.0
    return state.deadline - min(3.0, 0.25 * deps.settings.question_deadline_s)


def part_asked(state: QueryState) -> str:
    """What this synthesis answers: the question; or, for a refinement step after an answer was sent, the part of
    the question the answer left uncovered (what the step searched), which is added below what was sent."""
    if state.answer and state.steps and state.steps[-1]["kind"] == "refinement":
        return state.steps[-1]["query"]
    return state.asked


def next_index(state: QueryState) -> int:
    """The first citation marker free after those already sent."""
    return max((int(c["index"]) for c in state.citations), default=0) + 1


async def synthesize(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Answer from the hits: with the LLM when one is configured and time and budget allow, else (or when it fails)
    with direct quotes. The model's sentences are sent as each passes the gate (``GatedTracker``); quotes are sent by
    ``verify`` once checked. After an answer was sent (a refinement step), what this writes is added below it."""
    start = time.perf_counter()
    deps = runtime.context
    hits = await one_version(state, deps, evidence_hits(state, deps))
    asked = part_asked(state)
    first = next_index(state)
    if deps.chat is not None and asked == state.asked and (defined := await asked_definition(state, deps, hits)):
        # A question that asks what a term means is answered from its definition first: the model reads it first.
        top = hits[0].score if hits else 1.0
        hits = [Retrieved(defined.chunk, top, {}), *(h for h in hits if h.chunk.chunk_id != defined.chunk.chunk_id)]
    warnings: list[SentWarning] = []
    shown = state.answer
    update = QueryUpdate(shown_at=len(shown), draft="", draft_citations=[])
    stages: dict[str, float] = {}
    calls: list[LLMCall] = []
    in_time = not state.deadline or time.monotonic() < finish_by(state, deps)
    if deps.chat is not None and in_time and deps.llm_calls_left(state.complexity, state.llm) >= 1:
        bundle = await deps.bundler.bundle(hits)
        offered = {c.index + first - 1: c.model_copy(update={"index": c.index + first - 1})
                   for c in source_citations(bundle)}  # fmt: skip
        stages["bundle"] = bundle.ms
        provisions, slow = await provisions_for(runtime, offered.values())
        warnings += slow
        topic = topic_words(asked, deps.retriever.lexical, deps.retriever.thesaurus)
        tracker = GatedTracker(
            offered,
            runtime.stream_writer,
            SentenceGate(offered, provisions, topic, deps.claims, deps.corpus.repealed_on(state.filters.get("as_of"))),
        )
        tracker.after(shown)
        call_start = time.perf_counter()
        outcome: LLMOutcome = "ok"
        usage: dict[str, int] = {}
        cut: Cut = ""
        work = stream_llm_answer(deps.chat, deps.skills["synthesize"], asked, history(state), tracker)
        try:
            cut, usage = await watched(work, tracker, deps.settings.llm.stall_timeout_s, finish_by(state, deps))
        except UpstreamLLMError as exc:
            outcome = "error"
            await tracker.close(finished=False)  # the model's verified sentences go out before the warning about it
            warnings.append(warn(runtime, "llm_unavailable", f"{exc.message}; answering with direct quotes instead"))
        else:
            await tracker.close(finished=not cut)
        if cut:
            outcome = "timeout"
            why = "no word came from the language model" if cut == "stalled" else "the question's time ran out"
            code: WarningCode = "llm_stalled" if cut == "stalled" else "deadline_reached"
            warnings.append(warn(runtime, code, f"{why}, so it was stopped; only what could be verified is kept"))
        calls.append(LLMCall(skill="synthesize", ms=ms(call_start), input_tokens=usage.get("input_tokens", 0),
                             output_tokens=usage.get("output_tokens", 0), attempts=1, outcome=outcome))  # fmt: skip
        if outcome == "ok" and not MARKER.search(tracker.text) and not is_abstention(tracker.text):
            warnings.append(warn(runtime, "uncited_answer", "the model's answer cites no source; the gate looks for "
                                 "the provisions that support it"))  # fmt: skip
        shown += tracker.shown
        update |= QueryUpdate(answer=shown, citations=[*state.citations, *(c.model_dump() for c in tracker.used)])
        if outcome != "error":
            update |= QueryUpdate(
                draft=tracker.text, abstained=is_abstention(tracker.text) and not cut, warnings=warnings, llm=calls,
                composer="model", offered=[c.model_dump() for c in offered.values()], cut=cut,
                timings={**stages, "synthesize": ms(start)},
            )  # fmt: skip
            return update
        first = max(first, *(c.index + 1 for c in tracker.used)) if tracker.used else first
    if deps.chat is not None:  # the model failed or had no time or calls left: the quote-only path's answer
        hits = await quote_only_evidence(state, deps) or []
    if asked == state.asked:
        text, cited = await quoted(state, deps, hits, first)
    else:
        text, cited = await extractive_answer(deps.retriever.embedder, asked, hits, first, state.lay_terms,
                                              sections_of(hits, deps))  # fmt: skip
        text = noted(state, text, cited, deps.corpus)
    update |= QueryUpdate(
        draft=text or ("" if shown else abstention_text(state, deps)), draft_citations=[c.model_dump() for c in cited],
        abstained=not text and not shown, warnings=warnings, llm=calls, composer="extractive", offered=[],
        timings={**stages, "synthesize": ms(start)},
    )  # fmt: skip
    return update


def abstention_text(state: QueryState, deps: QueryDeps) -> str:
    """Say that nothing found answers the question, what was searched, and what to ask instead (``suggestions``)."""
    found = [deps.corpus.chunks[h["chunk_id"]] for h in state.hits if h["chunk_id"] in deps.corpus.chunks]
    absent = missing_laws(state.asked, deps.corpus.titles_for(state.tenant))
    parts = [abstention(state.asked, state.searched),
             f"The documents I hold include no law named {', '.join(f'“{n}”' for n in absent)}." if absent else "",
             searched_note([s["query"] for s in state.steps]), suggestions(state.asked, found)]  # fmt: skip
    return " ".join(p for p in parts if p)


async def abstain(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Say that the corpus holds nothing that answers the question: with the closest provisions, quoted and cited
    (``related``), when the evidence was judged close enough to show; else what was searched and what to ask instead
    (``not_found``)."""
    deps = runtime.context
    tracker = CitationTracker([], runtime.stream_writer)
    evidence = await one_version(state, deps, evidence_hits(state, deps))
    most = deps.settings.retrieval.related_provisions
    among = deps.settings.retrieval.related_among
    quotes = await related_quotes(deps.retriever.embedder, state.asked, evidence, state.lay_terms, most, among) \
        if state.related and state.hits else []  # fmt: skip
    text, cited = related_text(quotes)
    if cited:
        # The closest provisions are read with the definitions of the terms they use and the provisions they refer
        # to, as an answer's are.
        defined_text, defined = await context_for(state, deps, cited, len(cited) + 1)
        provisions = (await provisions_for(runtime, defined))[0] if defined else {}
        if defined and verify_answer(defined_text, {c.index: c for c in defined}, provisions).passed:
            body, closing = text.rsplit("\n\n", 1)
            text, cited = "\n\n".join((body, defined_text, closing)), cited + defined
    tracker.available.update({c.index: c for c in cited})
    stream_words(text or abstention_text(state, deps), tracker)
    update = finish(state, tracker, abstained=True)
    update["composer"] = "extractive"
    update["outcome"] = "related" if tracker.used else "not_found"
    return update
