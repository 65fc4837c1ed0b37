"""The query graph: state, nodes by job, pure routing, the builder, and the orchestrator that streams its events."""

from .deps import QueryDeps
from .graph import build_query_graph
from .orchestrator import Asker, QueryOrchestrator

__all__ = ["Asker", "QueryDeps", "QueryOrchestrator", "build_query_graph"]
