"""The jurisdiction's words the rules need (currency codes, its own name, everyday word folds), read once from
``api/data/jurisdiction.toml`` so that no jurisdiction's words are written into code meant for any."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

PATH = Path(__file__).resolve().parent.parent / "data" / "jurisdiction.toml"


@dataclass(frozen=True, slots=True)
class Jurisdiction:
    version: str
    currencies: tuple[str, ...]
    place_words: frozenset[str]
    other_places: frozenset[str]
    folds: dict[str, str]

    def currency_pattern(self) -> str:
        """The currency codes as one regular-expression alternation (escaped)."""
        return "|".join(re.escape(code) for code in self.currencies) or r"(?!x)x"


def load_jurisdiction(path: Path = PATH) -> Jurisdiction:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Jurisdiction(
        version=str(data["version"]),
        currencies=tuple(str(c) for c in data.get("currencies", [])),
        place_words=frozenset(str(w).lower() for w in data.get("place_words", [])),
        other_places=frozenset(str(w).lower() for w in data.get("other_places", [])),
        folds={str(k).lower(): str(v) for k, v in data.get("folds", {}).items()},
    )


JURISDICTION = load_jurisdiction()
