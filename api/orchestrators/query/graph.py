"""Build the query graph.

guard ──blocked──────────────────────────────► respond
  └──► classify_intent ──not a legal question──► respond
             └──rag_qa──► retrieve ──hits──► synthesize
                              └──nothing──► abstain
"""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from . import nodes
from .routing import after_guard, after_intent, after_retrieve
from .state import QueryState


def build_query_graph(
    checkpointer: BaseCheckpointSaver[str] | None = None,
) -> CompiledStateGraph[QueryState, nodes.QueryDeps, QueryState, QueryState]:
    builder = StateGraph(QueryState, context_schema=nodes.QueryDeps)
    builder.add_node("guard", nodes.guard)
    builder.add_node("contextualize", nodes.contextualize)
    builder.add_node("classify_intent", nodes.classify_intent)
    builder.add_node("respond", nodes.respond)
    builder.add_node("retrieve", nodes.retrieve)
    builder.add_node("synthesize", nodes.synthesize)
    builder.add_node("verify", nodes.verify)
    builder.add_node("abstain", nodes.abstain)
    builder.add_edge(START, "guard")
    builder.add_conditional_edges("guard", after_guard)
    builder.add_edge("contextualize", "classify_intent")
    builder.add_conditional_edges("classify_intent", after_intent)
    builder.add_conditional_edges("retrieve", after_retrieve)
    builder.add_edge("respond", END)
    builder.add_edge("synthesize", "verify")
    builder.add_edge("verify", END)
    builder.add_edge("abstain", END)
    return builder.compile(checkpointer=checkpointer, name="query")
