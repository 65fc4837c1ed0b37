"""Which version of a law is in force on a day: each document's consolidation, commencement and repeal dates, and the
documents that are versions of one law.

A document's dates come from its source (``Document.dates``: ``expression``, the consolidation its text reflects;
``commencement`` where the source gives one; ``enacted``) and from its own words: "This Act shall come into operation
on the 1st July, 2019" (or "is deemed to have come into operation on …", "comes into force on …") gives the whole
document's commencement; "on a date to be fixed" gives none. Where no commencement is known, a document cannot have
been in force before the year in its id (``…/act/2022/1``), its enactment at the earliest. A repeal
(``api.tools.repeals``) takes effect when the repealing document commences; when that is unknown, not before the
repealing document's own earliest day.

Two documents of one tenant are versions of one law when one repeals the other (a new Act replacing the old one), or
when their titles are the same but for a year ("Rent Act, 1982" and "Rent Act, 2020"). On a day, the versions of a
law rank: in force, then not known, then repealed by a document whose commencement is not known, then not in force
(not yet commenced, or repealed before the day); the later of two equally ranked versions comes first.

Ingestion writes each document's dates beside the lexical index (``VERSIONS_KEY``); the corpus reads them at load.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from api.schemas.documents import Document
from api.text.instruments import instruments_named, title_words
from api.tools.object_store import ObjectStore, get_json, put_json
from api.tools.repeals import Repeal

VERSIONS_KEY = "indexes/versions.json"
DAYS_KEPT = 64
"""Days whose documents not in force are kept worked out (each is a tuple of doc keys)."""
Status = Literal["in_force", "unknown", "repeal_undated", "not_in_force"]
"""How a document stands on a day (best first): in force; nothing known; repealed by a document whose commencement
is not known, on or after its earliest day; not in force (not yet commenced, or repealed before the day)."""
RANK: dict[Status, int] = {"in_force": 0, "unknown": 1, "repeal_undated": 2, "not_in_force": 3}

_MONTH_NAMES = "January February March April May June July August September October November December".split()
_MONTHS = {m.lower(): n for n, m in enumerate(_MONTH_NAMES, 1)}
_MONTH = "|".join(_MONTH_NAMES)
_DAY_MONTH_YEAR = rf"(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m>{_MONTH}),?\s+(?P<y>\d{{4}})"
_MONTH_DAY_YEAR = rf"(?P<m2>{_MONTH})\s+(?P<d2>\d{{1,2}}),?\s+(?P<y2>\d{{4}})"
_ISO = r"(?P<iso>\d{4}-\d{2}-\d{2})"
# The whole document ("This Act", "This Ordinance", …, capitalised) as the subject: "Sections 8 and 9 of this Act
# shall come into operation …" commences a part of it, not the document.
_COMMENCES = re.compile(
    r"\bThis\s+(?:Act|Ordinance|Code|Law|Decree|Proclamation|Constitution|Regulations)\s+"
    r"(?:shall\s+(?:be\s+deemed\s+to\s+have\s+)?|is\s+deemed\s+to\s+have\s+)?(?:come|comes|came)\s+"
    r"into\s+(?:operation|force|effect)\s+on\s+(?:the\s+)?"
    rf"(?:{_DAY_MONTH_YEAR}|{_MONTH_DAY_YEAR}|{_ISO})"
)
_YEAR_IN_KEY = re.compile(r"/(?:act|si|ord|[a-z]+)/(?:[a-z]+/)?(\d{4})/")
_TITLE_YEAR = re.compile(r",?\s*\(?\b(\d{4})\)?\s*$")


class Version(BaseModel):
    """One document's dates (ISO; '' when not known), as ingestion read them."""

    title: str
    tenant: str = ""
    consolidated: str = Field("", description="The consolidation (expression) date the text reflects.")
    commenced: str = Field("", description="When the whole document came into force, where its source says.")
    earliest: str = Field(
        "", description="The earliest day it can have been in force: its enactment, else 1 January of its id's year."
    )


def iso_day(text: str) -> str:
    """A real date as YYYY-MM-DD from its words ("1st July, 2019", "July 1, 2019", "2019-07-01"); '' if none."""
    found = re.search(rf"{_DAY_MONTH_YEAR}|{_MONTH_DAY_YEAR}|{_ISO}", text, re.I)
    return _as_iso(found) if found else ""


