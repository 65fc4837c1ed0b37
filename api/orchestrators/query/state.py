"""What flows between the query graph's nodes, and how one node's update is merged into it.

Every field but ``turns`` belongs to one question: ``fresh_turn`` builds the next question's input from the
fields' own defaults, so a field added here is reset between turns without being listed anywhere. Only ``turns``
accumulates across a session, through its reducer, and is what a question inherits from the one before.

Nodes return a ``QueryUpdate`` (a partial ``QueryState``, checked key by key by mypy). Fields with a reducer take
only what is new: a node returns its own timings, warnings and LLM-call records, never the whole list.
"""

from __future__ import annotations

import operator
from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, Literal, TypedDict, get_type_hints

from langgraph.types import Overwrite

from api.composer.structured import LLMCall
from api.schemas.events import Outcome, Route, WarningCode

Complexity = Literal["simple", "multi_hop"]
StepKind = Literal["research", "corrective", "refinement", "reference"]
Composer = Literal["", "model", "extractive"]
Cut = Literal["", "stalled", "deadline"]
SentWarning = tuple[WarningCode, str]
"""(code, message), as sent to the client in a warning event."""


def merge_timings(left: dict[str, float], right: dict[str, float]) -> dict[str, float]:
    """Stage timings add up across nodes; a stage measured again keeps the latest figure."""
    return {**left, **right}


class Turn(TypedDict, total=False):
    """One closed turn of a session, as a follow-up inherits it (older checkpoints hold the first three only)."""

    question: str
    query: str
    """The self-contained question that was researched."""
    answer: str
    acts: list[str]
    """The documents the answer cited (doc keys, in order of first citation): where a follow-up looks first."""
    headings: list[str]
    """The headings of the provisions the answer cited: what the turn was about."""


class HitRef(TypedDict):
    """A retrieved chunk by id (the chunk itself lives in the corpus), with its fused score and per-source ranks."""

    chunk_id: str
    score: float
    ranks: dict[str, int]


class Step(TypedDict):
    """One research step: the query searched (after any rewrite), what it added, and the grade."""

    query: str
    added: list[str]
    """Chunk ids this step contributed to the evidence (never ones an earlier step already had)."""
    sufficient: bool
    expansions: int
    """Alternative queries and hypothetical passages that finished in time and were searched too."""
    rewrites: int
    """How often the grade sent this step back with a rewritten query before it was done."""
    kind: StepKind
    """A planned step, the corrective search after a failed verification, re-evaluation's refinement, or the
    provisions the evidence depends on, followed without a search (``query`` then names the references)."""


