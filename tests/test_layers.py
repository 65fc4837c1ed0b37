"""The import layers stay one-way: ``api.text`` (words, sentences, provisions, named laws) imports neither the tools
nor the composer, and the tools (retrieval, ingestion's indexes) never import the composer, which imports both.

The claim judge and its gate (``api.composer.judge``) sit inside the composer: they read text handed to them and
never reach up to the graph, the routers or the clients; their modules import each other in one order; and the rest
of the composer uses only the judge's readings of text (facts, meaning, topic), never the gate above it."""

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
    [
        ("text", ("api.tools", "api.composer", "api.orchestrators")),
        ("tools", ("api.composer",)),
        ("composer/judge", ("api.orchestrators", "api.routers", "api.services", "api.main", "api.workers")),
        ("composer/judge", ("api.tools", "api.streams", "api.deps")),
    ],
)
def test_a_lower_layer_never_imports_a_higher_one(layer: str, forbidden: tuple[str, ...]) -> None:
    files = sorted((API / layer).glob("*.py"))
    assert files
    wrong = {f"{f.name}: {name}" for f in files for name in imported(f) if name.startswith(forbidden)}
    assert not wrong


JUDGE_ORDER = ("polarity", "facts", "meaning", "clauses", "conditions", "limbs", "topic", "parties", "cases", "rules",
               "learned", "judge", "quotes", "gate", "streaming", "choice")  # fmt: skip
"""The judge's modules, one job each, in the order they may import each other: each only those before it."""
TEXT_READINGS = ("facts", "meaning", "clauses", "topic", "polarity")
"""The judge's readings of text: pure functions over strings, which the rest of the composer may use."""


def test_the_judge_modules_import_each_other_in_one_order() -> None:
    package = API / "composer" / "judge"
    assert {f.stem for f in package.glob("*.py")} == {"__init__", *JUDGE_ORDER}
    wrong = []
    for rank, name in enumerate(JUDGE_ORDER):
        for module in imported(package / f"{name}.py"):
            if module.startswith("api.composer.judge."):
                used = module.removeprefix("api.composer.judge.")
                if used not in JUDGE_ORDER[:rank]:
                    wrong.append(f"{name} imports {used}")
    assert wrong == []


def test_the_judge_readings_of_text_import_only_text_and_the_jurisdiction() -> None:
    allowed = ("api.text", "api.composer.jurisdiction", *(f"api.composer.judge.{n}" for n in TEXT_READINGS))
    package = API / "composer" / "judge"
    wrong = {f"{n}: {m}" for n in TEXT_READINGS for m in imported(package / f"{n}.py") if not m.startswith(allowed)}
    assert wrong == set()


def test_the_rest_of_the_composer_uses_only_the_judge_readings_of_text() -> None:
    readings = tuple(f"api.composer.judge.{n}" for n in TEXT_READINGS)
    files = sorted((API / "composer").glob("*.py"))
    wrong = {f"{f.name}: {m}" for f in files for m in imported(f) if m.startswith("api.composer.judge") and
             not m.startswith(readings)}  # fmt: skip
    assert wrong == set()


def test_the_reader_sees_relative_imports() -> None:
    """The check can fail: relative imports, one and two levels up, are read as the modules they name."""
    sample = API / "composer" / "judge" / "gate.py"
    assert {"api.composer.judge.rules", "api.composer.citations"} <= imported(sample)
