"""Build the query graph.

guard ──blocked──────────────────────────────────────────────► respond
  └──► contextualize ──► classify_intent ──not a legal question──► respond
                              └──rag_qa──► recall ──memory hit──► END
                                             └──► plan ──► research ◄──rewrite──┐
                                                            │  └────────────────┘
                                     multi-hop: replan ◄────┤──► abstain (nothing found)
                                        └──next step──► research
                                                            └──► synthesize ──► verify ──► remember
                                                                    ▲             │ failed once
                                                                    └─ research ◄─┘ (corrective step)
"""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from . import nodes
from .routing import after_guard, after_intent, after_recall, after_replan, after_research, after_verify
from .state import QueryState


def build_query_graph(
    checkpointer: BaseCheckpointSaver[str] | None = None,
) -> CompiledStateGraph[QueryState, nodes.QueryDeps, QueryState, QueryState]:
    builder = StateGraph(QueryState, context_schema=nodes.QueryDeps)
    builder.add_node("guard", nodes.guard)
    builder.add_node("contextualize", nodes.contextualize)
    builder.add_node("classify_intent", nodes.classify_intent)
    builder.add_node("respond", nodes.respond)
    builder.add_node("recall", nodes.recall)
    builder.add_node("plan", nodes.plan)
    builder.add_node("research", nodes.research)
    builder.add_node("replan", nodes.replan)
    builder.add_node("synthesize", nodes.synthesize)
    builder.add_node("verify", nodes.verify)
    builder.add_node("remember", nodes.remember)
    builder.add_node("abstain", nodes.abstain)
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
    builder.add_edge("respond", END)
    builder.add_edge("remember", END)
    builder.add_edge("abstain", END)
    return builder.compile(checkpointer=checkpointer, name="query")
