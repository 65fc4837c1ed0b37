"""Pure routing functions for the query graph."""

from __future__ import annotations

from typing import Literal

from .state import QueryState


def after_retrieve(state: QueryState) -> Literal["synthesize", "abstain"]:
    return "synthesize" if state.hits else "abstain"


def after_guard(state: QueryState) -> Literal["contextualize", "respond"]:
    return "respond" if state.route == "blocked" else "contextualize"


def after_intent(state: QueryState) -> Literal["retrieve", "respond"]:
    return "retrieve" if state.route == "rag_qa" else "respond"
