"""The README and the benchmarks' index point at files that exist, and the index lists every benchmark and result.

The documentation site's own links are checked by ``mkdocs build --strict``; these two files live outside it.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(page.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_in_the_readmes_resolves() -> None:
    for page in (ROOT / "README.md", BENCHMARKS / "README.md"):
        targets = relative_links(page)
        assert targets, page
        missing = [t for t in targets if not (page.parent / t).exists()]
        assert missing == [], f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_the_benchmarks_index_lists_every_script_and_every_result() -> None:
    index = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([^`\s]+)`", index))
    helpers = {"report.py"}  # shared by the scripts, not a benchmark of its own
    scripts = sorted(p.name for p in BENCHMARKS.iterdir() if p.suffix in {".py", ".sh"} and p.name not in helpers)
    assert [s for s in scripts if s not in index] == []
    patterns = [n for n in named if "*" in n]
    results = sorted(p.name for p in (BENCHMARKS / "results").iterdir())
    unlisted = [r for r in results if r not in named and not any(fnmatch.fnmatch(r, p) for p in patterns)]
    assert unlisted == [], f"results not in benchmarks/README.md: {unlisted}"


def test_the_readme_stays_short_and_opens_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]
