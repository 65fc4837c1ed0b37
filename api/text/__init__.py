"""Text utilities shared by ingestion, retrieval and verification: words and stems, the sentences a provision may
be quoted by, where a provision's subsections start, and the laws a text names. Nothing here imports ``api.tools``
or ``api.composer``: both import it.
"""
