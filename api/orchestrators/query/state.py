"""What flows between the query graph's nodes.

Per-turn fields are replaced on every turn (the orchestrator passes fresh values in); only ``turns`` accumulates
across a session, through its reducer, and is what the checkpointer keeps between questions.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict


class Turn(TypedDict, total=False):
    question: str
    query: str
    answer: str


class HitRef(TypedDict):
    """A retrieved chunk by id (the chunk itself lives in the corpus), with its fused score and per-source ranks."""

    chunk_id: str
    score: float
    ranks: dict[str, int]


class LLMCall(TypedDict):
    """One call to the model: which skill, how long, its tokens, tries, and how it ended."""

    skill: str
    ms: float
    input_tokens: int
    output_tokens: int
    attempts: int
    outcome: str
    """ok, timeout, error or unparsable."""


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
    route: str = ""
    """Which path the graph took: rag_qa, conversational, clarify, out_of_scope or blocked."""
    route_reason: str = ""
    hits: list[HitRef] = field(default_factory=list)
    """Fused retrieval results, best first."""
    searched: int = 0
    """How many passages the corpus held when it was searched (said in abstentions)."""
    answer: str = ""
    """The final answer text, with [n] citation markers."""
    citations: list[dict[str, Any]] = field(default_factory=list)
    """Citations used in the answer (``Citation.model_dump()``), in order of first use; plain data for checkpoints."""
    abstained: bool = False
    """True when the corpus did not support an answer."""
    verified: bool = True
    """False when verification found an unsupported statement or a quote not in its provision."""
    verification: dict[str, int] = field(default_factory=dict)
    """Counts from verification: quotes checked and failed, uncited paragraphs, unknown markers."""
    warnings: list[tuple[str, str]] = field(default_factory=list)
    """(code, message) pairs already sent to the client as warning events."""
    timings: dict[str, float] = field(default_factory=dict)
    """Milliseconds per stage."""
    complexity: str = "simple"
    """simple (one search) or multi_hop (planned steps, replanned from the evidence)."""
    pending: list[str] = field(default_factory=list)
    """Research queries still to run; the first is the current step."""
    steps: list[Step] = field(default_factory=list)
    """Research steps done this turn, in order."""
    rewrites: int = 0
    """Grade-and-rewrite retries spent on the current step."""
    retry: bool = False
    """True when the grade sent the current step back with a rewritten query."""
    relevant_sections: list[str] = field(default_factory=list)
    """Provisions the grade judged relevant (the AttributionGate wants two cited when there are two or more)."""
    corrected: bool = False
    """True once the corrective research step after a failed verification has run."""
    cached: bool = False
    """True when the answer came from QA memory."""
    llm: list[LLMCall] = field(default_factory=list)
    """One record per LLM call: skill, ms, tokens, attempts, outcome."""
    turns: Annotated[list[Turn], operator.add] = field(default_factory=list)
    """Earlier questions and answers of this session; grows by one per turn."""


@dataclass(frozen=True, slots=True)
class RouteDecided:
    """Written to the stream once the route is known, so the orchestrator can send ``meta`` first."""

    route: str
    reason: str
