"""LangGraph flows; each in its own package as state / nodes / routing / graph."""
