"""Pure routing functions for the query graph."""

from __future__ import annotations

from typing import Literal

from .state import QueryState


def after_guard(state: QueryState) -> Literal["contextualize", "respond"]:
    return "respond" if state.route == "blocked" else "contextualize"


def after_intent(state: QueryState) -> Literal["recall", "respond"]:
    return "recall" if state.route == "rag_qa" else "respond"


def after_recall(state: QueryState) -> Literal["plan", "__end__"]:
    return "__end__" if state.cached else "plan"


def after_research(state: QueryState) -> Literal["research", "replan", "synthesize", "abstain"]:
    if state.retry or (state.corrected and state.pending):
        return "research"  # the grade asked for a rewrite, or a corrective step has more to search
    if state.complexity == "multi_hop" and not state.corrected:
        return "replan"
    return "synthesize" if state.hits else "abstain"


def after_replan(state: QueryState) -> Literal["research", "synthesize", "abstain"]:
    if state.pending:
        return "research"
    return "synthesize" if state.hits else "abstain"


def after_verify(state: QueryState) -> Literal["research", "remember"]:
    """A failed verification sends one corrective research step (verify set ``pending``) before the answer is kept."""
    return "research" if state.pending else "remember"
