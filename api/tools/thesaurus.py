"""Lay-term thesaurus: the words people use mapped to the words the statutes use, applied to queries.

"My boss sacked me" shares no word with "an employer may not unfairly dismiss an employee", so neither search side
finds the provision. The curated, versioned data file ``api/data/lay_terms.toml`` maps lay words and phrases
("boss", "sacked", "lobola") to legal terms ("employer", "dismissal", "marriage consideration"); at query time the
legal terms a question calls for are added to the BM25 query and to the text the dense search embeds. The file is
loaded and validated once at start-up, so a broken entry fails the boot, not a request.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from api.errors import ConfigError

log = logging.getLogger(__name__)
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "lay_terms.toml"
# A lay phrase matches as whole words: letters, digits, hyphens and apostrophes on either side end a match.
_EDGE_BEFORE, _EDGE_AFTER = r"(?<![\w'-])", r"(?![\w'-])"


def _normal(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


class _Entry(BaseModel):
    lay: list[str] = Field(min_length=1)
    legal: list[str] = Field(min_length=1)

    @field_validator("lay", "legal")
    @classmethod
    def _clean(cls, values: list[str]) -> list[str]:
        cleaned = [_normal(v) for v in values]
        if any(not v for v in cleaned):
            raise ValueError("empty term")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError(f"repeated term in {values}")
        return cleaned


class _ThesaurusFile(BaseModel):
    version: str = Field(min_length=1)
    entry: list[_Entry] = Field(min_length=1)

    @model_validator(mode="after")
    def _no_duplicate_lay(self) -> _ThesaurusFile:
        seen: set[str] = set()
        for entry in self.entry:
            for lay in entry.lay:
                if lay in seen:
                    raise ValueError(f"lay term {lay!r} appears in two entries; merge them")
                seen.add(lay)
        return self


def with_legal_terms(query: str, added: Sequence[str]) -> str:
    """``query`` with the legal terms a search added in brackets after it: the meaning the dense search embeds."""
    return f"{query} ({', '.join(added)})" if added else query


@dataclass(frozen=True, slots=True)
class Expansion:
    """What the thesaurus made of one query."""

    query: str
    matched: tuple[str, ...]
    """Lay words and phrases found in the query, in the order they occur."""
    added: tuple[str, ...]
    """Legal terms the query did not already contain, in the order their lay words occur."""

    @property
    def lexical_query(self) -> str:
        """The BM25 query: the question's own words, then the legal terms."""
        return f"{self.query} {' '.join(self.added)}" if self.added else self.query

    @property
    def dense_query(self) -> str:
        """The text the dense search embeds: the question with the legal terms in brackets after it."""
        return with_legal_terms(self.query, self.added)


@dataclass(frozen=True, slots=True)
class Thesaurus:
    version: str
    entries: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    """(lay phrases, legal terms) per entry, normalised to lower case."""
    _legal: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_phrase = {lay: legal for lays, legal in self.entries for lay in lays}
        # Longest phrases first, so "church wedding" wins over "wedding".
        phrases = sorted(by_phrase, key=lambda p: (-len(p), p))
        pattern = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in phrases)
        object.__setattr__(self, "_legal", by_phrase)
        object.__setattr__(self, "_pattern", re.compile(f"{_EDGE_BEFORE}(?:{pattern}){_EDGE_AFTER}", re.IGNORECASE))

    def __len__(self) -> int:
        return len(self.entries)

    def legal_terms(self, lay: str) -> tuple[str, ...]:
        """The legal terms one lay word or phrase maps to; () when it is not in the thesaurus."""
        return self._legal.get(_normal(lay), ())

    def expand(self, query: str, in_use: Callable[[str], bool] | None = None) -> Expansion:
        """Find the query's lay words and the legal terms they call for (those the query lacks).

        ``in_use`` says whether the corpus itself uses a word commonly; a lay phrase whose every word it does use
        is left alone ("landlord" in a statute that says landlord throughout needs no "lessor").
        """
        text = _normal(query)
        matched: list[str] = []
        added: list[str] = []
        for match in self._pattern.finditer(text):
            lay = " ".join(match.group(0).split())
            if lay in matched:
                continue
            matched.append(lay)
            if in_use is not None and all(in_use(word) for word in re.findall(r"[a-z0-9]+", lay)):
                continue
            for term in self.legal_terms(lay):
                if term not in added and not re.search(_EDGE_BEFORE + re.escape(term) + _EDGE_AFTER, text):
                    added.append(term)
        return Expansion(query=query, matched=tuple(matched), added=tuple(added))

    def related(self, words: Iterable[str]) -> dict[str, set[str]]:
        """For each word (or phrase) given, the single words of the legal terms it maps to (for coverage checks)."""
        return {w: {part for term in self.legal_terms(w) for part in re.findall(r"[a-z0-9]+", term)} for w in words}

    def lay_phrases(self) -> Sequence[str]:
        return [lay for lays, _ in self.entries for lay in lays]


def load_thesaurus(path: Path | None = None) -> Thesaurus:
    """Read and validate the thesaurus file (the packaged one by default); raise ConfigError naming the problem."""
    source = path or DEFAULT_PATH
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
        parsed = _ThesaurusFile.model_validate(raw)
    except FileNotFoundError:
        raise ConfigError(f"lay-term thesaurus {source} does not exist (retrieval.lay_terms_path)") from None
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"lay-term thesaurus {source} is invalid: {exc}") from None
    thesaurus = Thesaurus(parsed.version, tuple((tuple(e.lay), tuple(e.legal)) for e in parsed.entry))
    log.info("lay-term thesaurus %s: %d entries", thesaurus.version, len(thesaurus))
    return thesaurus