def _as_iso(found: re.Match[str]) -> str:
    parts = found.groupdict()
    try:
        if parts.get("iso"):
            return dt.date.fromisoformat(parts["iso"]).isoformat()
        day, month, year = (parts["d"], parts["m"], parts["y"]) if parts.get("d") else (
            parts["d2"], parts["m2"], parts["y2"])  # fmt: skip
        return dt.date(int(year), _MONTHS[month.lower()], int(day)).isoformat()
    except (ValueError, KeyError):
        return ""


def commencement(document: Document) -> str:
    """When the whole document came into force: its source's commencement date, else the date its text gives in a
    sentence whose subject is the document ("This Act shall come into operation on …"); '' when neither says (a date
    "to be fixed" by notice is not known from the text)."""
    if stated := iso_day(document.dates.get("commencement", "")):
        return stated
    for section in document.sections:
        # A plain substring test first: the pattern is run on the few provisions that can hold it.
        if "into" in section.text and (found := _COMMENCES.search(section.text)):
            return _as_iso(found)
    return ""


def earliest_day(document: Document) -> str:
    """The earliest day ``document`` can have been in force: its enactment date, else 1 January of the year in its id
    (a law is not in force before it is made); '' when neither is known. Never its consolidation date, which may be
    long after it commenced."""
    if enacted := iso_day(document.dates.get("enacted", "")):
        return enacted
    year = _YEAR_IN_KEY.search(document.doc_key)
    return f"{year.group(1)}-01-01" if year else ""


def find_versions(documents: Iterable[Document]) -> dict[str, Version]:
    """Each document's dates, by doc key."""
    return {
        d.doc_key: Version(
            title=d.title,
            tenant=d.tenant,
            consolidated=iso_day(d.dates.get("expression", "")),
            commenced=commencement(d),
            earliest=earliest_day(d),
        )  # fmt: skip
        for d in documents
    }


async def save_versions(store: ObjectStore, versions: Mapping[str, Version]) -> None:
    await put_json(store, VERSIONS_KEY, {key: v.model_dump() for key, v in sorted(versions.items())})


async def load_versions(store: ObjectStore) -> dict[str, Version]:
    """What the last ingestion found; empty for a data dir ingested before dates were read (every document's dates
    are then not known, and every document is admitted on any day)."""
    raw = await get_json(store, VERSIONS_KEY)
    return {key: Version.model_validate(value) for key, value in (raw or {}).items()}


def short_title(title: str) -> frozenset[str]:
    """The words that identify a law by its title, less a trailing year: "Rent Act, 2020" and "Rent Act" share it."""
    return frozenset(title_words(_TITLE_YEAR.sub("", title.strip())))


def today() -> str:
    """Today's date (UTC) as YYYY-MM-DD: the day a question without ``as_of`` asks about."""
    return dt.datetime.now(dt.UTC).date().isoformat()