@dataclass(kw_only=True)
class QueryState:
    question: str
    """The user's question as asked."""
    query: str = ""
    """What retrieval searches for: the question, less any instructions the guard removed."""
    injection: bool = False
    """True when the guard found and removed planted instructions."""
    filters: dict[str, str] = field(default_factory=dict)
    """Metadata filters from the request (jurisdiction, doc_type, law_id, date_from, date_to)."""
    tenant: str = ""
    """The caller's tenant: its private documents are searched along with the public corpus."""
    route: Route | Literal[""] = ""
    """Which path the graph took; empty until the guard or the intent classifier decides."""
    route_reason: str = ""
    hits: Annotated[list[HitRef], operator.add] = field(default_factory=list)
    """Fused retrieval results, best first; each research step adds the ones earlier steps did not have."""
    searched: int = 0
    """How many passages the caller could read when the corpus was searched (said in abstentions)."""
    answer: str = ""
    """The answer text the reader has been sent (verified before it was sent), with [n] citation markers."""
    draft: str = ""
    """What the latest synthesis wrote and the reader has not been sent as written: the model's answer as the model
    wrote it (its verified sentences are in ``answer``), or quotes that verification sends once they pass."""
    draft_citations: list[dict[str, Any]] = field(default_factory=list)
    """The citations of a quote-only ``draft`` (``Citation.model_dump()``)."""
    shown_at: int = 0
    """How much of ``answer`` the reader had been sent before the latest synthesis (a refinement adds to it)."""
    citations: list[dict[str, Any]] = field(default_factory=list)
    """Citations used in the answer (``Citation.model_dump()``), in order of first use; plain data for checkpoints."""
    abstained: bool = False
    """True when the corpus did not support an answer."""
    outcome: Outcome | Literal[""] = ""
    """How the turn ended (``Outcome``), where a node decided it; empty: answered unless ``abstained``."""
    verified: bool = True
    """False when verification found an unsupported statement or a quote not in its provision."""
    verification: dict[str, int] = field(default_factory=dict)
    """Counts from verification: quotes checked and failed, uncited paragraphs, unknown markers."""
    warnings: Annotated[list[SentWarning], operator.add] = field(default_factory=list)
    """Warnings already sent to the client as warning events."""
    timings: Annotated[dict[str, float], merge_timings] = field(default_factory=dict)
    """Milliseconds per stage."""
    complexity: Complexity = "simple"
    """simple (one search) or multi_hop (planned steps, replanned from the evidence)."""
    pending: list[str] = field(default_factory=list)
    """Research queries still to run; the first is the current step."""
    steps: Annotated[list[Step], operator.add] = field(default_factory=list)
    """Research steps done this turn, in order."""
    rewrites: int = 0
    """Grade-and-rewrite retries spent on the current step."""
    retry: bool = False
    """True when the grade sent the current step back with a rewritten query."""
    relevant_sections: Annotated[list[str], operator.add] = field(default_factory=list)
    """Provisions the grade judged relevant (the AttributionGate wants two cited when there are two or more)."""
    corrected: bool = False
    """True once the corrective research step after a failed verification has run."""
    cached: bool = False
    """True when the answer came from QA memory."""
    deadline: float = 0.0
    """``time.monotonic()`` reading by which the question must have ended (0: no deadline)."""
    composer: Composer = ""
    """What wrote the current answer: the model, or verbatim quotes (extractive)."""
    offered: list[dict[str, Any]] = field(default_factory=list)
    """The citations the model was shown as [n] (``Citation.model_dump()``), for the sentence-level gate."""
    cut: Cut = ""
    """Why the model's answer was cut short: no token for the stall limit, or the question's deadline."""
    step_kind: StepKind = "research"
    """What the next research step is: planned research, the corrective search, or re-evaluation's refinement."""
    parts: list[str] = field(default_factory=list)
    """The plan's sub-questions, as the quote-only path splits the question: re-evaluation checks the answer covers
    each, and a model answer's fallback is judged on them."""
    focus: list[str] = field(default_factory=list)
    """Chunk ids the corrective or refinement step found (again): synthesis puts them first."""
    answerable: bool | None = None
    """The evidence verdict: None until judged (or with no judge), else whether any step's evidence answers."""
    answerable_without_grade: bool | None = None
    """The same verdict without the model's grade (which only raises it), over the steps that searched a part of the
    question as the quote-only path does (``judged_parts``): what a model answer that fails or abstains gives way to."""
    judged_parts: list[str] = field(default_factory=list)
    """The ``parts`` whose own search the judge has decided on."""
    evidence_note: str = ""
    related: bool = False
    """True when a step's evidence, though not judged to answer, is close enough to the question to be shown as the
    closest provisions found (an abstention then quotes them, as ``related``, rather than saying nothing)."""
    """Why the evidence verdict was reached (logged, and said in an abstention)."""
    lay_terms: list[str] = field(default_factory=list)
    """Legal terms the lay-term thesaurus added to the search (they count as question words in quote choice)."""
    choices: list[str] = field(default_factory=list)
    """A multiple-choice question's choices, in order (letters A, B, …); the question itself is researched alone."""
    choice: dict[str, Any] | None = None
    """The multiple-choice selection (``MultipleChoice.model_dump()``), once made."""
    refined: bool = False
    """True once answer re-evaluation has spent its one refinement step."""
    uncovered: list[str] = field(default_factory=list)
    """Parts of the question (the plan's sub-questions) the answer did not cover after refinement."""
    llm: Annotated[list[LLMCall], operator.add] = field(default_factory=list)
    """One record per LLM call: skill, ms, tokens, attempts, outcome."""
    prefer: list[str] = field(default_factory=list)
    """A follow-up answered within the Act(s) the previous answer cited: their doc keys, which every search of the
    turn is kept to (empty: the whole corpus the caller may read)."""
    turns: Annotated[list[Turn], operator.add] = field(default_factory=list)
    """Earlier questions and answers of this session; grows by one per turn."""

    @property
    def asked(self) -> str:
        """What this turn asks: the screened (and, for a follow-up, self-contained) query, else the question."""
        return self.query or self.question


