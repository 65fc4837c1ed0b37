"""Check nodes: verify the answer (sentence by sentence for a model's), re-evaluate that it covers every part of the
question, keep it, and answer a multiple-choice question from the researched evidence."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from langgraph.runtime import Runtime

from api.composer.answerability import topic_words
from api.composer.citations import CitationTracker, stream_words
from api.composer.llm import render_sources
from api.composer.structured import LLMCall
from api.composer.verification import (
    ExtractiveAnswer,
    FinalAnswer,
    GateResult,
    choose_final,
    corrective_query,
    gate_model_answer,
    verify_answer,
)
from api.schemas.events import Citation, MultipleChoice, WarningCode

from ..choices import by_evidence, choice_text, from_model, render_choices
from ..deps import QueryDeps
from ..evidence import complete_sentences, uncovered_parts
from ..state import HeldAnswer, QueryState, QueryUpdate, SentWarning
from .answer import abstention_text, finish_by, quote_only_evidence, quoted
from .common import depends_on_session, memory_key, ms, turn, warn

log = logging.getLogger(__name__)
WARNING_CODES: dict[str, WarningCode] = {
    "model_abstained": "model_abstained",
    "statements_removed": "statements_removed",
    "model_answer_unverified": "model_answer_unverified",
}


async def _provisions(
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


def _time_left(state: QueryState, deps: QueryDeps) -> bool:
    return not state.deadline or time.monotonic() < finish_by(state, deps)


async def verify(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Check the answer against the provisions it cites; a failure earns one corrective step when the budget and the
    deadline allow; a model's answer that still fails gives way to the verified extractive answer."""
    start = time.perf_counter()
    if state.abstained and state.composer != "model":
        return {"timings": {"verify": 0.0}}  # an abstention states nothing to check
    if state.composer == "model":
        return await _verify_model(state, runtime, start)
    deps = runtime.context
    offered = {c["index"]: Citation.model_validate(c) for c in state.citations}
    provisions, warnings = await _provisions(runtime, offered.values())
    result = verify_answer(state.answer, offered, provisions, len(set(state.relevant_sections)))
    if result.quotes_failed:
        warnings.append(warn(runtime, "unverified_quote", f"{len(result.quotes_failed)} quoted passage(s) do not "
                             "appear in the cited provisions; treat them as unverified"))  # fmt: skip
    if result.uncited_paragraphs or result.unknown_markers:
        warnings.append(warn(runtime, "unsupported_statement", "part of the answer cites no provision it was given; "
                             "treat it as unverified"))  # fmt: skip
    update = QueryUpdate(
        verification=result.summary(), verified=result.passed, warnings=warnings, timings={"verify": ms(start)}
    )
    if not result.passed and _may_correct(state, deps):
        suggestion = result.quotes_failed[0] if result.quotes_failed else state.asked
        update |= QueryUpdate(corrected=True, step_kind="corrective", pending=[" ".join(suggestion.split()[:40])])
    return update


def _may_correct(state: QueryState, deps: QueryDeps) -> bool:
    calls_left = deps.llm_calls_left(state.complexity, state.llm)
    return not state.corrected and not state.cut and calls_left >= 1 and _time_left(state, deps)


def _failure_warning(runtime: Runtime[QueryDeps], gate: GateResult, single_source: bool) -> SentWarning:
    if any(s.quotes_failed for s in gate.failed):
        failed = sum(len(s.quotes_failed) for s in gate.failed)
        return warn(runtime, "unverified_quote", f"{failed} quoted passage(s) do not appear in the provisions "
                    "given; treat them as unverified")  # fmt: skip
    if gate.failed or not gate.passed:
        return warn(runtime, "unsupported_statement", f"{len(gate.failed)} statement(s) are not supported by the "
                    "provisions they cite; treat them as unverified")  # fmt: skip
    return warn(runtime, "single_source", "the answer rests on one provision although the search found several "
                "relevant ones; check the others before relying on it")  # fmt: skip


