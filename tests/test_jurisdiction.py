"""No jurisdiction's words in code meant for any: the rules read them from api/data/jurisdiction.toml."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from api.composer.judge.facts import facts
from api.composer.judge.rules import support
from api.composer.jurisdiction import JURISDICTION

ROOT = Path(__file__).resolve().parent.parent
GENERAL_CODE = ["api/composer", "api/orchestrators", "api/tools"]


def strings_in_code(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings (which may name examples)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]  # fmt: skip


def test_the_jurisdictions_words_are_in_its_data_file_not_in_the_code() -> None:
    words = [*JURISDICTION.currencies, *JURISDICTION.place_words, *JURISDICTION.folds]
    assert len(words) >= 5
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", re.I)
    found = [f"{path.relative_to(ROOT)}:{line}: {pattern.findall(text)}"
             for folder in GENERAL_CODE for path in sorted((ROOT / folder).rglob("*.py"))
             for line, text in strings_in_code(path) if pattern.search(text)]  # fmt: skip
    assert found == []


def test_the_rules_still_read_the_jurisdictions_words() -> None:
    assert facts("a fine of ZWL 500").currency and facts("a fine of ZiG 20").currency
    assert not facts("a fine of 500").currency
    provision = "An employer shall not dismiss an employee without notice."
    assert (
        support("My employer sacked an employee without notice.", provision).score
        >= support("My employer praised an employee without notice.", provision).score
    )
