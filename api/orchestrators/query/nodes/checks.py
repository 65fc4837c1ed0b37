"""Check nodes: verify the answer (sentence by sentence for a model's), re-evaluate that it covers every part of the
question, keep it, and answer a multiple-choice question from the researched evidence."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

from langgraph.runtime import Runtime

from api.composer.answerability import topic_words
from api.composer.citations import MARKER, CitationTracker, stream_words
from api.composer.extractive import standalone
from api.composer.judge.choice import ExtractiveAnswer, choose_final, corrective_query
from api.composer.judge.gate import (
    GateResult,
    SentenceCheck,
    Verification,
    complete_sentences,
    gate_model_answer,
    unsent_tail,
    verify_answer,
)
from api.composer.judge.streaming import GateProgress
from api.composer.llm import render_sources
from api.composer.structured import LLMCall
from api.schemas.events import Citation, MultipleChoice, StatusEvent, WarningCode

from ..choices import by_evidence, choice_text, from_model, render_choices
from ..deps import QueryDeps
from ..evidence import uncovered_parts
from ..state import QueryState, QueryUpdate, SentWarning
from .answer import (
    abstention_text,
    context_for,
    finish_by,
    next_index,
    part_asked,
    quote_only_evidence,
    quoted,
)
from .common import (
    depends_on_session,
    memory_key,
    ms,
    provisions_for,
    turn,
    warn,
    without_repeal_notes,
)

log = logging.getLogger(__name__)
WARNING_CODES: dict[str, WarningCode] = {
    "model_abstained": "model_abstained",
    "statements_removed": "statements_removed",
    "model_answer_unverified": "model_answer_unverified",
}


def _time_left(state: QueryState, deps: QueryDeps) -> bool:
    return not state.deadline or time.monotonic() < finish_by(state, deps)


async def verify(state: QueryState, runtime: Runtime[QueryDeps]) -> QueryUpdate:
    """Check the answer against the provisions it cites before the reader sees it; a failure earns one corrective
    step when nothing has been sent yet and the budget and the deadline allow; a model's answer that falls short is
    completed, or replaced, by the verified quote-only answer."""
    start = time.perf_counter()
    if state.composer == "model":
        return await _verify_model(state, runtime, start)
    if state.abstained:  # an abstention states nothing to check
        sent = send(runtime, state, state.draft, [])
        return sent | QueryUpdate(draft="", timings={"verify": 0.0})
    return await _verify_quotes(state, runtime, start)


async def _verify_quotes(state: QueryState, runtime: Runtime[QueryDeps], start: float) -> QueryUpdate:
    """Check a quote-only answer a quote (paragraph) at a time and send each as soon as it passes, before the next
    is checked: the reader sees the answer grow as its quotes are verified (reading a cited document, and with a
    model as claim judge judging a quote, takes time) instead of all of it once the last is checked.

    Each paragraph passes the same checks as the whole answer did: its quotes verbatim in the provisions they cite,
    and its sentences (the opening one included) through the same sentence gate as a model's. A quote that fails is
    left out; while nothing has been sent, a failure (or an answer resting on one provision where the evidence held
    several) earns the one corrective step instead, as before. What was sent is never taken back."""
    deps = runtime.context
    offered = {c["index"]: Citation.model_validate(c) for c in state.draft_citations}
    relevant = len(set(state.relevant_sections))
    # Which provisions the answer cites is known before any is read: an answer resting on one provision where the
    # evidence held several is corrected before anything is sent.
    sections = {offered[int(m)].section_id for m in MARKER.findall(state.draft) if int(m) in offered}
    if relevant >= 2 and len(sections) < 2 and _may_correct(state, deps):
        return QueryUpdate(verified=False, corrected=True, step_kind="corrective", pending=[state.asked], draft="",
                           timings={"verify": ms(start)})  # fmt: skip
    provisions: dict[str, str] = {}
    read: set[str] = set()
    warnings: list[SentWarning] = []
    checks: list[SentenceCheck] = []
    failed_quotes: list[str] = []
    rejected = 0
    answer, cited = state.answer, list(state.citations)
    shown_section = ""  # the provision the last paragraph sent quotes
    for paragraph in paragraphs(state.draft):
        citations = [offered[int(m)] for m in MARKER.findall(paragraph) if int(m) in offered]
        if citations and citations[0].section_id != shown_section:
            # A paragraph that goes on from a quote left out ("It also provides: …") names its provision instead.
            paragraph = standalone(paragraph, citations[0])
        unread = [c for c in citations if c.section_id not in read]
        if unread:
            runtime.stream_writer(StatusEvent(stage="checking"))
            found, slow = await provisions_for(runtime, unread)
            provisions |= found
            read |= {c.section_id for c in unread}
            warnings += slow
        # The notes beside a quote (a repeal, the consolidation quoted) rest on the corpus's own records, read at
        # ingestion, not on any provision offered: the checks read the quotes without them.
        quoted = without_repeal_notes(paragraph)
        quotes = verify_answer(quoted, offered, provisions)
        gate = await _gate(state, deps, quoted, offered, provisions, notes_repeals=True)
        checks += gate.sentences
        runtime.stream_writer(GateProgress(summary=GateResult(checks, "", []).summary()))
        if not quotes.passed and answer == state.answer and _may_correct(state, deps):
            # Nothing is sent: the corrective step's answer is checked in turn (the failed quote is the corpus's
            # own text, never a model's words).
            suggestion = quotes.quotes_failed[0] if quotes.quotes_failed else state.asked
            return QueryUpdate(verified=False, warnings=warnings, corrected=True, step_kind="corrective",
                               pending=[" ".join(suggestion.split()[:40])], draft="",
                               verification=summary_of(GateResult(checks, "", []), quotes),
                               timings={"verify": ms(start)})  # fmt: skip
        if quotes.quotes_failed or gate.failed:
            failed_quotes += quotes.quotes_failed
            rejected += len(gate.failed) if not quotes.quotes_failed else 0
            continue
        step = send(runtime, replace(state, answer=answer, citations=cited), paragraph, citations)
        answer, cited = step["answer"], step["citations"]
        shown_section = citations[0].section_id if citations else ""
        await asyncio.sleep(0)  # the stream's writer gets its turn: this quote goes out before the next is checked
    whole = verify_answer(without_repeal_notes(state.draft), offered, provisions, relevant)
    if rejected and not failed_quotes:
        warnings.append(warn(runtime, "unsupported_statement", f"{rejected} statement(s) the gate could not "
                             "match to the provisions cited were left out"))  # fmt: skip
    if failed_quotes:
        warnings.append(warn(runtime, "unverified_quote", f"{len(failed_quotes)} quoted passage(s) do not "
                             "appear in the cited provisions and were left out"))  # fmt: skip
    if whole.uncited_paragraphs or whole.unknown_markers:
        warnings.append(warn(runtime, "unsupported_statement", "part of the answer cites no provision it was given; "
                             "treat it as unverified"))  # fmt: skip
    kept = answer != state.answer
    if not kept and not state.answer:
        # Below an answer already sent (a refinement that found nothing), nothing is added: the part still uncovered
        # is said plainly by re-evaluation, not by an abstention about the whole question.
        step = send(runtime, state, abstention_text(state, deps), [])
        answer, cited = step["answer"], step["citations"]
    return QueryUpdate(
        answer=answer, citations=cited, verification=summary_of(GateResult(checks, "", []), whole),
        timings={"verify": ms(start)}, verified=whole.passed and not rejected and not failed_quotes,
        warnings=warnings, abstained=not kept and not state.answer, draft="",
    )  # fmt: skip


async def _gate(
    state: QueryState,
    deps: QueryDeps,
    text: str,
    offered: dict[int, Citation],
    provisions: dict[str, str],
    notes_repeals: bool = False,
) -> GateResult:
    """The answer through the sentence gate with the service's claim judge (off the event loop when a model judges;
    verdicts from the streamed check are cached). ``notes_repeals``: the answer itself says, beside each quote of a
    repealed law, that it is repealed, so the gate need not require each sentence to."""
    topic = topic_words(part_asked(state), deps.retriever.lexical, deps.retriever.thesaurus)
    repealed = {} if notes_repeals else deps.corpus.repealed_on(state.filters.get("as_of"))
    if deps.claims.blocking:
        return await asyncio.to_thread(gate_model_answer, text, offered, provisions, topic, deps.claims, repealed)
    return gate_model_answer(text, offered, provisions, topic, deps.claims, repealed)


def summary_of(gate: GateResult, quotes: Verification, too_few_sources: bool | None = None) -> dict[str, int]:
    """One verification summary for either path: the gate's claim counts and the whole-answer checks (quotes,
    uncited paragraphs, unknown markers, facts)."""
    summary = {**quotes.summary(), **gate.summary()}
    if too_few_sources is not None:
        summary["too_few_sources"] = int(too_few_sources)
    return summary


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def send(runtime: Runtime[QueryDeps], state: QueryState, text: str, citations: list[Citation]) -> QueryUpdate:
    """Send verified ``text`` (below what was already sent) and the citations it uses; the answer and citations
    the reader now has."""
    tracker = CitationTracker(citations, runtime.stream_writer)
    if state.answer and text:
        tracker.feed("\n\n")
    stream_words(text, tracker)
    return QueryUpdate(answer=state.answer + tracker.text,
                       citations=[*state.citations, *(c.model_dump() for c in tracker.used)])  # fmt: skip


async def send_quotes(
    runtime: Runtime[QueryDeps], state: QueryState, text: str, citations: list[Citation]
) -> QueryUpdate:
    """``send``, a paragraph (a quote) at a time, each going out before the next is prepared: the stream's writer
    gets its turn between them, so a client shows each quote as it comes rather than the whole answer at once."""
    answer, cited = state.answer, list(state.citations)
    for paragraph in paragraphs(text):
        step = send(runtime, replace(state, answer=answer, citations=cited), paragraph, citations)
        answer, cited = step["answer"], step["citations"]
        await asyncio.sleep(0)
    return QueryUpdate(answer=answer, citations=cited)


def _may_correct(state: QueryState, deps: QueryDeps) -> bool:
    """One corrective step, while nothing of the answer has been sent (what was sent stays: it was verified)."""
    calls_left = deps.llm_calls_left(state.complexity, state.llm)
    return not state.answer and not state.corrected and not state.cut and calls_left >= 1 and _time_left(state, deps)


def _failure_warning(runtime: Runtime[QueryDeps], gate: GateResult) -> SentWarning:
    if any(s.quotes_failed for s in gate.failed):
        failed = sum(len(s.quotes_failed) for s in gate.failed)
        return warn(runtime, "unverified_quote", f"{failed} quoted passage(s) do not appear in the provisions "
                    "given; they were not sent")  # fmt: skip
    return warn(runtime, "unsupported_statement", f"{len(gate.failed)} statement(s) are not supported by the "
                "provisions they cite; they were not sent")  # fmt: skip


async def _verify_model(state: QueryState, runtime: Runtime[QueryDeps], start: float) -> QueryUpdate:
    deps = runtime.context
    offered = {c["index"]: Citation.model_validate(c) for c in state.offered}
    text = complete_sentences(state.draft)  # a fragment the model had not finished is never kept
    provisions, slow = await provisions_for(runtime, offered.values())
    gate = await _gate(state, deps, text, offered, provisions)
    relevant = len(set(state.relevant_sections))
    for failed in gate.failed:
        log.debug("gate: %s (%s)", failed.verdict, ", ".join(failed.missing_facts) or "-")
    single_source = (
        gate.passed and bool(gate.claims) and relevant >= 2 and len({c.section_id for c in gate.citations}) < 2
    )
    quotes = verify_answer(gate.answer, offered, provisions)
    summary = summary_of(gate, quotes, single_source)
    base = QueryUpdate(verification=summary, timings={"verify": ms(start)}, draft="")
    if len(state.answer) > state.shown_at:
        return base | await _complete(state, runtime, gate, single_source, slow)
    # Nothing of this answer was sent: its sentences all failed, or it abstained.
    if not gate.passed and _may_correct(state, deps):
        warning = _failure_warning(runtime, gate)
        return base | QueryUpdate(verified=False, warnings=[*slow, warning], corrected=True, step_kind="corrective",
                                  pending=[corrective_query(gate, state.asked)])  # fmt: skip
    extractive = ExtractiveAnswer("", [], True)
    # The quotes are needed only when the model's answer falls short, and only where the quote-only path would show
    # them: a grade that lifts loosely related provisions must not have their quotes shown for an unanswerable
    # question the model rightly abstained on.
    if hits := await quote_only_evidence(state, deps):
        extracted, cited = await quoted(state, deps, hits, next_index(state))
        extractive = ExtractiveAnswer(extracted, cited, not extracted)
    final = choose_final(gate, extractive, abstention_text(state, deps))
    warnings = slow + [warn(runtime, WARNING_CODES.get(code, "unsupported_statement"), message)
                       for code, message in final.warnings]  # fmt: skip
    sent = await send_quotes(runtime, state, final.answer, final.citations)
    if final.source in ("model", "model_trimmed") and not final.abstained:
        sent = await send_context(runtime, state, sent)
    return base | sent | QueryUpdate(
        abstained=final.abstained and not state.answer, verified=final.verified, warnings=warnings,
        composer="extractive" if final.source in ("extractive", "abstention") else "model",
    )  # fmt: skip


async def _complete(
    state: QueryState, runtime: Runtime[QueryDeps], gate: GateResult, single_source: bool, slow: list[SentWarning]
) -> QueryUpdate:
    """The model's verified sentences were sent: add its closing words that state nothing (held while a claim
    could still fail), and when most of its claims failed (what was sent may have lost the answer's point) the
    quote-only answer below them."""
    deps = runtime.context
    warnings = list(slow)
    tracker = CitationTracker([], runtime.stream_writer)
    tracker.feed(unsent_tail(gate))  # the tail continues the last sentence sent, after its own whitespace
    tracker.flush()
    sent = QueryUpdate(answer=state.answer + tracker.text, citations=state.citations)
    if gate.failed:
        warnings.append(warn(runtime, "statements_removed", f"{len(gate.failed)} statement(s) in the model's answer "
                             "could not be matched to the provisions cited and were not sent"))  # fmt: skip
    if single_source:
        warnings.append(warn(runtime, "single_source", "the answer rests on one provision although the search found "
                             "several relevant ones; check the others before relying on it"))  # fmt: skip
    if not gate.usable and (hits := await quote_only_evidence(state, deps)):
        after = replace(state, answer=sent["answer"], citations=sent["citations"])
        extracted, cited = await quoted(after, deps, hits, next_index(after))
        if extracted:
            sent = await send_quotes(runtime, after, extracted, cited)
    else:
        sent = await send_context(runtime, state, sent)
    return sent | QueryUpdate(abstained=False, verified=True, warnings=warnings)


async def send_context(runtime: Runtime[QueryDeps], state: QueryState, sent: QueryUpdate) -> QueryUpdate:
    """Below a model's verified answer (``sent``: the answer and citations the reader has), the definitions its
    cited words depend on and the provisions they refer to, each quoted in its own paragraph with its own citation
    (``context_for``). They are added after the gate, never offered as a sentence's support, and sent only once their
    quotes are found verbatim in the provisions they cite."""
    deps = runtime.context
    after = replace(state, answer=sent["answer"], citations=sent["citations"])
    cited = [Citation.model_validate(c) for c in after.citations]
    text, added = await context_for(after, deps, cited, next_index(after))
    if not text:
        return sent
    provisions, _ = await provisions_for(runtime, added)
    checked = verify_answer(text, {c.index: c for c in added}, provisions)
    if not checked.passed:
        log.warning("definitions and references not added: %d quote(s) not found verbatim",
                    len(checked.quotes_failed))  # fmt: skip
        return sent
    return await send_quotes(runtime, after, text, added)


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
    provisions, slow = await provisions_for(runtime, cited)
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
