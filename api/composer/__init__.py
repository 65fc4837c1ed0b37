"""Prompts (skills) and answer composition: extractive quotes or LLM synthesis, both with citations."""