async def _verify_model(state: QueryState, runtime: Runtime[QueryDeps], start: float) -> QueryUpdate:
    deps = runtime.context
    offered = {c["index"]: Citation.model_validate(c) for c in state.offered}
    text = complete_sentences(state.answer)  # a fragment the model had not finished is never kept
    provisions, slow = await _provisions(runtime, offered.values())
    topic = topic_words(state.asked, deps.retriever.lexical, deps.retriever.thesaurus)
    gate = gate_model_answer(text, offered, provisions, topic)
    relevant = len(set(state.relevant_sections))
    log.debug("gate offered: %s", {i: (c.section_id, c.quote[:80]) for i, c in offered.items()})
    for failed in gate.failed:
        log.debug("gate: %s (%s): %r", failed.verdict, ", ".join(failed.missing_facts) or "-", failed.text[:200])
    # An abstention cites nothing by design: searching again for a second source would only ask the model again (a
    # real small model abstained twice running); it gives way to the extractive answer below instead.
    single_source = (
        gate.passed and bool(gate.claims) and relevant >= 2 and len({c.section_id for c in gate.citations}) < 2
    )
    summary = {**gate.summary(), "too_few_sources": int(single_source)}
    if (not gate.passed or single_source) and _may_correct(state, deps):
        warning = _failure_warning(runtime, gate, single_source)
        held: HeldAnswer | None = None
        if gate.answer and (gate.passed or gate.usable) and not gate.abstained:
            held = HeldAnswer(source="model" if gate.passed else "model_trimmed", answer=gate.answer,
                              citations=[c.model_dump() for c in gate.citations], removed=len(gate.failed))  # fmt: skip
        return QueryUpdate(
            verification=summary, verified=False, warnings=[*slow, warning], corrected=True, step_kind="corrective",
            pending=[corrective_query(gate, state.asked)], timings={"verify": ms(start)}, held=held,
        )  # fmt: skip
    extractive = ExtractiveAnswer("", [], True)
    # The quotes are needed only when the model's answer falls short, and only where the quote-only path would show
    # them (gw-dev-062 over the 385 Acts: the grade lifted loan-interest sections over the threshold, the model
    # abstained, and the quotes of a section on the Consolidated Revenue Fund were shown for a question on student
    # loans; gw-dev-046: the model's own research steps found customs sections "answering" a question on Bitcoin).
    falls_short = not (gate.passed and gate.answer) or gate.abstained
    if falls_short and (hits := await quote_only_evidence(state, deps)):
        extracted, cited = await quoted(state, deps, hits, 1)
        extractive = ExtractiveAnswer(extracted, cited, not extracted)
    final = kept_if_better(choose_final(gate, extractive, abstention_text(state, deps)), state.held)
    warnings = slow + [warn(runtime, WARNING_CODES.get(code, "unsupported_statement"), message)
                       for code, message in final.warnings]  # fmt: skip
    # The model's answer as streamed when every marker it wrote is the citation the gate attached and nothing was
    # trimmed; anything else the reader is shown replaces it, streamed again after an answer_revised warning.
    as_written = final.source == "model" and final.answer == gate.answer
    as_written = as_written and all(s.markers == s.cited for s in gate.claims)
    if as_written and text == state.answer.strip():
        answer, citations = state.answer, [Citation.model_validate(c) for c in state.citations]
    else:
        warnings.append(warn(runtime, "answer_revised", "the answer above could not be verified as written; the "
                             "answer that follows replaces it"))  # fmt: skip
        tracker = CitationTracker(final.citations, runtime.stream_writer)
        stream_words(final.answer, tracker)
        answer, citations = tracker.text, tracker.used
    return QueryUpdate(
        answer=answer, citations=[c.model_dump() for c in citations], abstained=final.abstained,
        verified=final.verified, verification=summary, warnings=warnings, composer="extractive"
        if final.source in ("extractive", "abstention") else "model", timings={"verify": ms(start)}, held=None,
    )  # fmt: skip


