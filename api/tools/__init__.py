"""Capabilities behind protocols: each module has a Protocol, its backends and a ``build_*`` factory."""
