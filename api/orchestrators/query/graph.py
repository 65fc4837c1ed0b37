"""Build the query graph.

guard ──blocked──────────────────────────────────────────────► respond
  └──► contextualize ──► classify_intent ──not a legal question──► respond
                              └──rag_qa──► recall ──memory hit──► END (or select_choice)
                                             └──► plan ──► research ◄──rewrite──┐
                                                            │  └────────────────┘
                                     multi-hop: replan ◄────┤──► abstain (nothing found, or nothing that answers)
                                        └──next step──► research
                                                            └──► synthesize ──► verify ──► reevaluate ──► remember
                                                                    ▲             │ failed once   │ a part
                                                                    └─ research ◄─┘ (corrective)  │ uncovered
                                                                    └─ research ◄─────────────────┘ (refinement)
remember / abstain ──multiple choice──► select_choice ──► END
"""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from .deps import QueryDeps
from .nodes.answer import abstain, recall, synthesize
from .nodes.checks import reevaluate, remember, select_choice, verify
from .nodes.research import plan, replan, research
from .nodes.screening import classify_intent, contextualize, guard, respond
from .routing import (
    after_answer,
    after_guard,
    after_intent,
    after_recall,
    after_reevaluate,
    after_replan,
    after_research,
    after_verify,
)
from .state import QueryState


def build_query_graph(
    checkpointer: BaseCheckpointSaver[str] | None = None,
) -> CompiledStateGraph[QueryState, QueryDeps, QueryState, QueryState]:
    builder = StateGraph(QueryState, context_schema=QueryDeps)
    builder.add_node("guard", guard)
    builder.add_node("contextualize", contextualize)
    builder.add_node("classify_intent", classify_intent)
    builder.add_node("respond", respond)
    builder.add_node("recall", recall)
    builder.add_node("plan", plan)
    builder.add_node("research", research)
    builder.add_node("replan", replan)
    builder.add_node("synthesize", synthesize)
    builder.add_node("verify", verify)
    builder.add_node("reevaluate", reevaluate)
    builder.add_node("remember", remember)
    builder.add_node("select_choice", select_choice)
    builder.add_node("abstain", abstain)
    builder.add_edge(START, "guard")
    builder.add_conditional_edges("guard", after_guard)
    builder.add_edge("contextualize", "classify_intent")
    builder.add_conditional_edges("classify_intent", after_intent)
    builder.add_conditional_edges("recall", after_recall)
    builder.add_edge("plan", "research")
    builder.add_conditional_edges("research", after_research)
    builder.add_conditional_edges("replan", after_replan)
    builder.add_edge("synthesize", "verify")
    builder.add_conditional_edges("verify", after_verify)
    builder.add_conditional_edges("reevaluate", after_reevaluate)
    builder.add_edge("respond", END)
    builder.add_conditional_edges("remember", after_answer)
    builder.add_conditional_edges("abstain", after_answer)
    builder.add_edge("select_choice", END)
    return builder.compile(checkpointer=checkpointer, name="query")
