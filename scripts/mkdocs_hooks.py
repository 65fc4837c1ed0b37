"""MkDocs hooks: pages generated from the code at build time, so they cannot drift from it.

``<!-- settings-reference -->`` in a page becomes the configuration reference read from the ``Settings`` models
(:mod:`api.settings_reference`). The build fails when a setting has no description.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- settings-reference -->"
ROOT = Path(__file__).resolve().parents[1]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the marker with the generated settings tables, read from this checkout's code."""
    if MARKER not in markdown:
        return markdown
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the checkout being documented, not whatever copy the venv may hold
    reference = importlib.import_module("api.settings_reference")
    missing = reference.undocumented()
    if missing:
        raise SystemExit(f"settings without a description (add description= in api/settings.py): {missing}")
    text: str = reference.markdown()
    return markdown.replace(MARKER, text)
