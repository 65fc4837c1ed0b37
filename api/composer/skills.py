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
_CHOICES = re.compile(r'"[^"]*"(?:\s*\|\s*"[^"]*")+')  # "simple" | "multi_hop": values to pick, not descriptions


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    variables: tuple[str, ...]
    system: str
    user: str
    placeholders: frozenset[str]
    """The reply template's value descriptions ("a better query, or empty", "..."), casefolded: a small model
    sometimes copies one back as its answer (a rewrite that reads "a better query, or empty")."""

    def scrub(self, reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` with every string that only copies a template description emptied, at any depth (a list
        drops such an item)."""

        def copied(value: object) -> bool:
            return isinstance(value, str) and value.strip().casefold() in self.placeholders

        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {key: clean(v) for key, v in value.items()}
            if isinstance(value, list):
                return [clean(v) for v in value if not copied(v)]
            return "" if copied(value) else value

        return clean(reply)  # type: ignore[no-any-return]

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
    system = sections["System"]
    template = system[system.find("{{") : system.rfind("}}") + 2] if "{{" in system else ""
    # Descriptions: quoted with a space in them, or an ellipsis; never a key, nor a value offered as a choice.
    offered = {c.strip().strip('"').casefold() for group in _CHOICES.findall(template) for c in group.split("|")}
    quoted = {q.strip().casefold() for q in _QUOTED.findall(template)} - offered
    placeholders = frozenset(q for q in quoted if " " in q or q.strip(".") == "")
    return Skill(name, meta.get("description", ""), variables, sections["System"], sections["User"], placeholders)


def load_skills(directory: Path = SKILLS_DIR) -> dict[str, Skill]:
    skills = {s.name: s for s in map(parse_skill, sorted(directory.glob("*.md")))}
    if "synthesize" not in skills:
        raise ConfigError(f"no 'synthesize' skill in {directory}")
    return skills