RANK = {"model": 3, "model_trimmed": 2, "extractive": 1, "abstention": 0}


def kept_if_better(final: FinalAnswer, held: HeldAnswer | None) -> FinalAnswer:
    """The model's first answer (verified sentences only) when the corrective step's answer came out worse: a real
    small model, sent back for uncited sentences, once replaced a right answer about the formalities of a will with
    one about oral wills."""
    if held is None or RANK[held["source"]] <= RANK[final.source]:
        return final
    citations = [Citation.model_validate(c) for c in held["citations"]]
    notes: tuple[tuple[str, str], ...] = ()
    if held["source"] == "model_trimmed":
        notes = (("statements_removed", f"{held['removed']} statement(s) in the model's answer could not be matched "
                  "to the provisions cited and were removed"),)  # fmt: skip
    return FinalAnswer(held["source"], held["answer"], citations, True, False, notes)


async def reevaluate(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Check the answer covers every part of the question (the plan's sub-questions): one bounded refinement step
    researches a part left uncovered; a part still uncovered after it is said plainly to be not found."""
    deps = runtime.context
    if state.abstained or state.cached or len(state.parts) < 2:
        return {}
    missing = uncovered_parts(state.parts, state.answer, [c["quote"] for c in state.citations])
    if not missing:
        return {"uncovered": []}
    steps_left = len(state.steps) < deps.settings.llm.max_steps + 1
    calls_ok = deps.llm is None or deps.llm_calls_left(state.complexity, state.llm) >= 1
    if not state.refined and steps_left and calls_ok and _time_left(state, deps):
        return {"refined": True, "step_kind": "refinement", "pending": missing[:1]}
    note = "\n\nI could not find in the documents an answer to: " + "; ".join(f"“{m}”" for m in missing) + "."
    tracker = CitationTracker([], runtime.stream_writer)
    tracker.feed("\n\n")
    stream_words(note.lstrip(), tracker)
    warning = warn(runtime, "not_covered", f"{len(missing)} part(s) of the question were not found in the documents")
    return {"answer": state.answer + note, "uncovered": missing, "warnings": [warning]}


async def remember(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Close the turn: record it in the session, and keep a verified, cited answer in QA memory (the research, never
    a multiple-choice letter: selection comes after)."""
    deps = runtime.context
    if (
        state.verified
        and not state.abstained
        and state.citations
        and not state.cached
        and not depends_on_session(state)
    ):
        vector = await deps.retriever.embedder.embed_query(state.asked)
        await deps.memory.aremember(memory_key(state, deps), vector, state.asked, state.answer, state.citations)
    return {"turns": [turn(state, state.answer)]}


async def select_choice(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Weigh each choice against the cited evidence: the model picks with a reason per choice when configured (and
    its pick must cite), else the best-supported choice wins with a stated confidence."""
    start = time.perf_counter()
    deps = runtime.context
    cited = [Citation.model_validate(c) for c in state.citations]
    provisions, slow = await _provisions(runtime, cited)
    evidence = {c.index: provisions.get(c.section_id, c.quote) for c in cited}
    chosen: MultipleChoice | None = None
    calls: list[LLMCall] = []
    if cited and deps.llm is not None:
        shown = render_sources([c.model_copy(update={"quote": evidence[c.index]}) for c in cited])
        reply, calls = await deps.ask("choose", state.complexity, state.llm, reserve=0, question=state.asked,
                                      choices=render_choices(state.choices), evidence=shown)  # fmt: skip
        chosen = from_model(reply, state.choices, [c.index for c in cited])
    chosen = chosen or by_evidence(state.asked, state.choices, evidence)
    tracker = CitationTracker([], runtime.stream_writer)
    block = "\n\n" + choice_text(chosen)
    tracker.feed("\n\n")
    stream_words(block.lstrip(), tracker)
    return {"answer": state.answer + block, "choice": chosen.model_dump(), "llm": calls, "warnings": slow,
            "timings": {"select_choice": ms(start)}}  # fmt: skip
