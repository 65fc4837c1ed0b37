"""Prompts as named markdown resources in ``skills/``, each declaring its variables, checked at start-up.

A skill file is front matter (``name``, ``description``, ``variables``) and two sections, ``## System`` and
``## User``, whose ``{placeholders}`` must be exactly the declared variables.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.errors import ConfigError

SKILLS_DIR = Path(__file__).resolve().parents[2] / "skills"
_FRONT = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.S)
_SECTION = re.compile(r"^## (System|User)\s*$", re.M)
_QUOTED = re.compile(r'"([^"]*)"')


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    variables: tuple[str, ...]
    system: str
    user: str
    placeholders: frozenset[str] = frozenset()
    """The reply template's value descriptions ("a better query, or empty", "..."), casefolded: a small model
    sometimes copies one back as its answer (Qwen2.5-Coder-1.5B rewrote a query to "a better query, or empty")."""

    def scrub(self, reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` with every string (or list item) that only copies a template description emptied (dropped)."""

        def copied(value: object) -> bool:
            return isinstance(value, str) and value.strip().casefold() in self.placeholders

        out: dict[str, Any] = {}
        for key, value in reply.items():
            if isinstance(value, list):
                out[key] = [v for v in value if not copied(v)]
            else:
                out[key] = "" if copied(value) else value
        return out

    def render(self, **values: str) -> tuple[str, str]:
        """Return (system, user) with every declared variable filled; a missing or extra one is an error."""
        if set(values) != set(self.variables):
            raise ConfigError(f"skill {self.name} takes {sorted(self.variables)}, got {sorted(values)}")
        return self.system.format_map(values), self.user.format_map(values)


def _placeholders(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def parse_skill(path: Path) -> Skill:
    match = _FRONT.match(path.read_text(encoding="utf-8"))
    if not match:
        raise ConfigError(f"skill {path.name}: missing '---' front matter")
    meta: dict[str, str] = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        meta[key.strip()] = value.strip()
    variables = tuple(v.strip() for v in meta.get("variables", "").strip("[]").split(",") if v.strip())
    pieces = _SECTION.split(match.group(2))
    sections = {pieces[i]: pieces[i + 1].strip() for i in range(1, len(pieces) - 1, 2)}
    if set(sections) != {"System", "User"}:
        raise ConfigError(f"skill {path.name}: needs '## System' and '## User' sections")
    try:
        used = _placeholders(sections["System"]) | _placeholders(sections["User"])
    except ValueError as exc:
        raise ConfigError(f"skill {path.name}: bad placeholder ({exc})") from exc
    if used != set(variables):
        raise ConfigError(f"skill {path.name}: declares {sorted(variables)} but uses {sorted(used)}")
    name = meta.get("name") or path.stem
    template = [line for line in sections["System"].splitlines() if "{{" in line or "}}" in line]
    # Descriptions, not a choice of values ("simple" | "multi_hop") nor keys: a space in them, or an ellipsis.
    described = {q.strip().casefold() for line in template for q in _QUOTED.findall(line)}
    placeholders = frozenset(q for q in described if " " in q or q.strip(".") == "")
    return Skill(name, meta.get("description", ""), variables, sections["System"], sections["User"], placeholders)


def load_skills(directory: Path = SKILLS_DIR) -> dict[str, Skill]:
    skills = {s.name: s for s in map(parse_skill, sorted(directory.glob("*.md")))}
    if "synthesize" not in skills:
        raise ConfigError(f"no 'synthesize' skill in {directory}")
    return skills
