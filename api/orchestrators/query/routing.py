"""Pure routing functions for the query graph."""

from __future__ import annotations

from typing import Literal

from .state import QueryState


def after_retrieve(state: QueryState) -> Literal["synthesize", "abstain"]:
    return "synthesize" if state.hits else "abstain"
