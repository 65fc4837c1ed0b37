"""HTTP routes: validate input, call one orchestrator, stream its events. No business rules here."""
