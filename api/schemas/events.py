"""The streaming contract: every Server-Sent Event the query stream can send, in one place.

A stream is ``meta`` first, then any mix of ``token``, ``citation``, ``warning`` and ``status``, and ends with exactly
one of ``final`` or ``error``.

Nothing unverified is sent: the answer's text goes out a sentence at a time, each only once it has been checked
against the provisions it cites (a ``status`` event with stage ``checking`` says a sentence is being held for that),
so the ``token`` events, joined, are the final answer, and a sentence that fails is never sent.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

Route = Literal["rag_qa", "conversational", "clarify", "out_of_scope", "blocked"]
"""The path a question takes: answered from the corpus, a greeting, a request to clarify, outside the corpus, or
screened out as an attempt to change the assistant's rules."""
Outcome = Literal["answered", "related", "not_found", "refused"]
"""How a question ended, for the reader: ``answered`` (the evidence answers it: the answer's sentences cite the
provisions that say so), ``related`` (nothing found answers it directly; the closest provisions are quoted verbatim
and cited, introduced as the closest found, never as the answer), ``not_found`` (nothing related was found, or the
question was not one for the corpus: a greeting, a request to clarify, out of scope), ``refused`` (the message was
blocked as an attempt to change the assistant's rules). ``abstained`` is true for every outcome but ``answered``."""
WarningCode = Literal[
    "prompt_injection",
    "cached_answer",
    "answer_revised",
    "llm_unavailable",
    "uncited_answer",
    "unverified_quote",
    "unsupported_statement",
    "single_source",
    "dense_unavailable",
    "bm25_unavailable",
    "rerank_unavailable",
    "retrieval_unavailable",
    "llm_stalled",
    "deadline_reached",
    "model_abstained",
    "statements_removed",
    "model_answer_unverified",
    "route_overruled",
    "not_covered",
    "sources_slow",
    "repealed_law",
    "other_version",
]


class Citation(BaseModel):
    """A pointer from the answer to the exact provision it quotes."""

    index: int = Field(description="The [n] marker used in the answer text.")
    doc_key: str
    title: str
    section_id: str
    provision_id: str = Field("", description="The finest provision the quote starts in, e.g. '…#s3(1)'.")
    section: str = Field(
        description="Human label, e.g. 'section 3(1)', 'paragraph 12' (a judgment's) or 'paragraph 4(2) of "
        "Schedule 28' (a schedule's provision, never the Act's section of that number)."
    )
    heading: str = ""
    chunk_id: str
    quote: str = Field(description="Text quoted from the provision; occurs verbatim in it.")
    cite_as: str = Field(
        "",
        description="The provision as its jurisdiction cites it, e.g. 'Marriages Act [Chapter 5:15], s 3(1)' "
        "(styles in api/data/citation_style.toml).",
    )
    consolidated: str = Field(
        "", description="The consolidation the quoted text reflects (ISO date, e.g. '2017-09-07'); '' when not known."
    )
    kind: Literal["provision", "definition", "reference"] = Field(
        "provision",
        description="'definition': the definition of a term the answer's cited words (or the question) use, quoted "
        "from the provision that defines it and added as its own citation; 'reference': a provision the answer's "
        "cited words refer to ('subject to section 12', 'referred to in subsection (3)'), its words most relevant to "
        "the question quoted and added as its own citation. Either supports no other sentence's claim.",
    )


class MetaEvent(BaseModel):
    event: Literal["meta"] = "meta"
    trace_id: str
    session_id: str
    route: Route | Literal["unknown"] = Field(description="'unknown' when the question failed before it was routed.")
    corpus_version: str = Field(
        description="The version of the documents the caller may read (theirs and the public corpus's)."
    )
    budgets: dict[str, float | int]


class TokenEvent(BaseModel):
    """A piece of the answer's text, in order, each sent once it has been verified: a checked sentence (or a few
    words of a prepared one), its ``citation`` events right after the piece that completes its ``[n]`` marker.
    Joined, the token events are the final answer."""

    event: Literal["token"] = "token"
    text: str


class CitationEvent(BaseModel):
    event: Literal["citation"] = "citation"
    citation: Citation


class StatusEvent(BaseModel):
    """What the answer is waiting on, for a client to show: ``checking``, a sentence is written and being checked
    against the provisions it cites before it is sent (the next ``token`` ends the wait)."""

    event: Literal["status"] = "status"
    stage: Literal["checking"]


class WarningEvent(BaseModel):
    event: Literal["warning"] = "warning"
    code: WarningCode
    message: str


class ResearchStep(BaseModel):
    query: str = Field(description="What was searched in this step (after any rewrite).")
    added: list[str] = Field(description="Chunk ids this step added to the evidence.")
    sufficient: bool = Field(description="Whether the grade judged the evidence enough to answer.")
    expansions: int = Field(0, description="Alternative queries and hypothetical passages searched too.")
    rewrites: int = 0
    kind: Literal["research", "corrective", "refinement", "reference"] = Field(
        "research",
        description="A planned step, the search after a failed verification, re-evaluation's refinement, or "
        "'reference': the provisions the evidence depends on ('subject to section 9'), fetched without a search.",
    )


class ChoiceReason(BaseModel):
    letter: str = Field(description="The choice's letter, as given in the request or the question.")
    text: str
    supported: bool = Field(description="Whether the cited evidence supports this choice.")
    reason: str = Field(description="Why the choice was taken or rejected, in one sentence.")
    citations: list[int] = Field(default_factory=list, description="The [n] markers of the evidence for the reason.")


class MultipleChoice(BaseModel):
    """The answer to a multiple-choice question: the chosen letter, how sure, and a reason per choice."""

    letter: str = Field(description="The chosen letter; empty when no choice is supported by the evidence.")
    confidence: float = Field(ge=0, le=1, description="How sure the selection is (evidence support, or the model's).")
    method: Literal["model", "evidence"] = Field(description="Chosen by the model, or by evidence support alone.")
    choices: list[ChoiceReason]


class FinalEvent(BaseModel):
    event: Literal["final"] = "final"
    answer: str
    citations: list[Citation]
    abstained: bool = Field(False, description="True for every outcome but 'answered': nothing found answers it.")
    outcome: Outcome = Field(
        "answered",
        description="answered, related (the closest provisions, quoted and cited, not an answer), not_found or "
        "refused (an attack the guard blocked); see ``Outcome``.",
    )
    verified: bool = Field(True, description="False when a quote or statement could not be checked against a source.")
    verification: dict[str, int] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict, description="Milliseconds per stage.")
    cached: bool = Field(False, description="True when a verified answer to a near-identical question was reused.")
    research: list[ResearchStep] = Field(default_factory=list, description="The research steps, in order.")
    choice: MultipleChoice | None = Field(None, description="For a multiple-choice question: the choice made.")


class ErrorEvent(BaseModel):
    event: Literal["error"] = "error"
    code: str
    message: str


StreamEvent = Annotated[
    MetaEvent | TokenEvent | CitationEvent | StatusEvent | WarningEvent | FinalEvent | ErrorEvent,
    Field(discriminator="event"),
]
