"""Pure routing functions for the query graph."""

from __future__ import annotations

from typing import Literal

from .state import QueryState

ResearchCalls = Literal["none", "grade", "expand_and_grade"]
"""The model calls a research step makes once its own search is in (expansion and grade run at once)."""


def research_calls(state: QueryState, calls_left: int, settled: bool) -> ResearchCalls:
    """None for the corrective and refinement steps (their one call is the new answer), when the step's own search
    already settles the evidence verdict whatever a grade would say (``settled``), or when the question's model
    budget (``calls_left``) has room only for the answer; a retry after a rewrite, or room for one more call, gets
    the grade alone; otherwise the model expands the query and grades the search's passages, both at once."""
    if state.step_kind != "research" or settled or calls_left <= 1:
        return "none"
    return "grade" if state.rewrites or calls_left == 2 else "expand_and_grade"


def route_call(has_model: bool, unsure: bool, strong: bool) -> Literal["model", "rules"]:
    """Ask the model to route only when the rules were unsure and the question's own search did not find strong
    evidence for it (which would overrule a model's clarify or out-of-scope anyway): research it."""
    return "model" if has_model and unsure and not strong else "rules"


def after_guard(state: QueryState) -> Literal["contextualize", "respond"]:
    return "respond" if state.route == "blocked" else "contextualize"


def after_intent(state: QueryState) -> Literal["recall", "respond"]:
    return "recall" if state.route == "rag_qa" else "respond"


def after_recall(state: QueryState) -> Literal["plan", "select_choice", "__end__"]:
    if state.cached:
        return after_answer(state)
    return "plan"


def _answer_or_abstain(state: QueryState) -> Literal["synthesize", "abstain"]:
    """Abstain before synthesis when nothing was found, or when the evidence judge found nothing that answers."""
    return "synthesize" if state.hits and state.answerable is not False else "abstain"


def after_research(state: QueryState) -> Literal["research", "replan", "synthesize", "abstain"]:
    if state.retry or (state.step_kind != "research" and state.pending):
        return "research"  # the grade asked for a rewrite, or a corrective or refinement step has more to search
    if state.step_kind != "research":
        return "synthesize"  # the corrective or refinement search: answer again from everything found
    if state.complexity == "multi_hop":
        return "replan"
    return _answer_or_abstain(state)


def after_replan(state: QueryState) -> Literal["research", "synthesize", "abstain"]:
    if state.pending:
        return "research"
    return _answer_or_abstain(state)


def after_verify(state: QueryState) -> Literal["research", "reevaluate"]:
    """A failed verification sends one corrective research step (verify set ``pending``) before the answer is kept."""
    return "research" if state.pending else "reevaluate"


def after_reevaluate(state: QueryState) -> Literal["research", "remember"]:
    """A part of the question the answer left uncovered gets one refinement step (re-evaluation set ``pending``)."""
    return "research" if state.pending else "remember"


def after_answer(state: QueryState) -> Literal["select_choice", "__end__"]:
    """A multiple-choice question is answered from the research: the selection step comes last."""
    return "select_choice" if state.choices else "__end__"