class Versions:
    """The corpus's documents' dates and repeals, read on a day: whether a document is in force, and which of the
    versions of one law to prefer."""

    def __init__(self, versions: Mapping[str, Version], repeals: Mapping[str, Repeal]) -> None:
        self.versions = dict(versions)
        self.repeals = dict(repeals)
        self._left_out: dict[str, tuple[str, ...]] = {}
        self.group: dict[str, str] = {}
        """Doc key -> a key its law's versions share (only documents that have another version are here)."""
        parent: dict[str, str] = {}

        def root(key: str) -> str:
            while parent.setdefault(key, key) != key:
                parent[key] = parent[parent[key]]
                key = parent[key]
            return key

        def join(a: str, b: str) -> None:
            parent[root(a)] = root(b)

        for key, repeal in self.repeals.items():
            if key in self.versions and repeal.by_doc_key in self.versions:
                join(key, repeal.by_doc_key)
        by_title: dict[tuple[str, frozenset[str]], list[str]] = {}
        for key, version in self.versions.items():
            if words := short_title(version.title):
                by_title.setdefault((version.tenant, words), []).append(key)
        for keys in by_title.values():
            # Versions have different years: two documents of one title and one year (or none) are not two versions.
            dated = [key for key in keys if self.year(key)]
            if len({self.year(key) for key in dated}) > 1:
                for other in dated[1:]:
                    join(dated[0], other)
        members: dict[str, list[str]] = {}
        for key in parent:
            members.setdefault(root(key), []).append(key)
        self.group = {key: group for group, keys in members.items() if len(keys) > 1 for key in keys}
        self.members = {group: sorted(keys) for group, keys in members.items() if len(keys) > 1}

    def year(self, doc_key: str) -> str:
        """The year a document is of: the one its title ends with ("Rent Act, 2020"), else its earliest day's."""
        version = self.versions[doc_key]
        found = _TITLE_YEAR.search(version.title.strip())
        return found.group(1) if found else version.earliest[:4]

    def consolidated(self, doc_key: str) -> str:
        version = self.versions.get(doc_key)
        return version.consolidated if version else ""

    def repeal_day(self, doc_key: str) -> tuple[str, str]:
        """When ``doc_key``'s repeal took effect: (the day, where the repealing document's commencement is known;
        the earliest it can have, where only that document's earliest day is); ('', '') when not repealed or not
        known."""
        repeal = self.repeals.get(doc_key)
        by = self.versions.get(repeal.by_doc_key) if repeal else None
        if repeal is None or by is None:
            return "", ""
        return by.commenced, by.commenced or by.earliest

    def status(self, doc_key: str, day: str) -> Status:
        """How ``doc_key`` stands on ``day`` (ISO)."""
        version = self.versions.get(doc_key)
        repealed = doc_key in self.repeals
        if version is None:
            return "repeal_undated" if repealed else "unknown"
        start = version.commenced or version.earliest
        if start and day < start:
            return "not_in_force"
        if repealed:
            exact, lowest = self.repeal_day(doc_key)
            if exact and day >= exact:
                return "not_in_force"
            if not (lowest and day < lowest):
                return "repeal_undated"
        return "in_force" if start else "unknown"

    def not_in_force(self, day: str) -> tuple[str, ...]:
        """The documents known not to be in force on ``day``: not yet commenced, or repealed by a document in force
        before it. A document whose dates are not known is in force for this (it is never left out on a guess).
        Kept for the last few days asked about: every search of a question reads it."""
        if (known := self._left_out.get(day)) is None:
            known = tuple(sorted(k for k in {*self.versions, *self.repeals} if self.status(k, day) == "not_in_force"))
            if len(self._left_out) >= DAYS_KEPT:
                self._left_out.pop(next(iter(self._left_out)))
            self._left_out[day] = known
        return known

    def repealed_on(self, day: str, repealed_by: Mapping[str, str]) -> dict[str, str]:
        """``repealed_by`` less the repeals that had not taken effect on ``day`` (the repealing document was not in
        force yet): what "later law wins" reads for a question asked as of that day."""
        return {key: by for key, by in repealed_by.items() if self.status(key, day) != "in_force"}

    def _order(self, keys: Iterable[str], day: str) -> list[str]:
        """``keys`` best first on ``day``: by status, then the later version first."""

        def later(key: str) -> str:
            v = self.versions.get(key)
            return max(v.commenced or v.earliest, v.consolidated) if v else ""

        by_later = sorted(keys, key=later, reverse=True)
        return sorted(by_later, key=lambda k: RANK[self.status(k, day)])

    def preferred(self, doc_key: str, day: str) -> str:
        """The version of ``doc_key``'s law to quote on ``day``: the best of its versions (itself when it has none)."""
        group = self.group.get(doc_key)
        return self._order(self.members[group], day)[0] if group else doc_key

    def choose(
        self,
        doc_keys: Sequence[str],
        day: str,
        asked: str = "",
        cited: Iterable[str] = (),
        quoted: Collection[str] = (),
    ) -> dict[str, str]:
        """For each of ``doc_keys`` that is one of several versions of a law among them (and ``cited``), the one to
        quote: the version an answer already ``cited`` (what was sent stands), else the one ``asked`` names by its
        title when it names exactly one of them, else the best on ``day`` of those ``quoted`` (the versions whose
        words answer), or of all of them when none is."""
        present: dict[str, list[str]] = {}
        fixed = {self.group[key]: key for key in cited if key in self.group}
        for key in dict.fromkeys([*doc_keys, *fixed.values()]):
            if group := self.group.get(key):
                present.setdefault(group, []).append(key)
        named = [words for _, words in instruments_named(asked)]
        chosen: dict[str, str] = {}
        for group, keys in present.items():
            if len(keys) < 2:
                continue
            titled = [k for k in keys if any(words == short_title(self.versions[k].title) for words in named)]
            if group in fixed:
                pick = fixed[group]
            elif len(titled) == 1:
                pick = titled[0]
            else:
                pick = self._order([k for k in keys if k in quoted] or keys, day)[0]
            chosen |= dict.fromkeys(keys, pick)
        return chosen
