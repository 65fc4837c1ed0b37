"""Request models, stored document models and the SSE event models."""
