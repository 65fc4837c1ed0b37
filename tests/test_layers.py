"""The import layers stay one-way: ``api.text`` (words, sentences, provisions, named laws) imports neither the tools
nor the composer, and the tools (retrieval, ingestion's indexes) never import the composer, which imports both."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

API = Path(__file__).resolve().parent.parent / "api"


def imported(path: Path) -> set[str]:
    """The ``api`` modules ``path`` imports, at any depth (a function-level import counts), relative ones resolved."""
    package = ["api", *path.parent.relative_to(API).parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.add(".".join([*base, *(node.module.split(".") if node.module else [])]))
    return {name for name in found if name.startswith("api.")}


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [("text", ("api.tools", "api.composer", "api.orchestrators")), ("tools", ("api.composer",))],
)
def test_a_lower_layer_never_imports_a_higher_one(layer: str, forbidden: tuple[str, ...]) -> None:
    files = sorted((API / layer).glob("*.py"))
    assert files
    wrong = {f"{f.name}: {name}" for f in files for name in imported(f) if name.startswith(forbidden)}
    assert not wrong


def test_the_reader_sees_relative_imports() -> None:
    """The check can fail: a relative import of the composer from a tools module would be read as one."""
    sample = API / "composer" / "judge.py"
    assert "api.composer.support" in imported(sample)