class QueryUpdate(TypedDict, total=False):
    """A node's partial update of ``QueryState``: the same fields (a unit test keeps the two in step)."""

    question: str
    query: str
    injection: bool
    filters: dict[str, str]
    tenant: str
    route: Route | Literal[""]
    route_reason: str
    hits: list[HitRef]
    searched: int
    answer: str
    draft: str
    draft_citations: list[dict[str, Any]]
    shown_at: int
    citations: list[dict[str, Any]]
    abstained: bool
    outcome: Outcome | Literal[""]
    verified: bool
    verification: dict[str, int]
    warnings: list[SentWarning]
    timings: dict[str, float]
    complexity: Complexity
    pending: list[str]
    steps: list[Step]
    rewrites: int
    retry: bool
    relevant_sections: list[str]
    corrected: bool
    cached: bool
    deadline: float
    composer: Composer
    offered: list[dict[str, Any]]
    cut: Cut
    step_kind: StepKind
    parts: list[str]
    focus: list[str]
    answerable: bool | None
    answerable_without_grade: bool | None
    judged_parts: list[str]
    evidence_note: str
    related: bool
    lay_terms: list[str]
    choices: list[str]
    choice: dict[str, Any] | None
    refined: bool
    uncovered: list[str]
    llm: list[LLMCall]
    prefer: list[str]
    turns: list[Turn]


KEPT_ACROSS_TURNS = frozenset({"turns"})


def fresh_turn(state: type[QueryState] = QueryState, **values: Any) -> dict[str, Any]:
    """The graph input for a new question: every per-turn field at its default (``values`` aside), written past
    any reducer, so nothing of the session's previous question carries over; ``turns`` is left to the checkpoint."""
    reduced = _reduced_fields(state)
    unknown = set(values) - {f.name for f in fields(state)} | (set(values) & KEPT_ACROSS_TURNS)
    if unknown:
        raise TypeError(f"fresh_turn cannot set {sorted(unknown)}")
    turn: dict[str, Any] = {}
    for f in fields(state):
        if f.name in KEPT_ACROSS_TURNS:
            continue
        if f.name in values:
            value = values[f.name]
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        elif f.default is not MISSING:
            value = f.default
        else:
            raise TypeError(f"fresh_turn needs a value for {f.name}")
        turn[f.name] = Overwrite(value) if f.name in reduced else value
    return turn


_REDUCED: dict[type[QueryState], frozenset[str]] = {}


def _reduced_fields(state: type[QueryState]) -> frozenset[str]:
    """The fields with a reducer (``Annotated``), once per state class: resolving the hints took a millisecond of
    every question."""
    if state not in _REDUCED:
        hints = get_type_hints(state, include_extras=True)
        _REDUCED[state] = frozenset(f.name for f in fields(state) if hasattr(hints[f.name], "__metadata__"))
    return _REDUCED[state]


@dataclass(frozen=True, slots=True)
class RouteDecided:
    """Written to the stream once the route is known, so the orchestrator can send ``meta`` first."""

    route: Route
    reason: str
