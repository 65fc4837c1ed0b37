"""A citation written the way its jurisdiction's lawyers write it ("Marriages Act [Chapter 5:15], s 3(1)"), from the
per-jurisdiction templates in ``api/data/citation_style.toml``: the style is data, the code only fills it in."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

from api.text.schedules import split_label

PATH = Path(__file__).resolve().parent.parent / "data" / "citation_style.toml"
KINDS = ("statute", "statute_chaptered", "judgment", "other")
FALLBACKS = {"schedule": "other", "schedule_chaptered": "other"}
"""Kinds a style file may leave out, and the kind whose template stands in for them."""
ABBREVIATIONS = "abbreviations"
_YEAR_SUFFIX = re.compile(r",?\s*\d{4}$")
_SECTION = re.compile(r"s(\w+)((?:\(\w+\))*)")
_PARAGRAPH = re.compile(r"p(\d+)(?:\(\w+\))*")


@lru_cache(maxsize=4)
def load_styles(path: Path = PATH) -> dict[str, dict[str, str]]:
    """Each jurisdiction's templates, every kind filled from ``[default]`` where the jurisdiction leaves it out."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    default = {kind: str(data["default"][kind]) for kind in KINDS}
    default |= {kind: str(data["default"].get(kind, default[stand_in])) for kind, stand_in in FALLBACKS.items()}
    return {
        code.upper(): default | {k: str(v) for k, v in table.items() if k in default} for code, table in data.items()
    }


@lru_cache(maxsize=4)
def load_abbreviations(path: Path = PATH) -> dict[str, dict[str, str]]:
    """Each jurisdiction's short forms of the words that name a schedule's provision ("Schedule" -> "Sch"), from
    its ``abbreviations`` table; a jurisdiction without one takes the default's (none: words are written whole)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    default = {str(k): str(v) for k, v in data["default"].get(ABBREVIATIONS, {}).items()}
    return {code.upper(): default | {str(k): str(v) for k, v in t.get(ABBREVIATIONS, {}).items()}
            for code, t in data.items()}  # fmt: skip


def _abbreviated(words: str, short: dict[str, str]) -> str:
    """``words`` with each word ``short`` abbreviates replaced ("SCHEDULE 2" and "Schedule 2" -> "Sch 2")."""
    folded = {k.casefold(): v for k, v in short.items()}
    return re.sub(r"[A-Za-z]+", lambda m: folded.get(m.group(0).casefold(), m.group(0)), words)


def jurisdiction_for(doc_key: str, known: str = "") -> str:
    """The jurisdiction whose style a document is cited in: ``known`` (what ingestion read), else its key's first
    segment where a style table is named after it ("zw/act/2022/1"), else none (the default style)."""
    if known:
        return known.upper()
    first = doc_key.split("/", 1)[0].upper()
    return first if "/" in doc_key and first in load_styles() else ""


# A document's number in its year's series ("Act 1 of 2013", "No. 5 of 2001"), which a corpus may give where a
# consolidated law would have its chapter number.
_NUMBERED_BY_YEAR = re.compile(r"\bof\s+\d{4}\b", re.I)


def cite_as(
    title: str,
    section: str,
    provision_id: str,
    chapter: str = "",
    jurisdiction: str = "",
    styles: dict[str, dict[str, str]] | None = None,
    citation: str = "",
    abbreviations: dict[str, dict[str, str]] | None = None,
) -> str:
    """``title``'s provision ``provision_id`` (a provision id, "…#s3(1)") as its jurisdiction cites it; ``section``:
    the service's label ("section 3(1)"), for a provision that is neither a section nor a paragraph; ``citation``:
    how a judgment cites itself ("[2025] ZWHHC 48"), its title standing in where it has none. A schedule's provision
    (``section`` "paragraph 4(2) of Schedule 28") is cited by its schedule, "Sch 28 para 4(2)" where the
    jurisdiction's style abbreviates those words."""
    styles = styles or load_styles()
    table = styles.get(jurisdiction.upper()) or styles["DEFAULT"]
    fragment = provision_id.partition("#")[2].split("~")[0]
    chapter = re.sub(r"^\[?\s*chapter\s*", "", chapter.strip(), flags=re.I).rstrip("]").strip()
    if _NUMBERED_BY_YEAR.search(chapter):
        chapter = ""  # "Act 1 of 2013" numbers the Act in its year's series: no chapter of a consolidation
    values = {"title": title, "short_title": _YEAR_SUFFIX.sub("", title), "chapter": chapter, "label": section,
              "citation": citation or title}  # fmt: skip
    if scheduled := split_label(section):
        known = abbreviations or load_abbreviations()
        short = known.get(jurisdiction.upper()) or known.get("DEFAULT", {})
        unit, values["number"], schedule = scheduled
        values |= {"unit": unit, "schedule": schedule, "short_unit": _abbreviated(unit, short),
                   "short_schedule": _abbreviated(schedule, short)}  # fmt: skip
        kind = "schedule_chaptered" if chapter else "schedule"
    elif match := _SECTION.fullmatch(fragment):
        kind = "statute_chaptered" if chapter else "statute"
        values["number"] = match.group(1) + match.group(2)
    elif match := _PARAGRAPH.fullmatch(fragment):
        kind = "judgment"
        values["number"] = match.group(1)
    else:
        kind, values["number"] = "other", ""
    return table[kind].format_map(values)
