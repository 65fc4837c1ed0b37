"""How a corpus's provisions lean on each other: the terms its documents define, and the references between them.

A provision rarely stands alone. "A spouse may apply …" means what the interpretation section says a spouse is, and
"subject to section 12" or "the period referred to in subsection (3)" carry their meaning from elsewhere. Ingestion
reads both from the documents' own text, for any jurisdiction's drafting in English, and writes them beside the
lexical index (``LINKS_KEY``); the corpus reads them at load.

- **Definitions**: a quoted term followed by "means", "includes" or "has the meaning" (``“spouse” means …``). Each
  runs to the next quoted definition or the provision's end. Its scope is the document unless the words before it
  say "In this section" (then that section only).
- **References**: "section 12", "sections 12 and 13", "section 12(3)(b)", "subsection (3)", "paragraph (b) of
  subsection (2)", "subsection (1) of section 4", "section 4 of the Labour Act [Chapter 28:01]", "the First
  Schedule". A reference resolves to a provision id only when that provision exists in the corpus: a section of the
  same document, or of the document a named law (by chapter number, else by title, within the same tenant) points
  to. A subsection or paragraph that cannot be found resolves to the nearest enclosing provision that can. What
  names another law that cannot be matched ("section 5 of Act 3 of 2022", "of that Act") is left unresolved: a
  wrong link is worse than none.

A judgment has no sections of its own: its references resolve only to a law it names ("s 7(4) of the Matrimonial
Causes Act", also in the short forms courts write, "s14"), never to its own paragraphs.

Each reference keeps the words that make it a dependency ("subject to", "in terms of", "referred to in", …), so
research can fetch what the cited evidence depends on and leave plain mentions alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from api.schemas.documents import Document, Section
from api.text.instruments import instruments_named, title_words
from api.text.provisions import provision_at, provision_starts
from api.text.schedules import schedule_key
from api.tools.object_store import ObjectStore, get_json, put_json
from api.tools.repeals import chapter_number

LINKS_KEY = "indexes/links.json"
LINKS_READER = 2
"""The version of the reader that finds links, stored with them: raised whenever ``find_links`` reads differently
(new reference forms, relations or definition shapes), so a data dir whose links an older reader wrote is known to
be stale until ``gweta ingest`` reads them again (0: written before versions were kept)."""
# Words before a reference that make the provision depend on the one referred to (its meaning comes from there).
DEPENDS = (
    "subject to",
    "in terms of",
    "referred to in",
    "specified in",
    "mentioned in",
    "described in",
    "contemplated in",
    "prescribed in",
    "set out in",
    "in accordance with",
    "for the purposes of",
    "within the meaning of",
)
APPLYING = "applying"
"""The relation of a reference to provisions that a provision makes its own ("sections 7 to 11 of the Companies Act
shall, with necessary changes, apply"): the words that make it come after the reference, so this word names them."""
# After a reference: the provisions named apply, with changes or not, where the referring provision says; never "shall
# not apply", which excludes them.
_APPLIES = re.compile(
    r"\s*,?\s*(?:(?:shall|will|do|does|are\s+to|is\s+to)\s*)?(?:also\s+)?"
    r"(?:,\s*(?:with\s+(?:the\s+)?(?:necessary|such)\s+(?:changes|modifications|adaptations)[^,]{0,60}|mutatis\s+"
    r"mutandis|so\s+far\s+as\s+(?:they\s+are|it\s+is)\s+applicable)\s*,\s*)?(?:also\s+)?appl(?:y|ies)\b",
    re.I,
)
_EXCEPT = re.compile(r"\b(?:nothing\s+in|none\s+of|neither)\s+(?:the\s+)?$", re.I)
"""Before a reference, the words that turn "… applies" into an exclusion ("nothing in section 5 applies to …")."""
# The words that make a provision depend on another for its meaning, most binding first. "in terms of" also points
# to where something was made ("established in terms of section 4"), so it comes last. Research follows only these,
# and an answer quotes only what these name; a plain mention is not followed at all.
FOLLOWED = ("subject to", "referred to in", "specified in", "mentioned in", "described in", "contemplated in",
            "set out in", "within the meaning of", "in accordance with", APPLYING, "in terms of")  # fmt: skip
_DEPENDS = re.compile(r"\b(" + "|".join(d.replace(" ", r"\s+") for d in DEPENDS) + r")\s+(?:the\s+)?$", re.I)
_QUOTE_OPEN = "\"“‘'"
_QUOTE_CLOSE = "\"”’'"
# A quoted term. A definition may give several that share one meaning ("“court” or “the court” … means", "“write”,
# “written”, “writing” includes"): each is defined, and none is read as the end of the definition before.
_QUOTED_TERM = rf"[{_QUOTE_OPEN}]\s*(?P<term>[^{_QUOTE_CLOSE}{_QUOTE_OPEN}\n]{{1,80}}?)\s*[{_QUOTE_CLOSE}]"
# Another term sharing the meaning is quoted in curly or double marks (a single straight mark is as often an
# apostrophe) and holds no bracket or comma, which a quoted clause of the meaning would.
_ALIASES = r"(?:\s*,?\s*(?:(?:and|or)\s+)?[“\"]\s*[^”\"“(),\n]{1,80}?\s*[”\"])*"
# Between a term and its verb: the setting the meaning holds in ("“court”, in relation to any matter …, means"), and
# the dash and first item mark of a meaning given as a list ("“premises”— (a) in relation to a shop, means").
_DEFINITION = re.compile(
    rf"(?P<terms>{_QUOTED_TERM}{_ALIASES})\s*,?\s*(?:[—–]\s*(?:\(\w{{1,4}}\)\s*)?)?"
    r"(?:(?:in relation to|in respect of|with respect to|in regard to|with reference to|when used (?:in|as)|"
    r"as applied to|for the purposes? of|in the case of|subject to|save as otherwise)[^;]{0,200}?,\s*)?"
    r"(?P<verb>means|includes|include|does not include|has the (?:same )?meaning|shall have the (?:same )?meaning|"
    r"bears the (?:same )?meaning|shall mean|shall include|refers to)\b",
)
# A list item's own mark: the last after a boundary in the definition's clause, not one after the word that names it
# ("(e) in paragraph (a) “tax” means": the item is (e)).
_ITEM_MARK_BEFORE = re.compile(r"(?:^|[;:.—–\]]\s*)\((?P<mark>[a-z]{1,4})\)\s[^;:.—–]*$")
# Where a run of several terms may begin: a boundary, or the ", and" that joins a second definition to a first
# ("“claim” includes “claims in reconvention”, and “plaintiff” and “defendant” include …"); a quoted phrase right
# after a definition's verb is its meaning.
_RUN_STARTS = re.compile(r"(?:^|[;:.—–\])]|,\s*(?:and|or))\s*(?:\[[^\]]*\]\s*)?$")
# A definition the law has repealed, left as its term and the editor's note: not part of the definition before it.
_REPEALED_TERM = re.compile(
    rf"(?<=[;.\]])\s*{_QUOTED_TERM.replace('?P<term>', '?:')}\s*\[definitions?\b[^\]]*\brepealed"
)
_TERM_IN_RUN = re.compile(_QUOTED_TERM)
_NEXT_ITEM = re.compile(r";\s*\(\w{1,4}\)[^;]*$")
_NEXT_PROVISION = re.compile(r"(?<=[.;\]])\s+(?=\(\d{1,3}[A-Za-z]?\)\s|\d{1,3}[A-Z]?\.\s+[A-Z])")
# "In this Part—", "In this Chapter, unless the context otherwise requires—": the words that open a run of definitions
# and say where they apply ("In this Act—" says the whole document). A capital "In" and the dash, comma or colon
# after tell them from a passing "… referred to in this Part".
_IN_THIS = re.compile(
    r"\b(?-i:In)\s+this\s+(section|paragraph|Part|Chapter|Schedule|Act|Code|Ordinance)\s*(?:[—–:,-]|unless\b)", re.I
)
_SUB = r"(?:\s*\(\s*\w{1,4}\s*\))"
_HYPHEN = "[\\s\\-\u2010\u2011\u2012\u2013\u00ad]+"
_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
# A section number as older statutes write it in words ("section forty-one"), up to ninety-nine; not a part of a
# larger one ("one hundred and three") or of a lettered one ("twenty-two A"), which are left unresolved.
_WORDS = (
    rf"(?>(?:{'|'.join(_TENS)})(?:{_HYPHEN}(?:{'|'.join(_UNITS)}))?|{'|'.join(_TEENS)}|{'|'.join(_UNITS)})"
    rf"\b(?!{_HYPHEN}hundred)(?!\s+[A-Z]\b)"
)
_NUMBER = rf"(?:\d{{1,4}}[A-Z]{{0,2}}\b|{_WORDS})"
_LIST = r"(?:\s*(?:,|and|or)\s*|\s+to\s+)"
"""Between two items of a list of provisions: a comma, "and", "or", or "to" (a range: "sections 7 to 11")."""
_RANGE_MAX = 12
"""A range spanning more sections or labels than this resolves to its two ends only: a whole Part named by its first
and last sections is not read as a dozen dependencies."""
_SECTIONS = re.compile(
    rf"\b(?i:sections?|ss?\.)\s+(?P<items>{_NUMBER}{_SUB}*(?:{_LIST}(?:(?i:section)\s+)?{_NUMBER}{_SUB}*)*)"
)
# Judgments also write "s 7(4)", "s14" and "ss 3 and 4" for another law's sections.
_CASE_SECTIONS = re.compile(
    rf"\b(?:(?i:sections?)\s+|(?i:ss?)\.?\s*(?=\d))"
    rf"(?P<items>{_NUMBER}{_SUB}*(?:{_LIST}(?:(?i:section|s)\s+)?{_NUMBER}{_SUB}*)*)"
)
_SUBSECTIONS = re.compile(
    rf"\b(?:(?i:paragraphs?|subparagraphs?)\s+(?P<par>{_SUB}(?:{_LIST}{_SUB})*)\s+of\s+)?"
    rf"(?i:subsections?)\s+(?P<subs>{_SUB}(?:{_LIST}{_SUB})*)"
)
_PARAGRAPHS = re.compile(rf"\b(?i:paragraphs?)\s+(?P<par>\(\s*[a-z]{{1,2}}\s*\)(?:{_LIST}\(\s*[a-z]{{1,2}}\s*\))*)")
_OF_SECTION = re.compile(rf"\s+of\s+section\s+(?P<number>{_NUMBER})")
_OF_THIS = re.compile(r"\s+of\s+this\s+(?:Act|Code|Constitution|Ordinance|Part|Chapter|section)\b", re.I)
_OF_LAW = re.compile(
    r"\s+of\s+(?P<law>(?:the\s+)?[A-Z][\w’'(),\- ]{2,120}?(?:Act|Code|Ordinance|Decree|Law|Constitution)"
    r"(?:,?\s+\d{4})?(?:\s*\[\s*Chapter\s*\d+:\d+\s*\])?)"
)
_OF = re.compile(r"\s+of\b")
# A provision that amends another law: the subsections and paragraphs it names are the amended law's, not its own.
_AMENDING = re.compile(
    r"\bis\s+(?:hereby\s+)?amended\b|\bby\s+the\s+(?:repeal|deletion|insertion|substitution)\s+of\b", re.I
)
# Editorial notes ("[subsection as amended by section 4 of Act 22 of 2001]") name the amending law, not a provision.
_NOTE = re.compile(r"\[[^\[\]]*\b(?:amended|substituted|inserted|repealed|added)\b[^\[\]]*\]", re.I)
_SCHEDULE = re.compile(
    r"\bthe\s+(?P<nth>First|Second|Third|Fourth|Fifth|Sixth|Seventh|Eighth|Ninth|Tenth|Eleventh|Twelfth)\s+Schedule"
    r"(?!\s+(?:to|of)\s+(?!this\b))",
    re.I,
)
_ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
_LABELS = re.compile(r"\(\s*(\w{1,4})\s*\)")


class Definition(BaseModel):
    """A term a document defines, with the verbatim words that define it."""

    term: str = Field(description="The term as the document writes it, e.g. 'spouse'.")
    doc_key: str
    provision_id: str = Field(description="The provision the definition is in (a section or finer).")
    text: str = Field(description="The definition, verbatim: from the quoted term to the end of its meaning.")
    scope: str = Field(
        "",
        description="Where it applies: '' for the whole document, a section id ('In this section …'), or 'part:' and "
        "the part path ('In this Part …').",
    )


class Reference(BaseModel):
    """One provision's reference to another, resolved to the provision it names."""

    source: str = Field(description="The provision the reference is in (the finest known).")
    target: str = Field(description="The provision referred to (the finest that exists).")
    words: str = Field(description="The referring words as written, e.g. 'subsection (3)'.")
    relation: str = Field("", description="The dependency words before it ('subject to', …); '' for a mention.")
    at: int = Field(0, description="Where the referring words start in the source section's text.")


class Links(BaseModel):
    """Everything ingestion found: definitions by document, references from every provision."""

    definitions: dict[str, list[Definition]] = Field(default_factory=dict)
    references: list[Reference] = Field(default_factory=list)
    reader: int = 0
    """``LINKS_READER`` of the code that found them."""

    @property
    def stale(self) -> bool:
        """Whether an older reader than this code's found them (or none did: a data dir ingested before links)."""
        return self.reader < LINKS_READER

    @functools.cached_property
    def _by_section(self) -> tuple[dict[str, list[Reference]], dict[str, list[Reference]]]:
        """References by the section they are made in, and by the section they point to: research asks for a few
        sections' references on every question, so the list is not scanned each time."""
        made: dict[str, list[Reference]] = {}
        received: dict[str, list[Reference]] = {}
        for reference in self.references:
            made.setdefault(reference.source.split("(")[0], []).append(reference)
            received.setdefault(reference.target.split("(")[0], []).append(reference)
        return made, received

    def refers_to(self, provision_id: str) -> list[Reference]:
        """References made inside ``provision_id`` or any provision within it."""
        made = self._by_section[0].get(provision_id.split("(")[0], [])
        return [r for r in made if _within(r.source, provision_id)]

    def referred_by(self, provision_id: str) -> list[Reference]:
        """References to ``provision_id`` or to any provision within it, from other sections."""
        section = provision_id.split("(")[0]
        received = self._by_section[1].get(section, [])
        return [r for r in received if _within(r.target, provision_id) and not _within(r.source, section)]

    def defined_in(self, text: str, doc_key: str, section_id: str = "", part: str = "") -> list[Definition]:
        """The definitions of ``doc_key`` whose term ``text`` uses (as a whole word), longest term first; those
        limited to a section or a part count only inside it (``part`` is the section's part path)."""
        found = []
        for definition in self.definitions.get(doc_key, []):
            if not _applies(definition.scope, section_id, part):
                continue
            # The definition's own words are not a use of its term.
            own = definition.provision_id.split("(")[0] == section_id
            haystack = text.replace(definition.text, " ") if own else text
            if re.search(rf"(?<![\w-]){re.escape(definition.term)}(?![\w-])", haystack, re.I):
                found.append(definition)
        return sorted(found, key=lambda d: -len(d.term))


def _within(provision_id: str, outer: str) -> bool:
    return provision_id == outer or provision_id.startswith(outer + "(")


def _scope(section: Section, before: str) -> str:
    """Where a definition applies, from the last "In this section / Part / Chapter / Schedule" before it: the
    section's id, "part:" and the section's part path down to that Part, Chapter or Schedule, or "" for the whole
    document. A definition inside a schedule applies at most within that schedule, whatever it says ("In this
    Act" in a schedule that holds another enactment is that enactment's): it is never the document's own."""
    path = [p for p in re.split(r"\s*(?:>|,)\s*", section.part) if p]
    schedule = "part:" + path[0] if schedule_key(section.part) else ""
    said = _IN_THIS.findall(before)
    if not said:
        return schedule
    unit = said[-1].lower()
    if unit in ("act", "code", "ordinance"):
        return schedule
    if unit in ("section", "paragraph"):
        return section.section_id
    for depth in range(len(path), 0, -1):
        if path[depth - 1].lower().startswith(unit) or (unit == "schedule" and depth == 1 and schedule):
            return "part:" + " > ".join(path[:depth])
    return schedule


def _applies(scope: str, section_id: str, part: str) -> bool:
    if not scope:
        return True
    if scope.startswith("part:"):
        path = " > ".join(p for p in re.split(r"\s*(?:>|,)\s*", part) if p)
        wanted = scope.removeprefix("part:")
        return path == wanted or path.startswith(wanted + " > ")
    return scope == section_id


def _run_may_start(text: str, at: int) -> bool:
    """Whether a run of terms may begin at ``at`` (``_RUN_STARTS``, read over the words just before it)."""
    return bool(_RUN_STARTS.search(text[max(0, at - 200) : at]))


def _anchored(text: str, match: re.Match[str]) -> re.Match[str]:
    """``match`` begun where its run of terms may begin (``_RUN_STARTS``): at its first term that follows a boundary,
    else at its last term alone."""
    terms = list(_TERM_IN_RUN.finditer(text, match.start(), match.start("verb")))
    if len(terms) < 2:
        return match
    # A quoted run holding a bracket or a comma is a clause of the meaning before, never a term.
    clauses = [n for n, t in enumerate(terms) if re.search(r"[(),]", t["term"])]
    if clauses:
        terms = terms[clauses[-1] + 1 :] or terms[-1:]
        rest = _DEFINITION.match(text, terms[0].start())
        return _anchored(text, rest) if rest else match
    if _run_may_start(text, match.start()):
        return match
    start = next((t.start() for t in terms[1:] if _run_may_start(text, t.start())), terms[-1].start())
    return _DEFINITION.match(text, start) or match


def find_definitions(document: Document) -> list[Definition]:
    """Every term ``document`` defines in its provisions' text."""
    found: list[Definition] = []
    for section in document.sections:
        text = section.text
        matches = [_anchored(text, match) for match in _DEFINITION.finditer(text)]
        if not matches or _AMENDING.search(text):
            continue  # definitions an amending provision writes into another law are that law's
        starts = provision_starts(text, section.section_id)
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            span = text[match.start() : end].rstrip()
            # A definition ends at its own closing punctuation: the next item's label ("; (b) subsection (1)(b)")
            # or the next subsection or section ("… year. (2) The …", "… members. 2. Terms of …") is not part of it.
            span = _NEXT_PROVISION.split(span, maxsplit=1)[0]
            span = _NEXT_ITEM.sub("", span) if i + 1 < len(matches) else span
            span = _REPEALED_TERM.split(span, maxsplit=1)[0]
            own = _ITEM_MARK_BEFORE.search(text[max(0, match.start() - 200) : match.start()])
            if own and len(own["mark"]) == 1 and own["mark"] != "z":
                # A definition that is itself a list's item ("for which purpose— (a) “shares” does not include …;
                # (b) the right shall be …") ends where the next item begins.
                sibling = rf";\s*(?:and\s+|or\s+)?(?=\({chr(ord(own['mark']) + 1)}\)\s)"
                span = re.split(sibling, span, maxsplit=1)[0]
            span = re.sub(r"\s*(?:;|,)?\s*(?:and|or)?\s*$", "", span).rstrip(" ;,")
            terms = [" ".join(t.group("term").split()).strip(" ,") for t in _TERM_IN_RUN.finditer(match["terms"])]
            terms = [t for t in dict.fromkeys(terms) if t and len(t.split()) <= 8]
            if not terms:
                continue
            # The last "In this …" anywhere before it: a long interpretation section's later definitions are as
            # limited as its first.
            scope = _scope(section, text[: match.start()])
            # Lettered markers in an interpretation section belong to the definitions before this one ("(a) a
            # document issued …"), so a definition is placed in its subsection at most.
            provision = re.sub(r"(?:\([a-z]{1,3}\))+$", "", provision_at(starts, match.start(), section.section_id))
            found += [Definition(term=term, doc_key=document.doc_key, provision_id=provision, text=span[:2000],
                                 scope=scope) for term in terms]  # fmt: skip
    return found


def _schedule_number(digits: str | None, ordinal: str | None) -> int:
    """The number of "Schedule 2" (``digits``) or "Second Schedule" (``ordinal``); 0 when neither is one."""
    if digits:
        return int(digits)
    word = (ordinal or "").lower()
    return _ORDINALS.index(word) + 1 if word in _ORDINALS else 0


class _Index:
    """Where a reference can point: every document's sections, their finer provisions, and laws by name."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.docs = {d.doc_key: d for d in documents}
        self.sections: dict[str, dict[str, Section]] = {}
        self.provisions: dict[str, set[str]] = {}
        self.schedules: dict[str, dict[int, str]] = {}
        self.schedule_sections: dict[tuple[str, str], dict[str, Section]] = {}
        """The sections of each schedule drafted in sections, by document and schedule: what "section 2" means inside
        it (a constitution's section 2, not its amending Act's)."""
        self.by_chapter: dict[tuple[str, str], list[str]] = {}
        self.by_title: dict[tuple[str, frozenset[str]], list[str]] = {}
        self.defined: dict[str, dict[str, str]] = {}
        """Per document, the laws its whole-document definitions name, by term: "the Criminal Law Code" names the
        law that '"Criminal Law Code" means the Criminal Law (Codification and Reform) Act [Chapter 9:23]' does."""
        for doc in documents:
            numbers: dict[str, Section] = {}
            schedules: dict[int, str] = {}
            for section in doc.sections:
                key = schedule_key(section.part)
                # "section 4" is never a schedule's paragraph 4 (only a schedule drafted in sections has sections).
                if not key or section.unit == "section":
                    numbers.setdefault(section.number.lower(), section)
                if key and section.unit == "section":
                    own = self.schedule_sections.setdefault((doc.doc_key, key), {})
                    own.setdefault(section.number.lower(), section)
                schedule = re.match(r"\s*(?:the\s+)?(?:schedule\s+(\d+)\b|(\w+)\s+schedule\b)", key, re.I)
                if schedule and (nth := _schedule_number(schedule.group(1), schedule.group(2))):
                    schedules.setdefault(nth, section.section_id)
            self.sections[doc.doc_key] = numbers
            self.schedules[doc.doc_key] = schedules
            if number := chapter_number(doc.chapter):
                self.by_chapter.setdefault((doc.tenant, number), []).append(doc.doc_key)
            self.by_title.setdefault((doc.tenant, frozenset(title_words(doc.title))), []).append(doc.doc_key)

    def provisions_of(self, section: Section) -> set[str]:
        if (known := self.provisions.get(section.section_id)) is None:
            known = {section.section_id} | {p for _, p in provision_starts(section.text, section.section_id)}
            self.provisions[section.section_id] = known
        return known

    def law(self, doc: Document, named: str, by_title: bool = False) -> str | None:
        """The document a reference's "of …" names, or None when it names none the corpus holds (or several). A
        chapter number names it, narrowed by the title named where several documents share the number; with
        ``by_title`` (a judgment's reference, where a wrong chapter number is a slip of the pen) a document whose
        title lacks the words named is not taken on the chapter number alone, and the title is looked up instead."""
        words = named.strip()

        if re.match(r"this\s+(?:Act|Code|Constitution|Ordinance)$", words, re.I):
            return doc.doc_key
        named_laws = instruments_named(words)
        titled = named_laws[0][1] if len(named_laws) == 1 else set()
        if chapter := re.search(r"Chapter\s*(\d+:\d+)", words):
            keys = self.by_chapter.get((doc.tenant, chapter.group(1)), [])
            if titled and (len(keys) > 1 or by_title):
                # The law whose title is the one named, else the only ones whose titles hold its words.
                same = [k for k in keys if title_words(self.docs[k].title) == titled]
                keys = same or [k for k in keys if titled <= title_words(self.docs[k].title)]
            if len(keys) == 1 or not by_title:
                return keys[0] if len(keys) == 1 else None
        if re.match(r"the\s+Constitution$", words, re.I):
            keys = [k for (tenant, title), ks in self.by_title.items() if tenant == doc.tenant and "constitution"
                    in title for k in ks]  # fmt: skip
            return keys[0] if len(set(keys)) == 1 else None
        if len(named_laws) != 1:
            return None
        keys = self.by_title.get((doc.tenant, frozenset(named_laws[0][1])), [])
        return keys[0] if len(keys) == 1 else None

    def defined_law(self, doc: Document, tail: str, by_title: bool = False) -> tuple[str, int] | None:
        """The law that the words after a reference name by a short name ``doc`` defines (" of the Criminal Law
        Code", where '"Criminal Law Code" means the Criminal Law (Codification and Reform) Act [Chapter 9:23]'), and
        how many characters of ``tail`` that took; None when they name none of its defined laws."""
        for term, meaning in sorted(self.defined_laws(doc).items(), key=lambda t: -len(t[0])):
            said = re.match(rf"\s+of\s+(?:the\s+)?{re.escape(term)}(?![\w-])", tail, re.I)
            if said is not None and (owner := self.law(doc, meaning, by_title)) is not None:
                return owner, said.end()
        return None

    def defined_laws(self, doc: Document) -> dict[str, str]:
        """The laws ``doc``'s whole-document definitions name, by the defined term (lower-cased): the words after
        "means" when they are a law's name and nothing more."""
        if (known := self.defined.get(doc.doc_key)) is None:
            known = {}
            for definition in find_definitions(doc):
                meaning = re.search(rf"[{_QUOTE_CLOSE}]\s*,?\s*means\s+(?P<law>.+?)[\s.;]*$", definition.text)
                law = _OF_LAW.fullmatch(" of " + meaning.group("law")) if meaning else None
                if law is not None and not definition.scope:
                    known.setdefault(_short_name(definition.term), law.group("law"))
            self.defined[doc.doc_key] = known
        return known

    def between(self, doc_key: str, items: str, schedule: str = "") -> list[str]:
        """The sections inside each range a list of sections names ("sections 7 to 11": 8, 9 and 10, in the
        document's order), none for a range spanning more than ``_RANGE_MAX`` sections (its two ends stand for it)."""
        numbers = self.schedule_sections.get((doc_key, schedule), {}) if schedule else {}
        numbers = numbers or self.sections.get(doc_key, {})
        order = list(numbers)
        found: list[str] = []
        for ranged in re.finditer(rf"({_NUMBER}){_SUB}*\s+to\s+(?:(?i:section)\s+)?({_NUMBER})", items):
            first, last = (section_number(n).lower() for n in ranged.groups())
            if first in numbers and last in numbers and 0 < order.index(last) - order.index(first) < _RANGE_MAX:
                found += [numbers[n].section_id for n in order[order.index(first) + 1 : order.index(last)]]
        return found

    def resolve(self, doc_key: str, number: str, labels: Sequence[str], schedule: str = "") -> str | None:
        """The finest existing provision of section ``number`` of ``doc_key`` down the path ``labels``; read inside
        ``schedule`` (a schedule drafted in sections), that schedule's own section first."""
        section = self.schedule_sections.get((doc_key, schedule), {}).get(number.lower()) if schedule else None
        section = section or self.sections.get(doc_key, {}).get(number.lower())
        return None if section is None else self.within(section, labels)

    def within(self, section: Section, labels: Sequence[str]) -> str:
        """The finest existing provision of ``section`` down the path ``labels`` (the section itself at worst)."""
        known = self.provisions_of(section)
        target = section.section_id
        for label in labels:
            finer = f"{target}({label})"
            if finer not in known:
                break
            target = finer
        return target


def _short_name(named: str) -> str:
    """A law's name as a defined term is written: without "the", spacing or case."""
    return " ".join(re.sub(r"^\s*the\s+", "", named, flags=re.I).split()).casefold()


def _items(text: str) -> list[tuple[str, list[str]]]:
    """The sections a list names ("7, 8(2) and 9"), each as its number in digits and the labels below it."""
    return [(section_number(number), _labels(subs)) for number, subs in re.findall(rf"({_NUMBER})((?:{_SUB})*)", text)]


def _labels(text: str) -> list[str]:
    """The labels of a list of provisions ("(2), (3) and (5)"), a range ("(2) to (5)", "(a) to (d)") read as every
    label in it; one spanning more than ``_RANGE_MAX`` as its two ends."""
    labels: list[str] = []
    for match in _LABELS.finditer(text):
        label = match.group(1)
        ranged = labels and re.fullmatch(r"\s+to\s+", text[_last_end(text, match.start()) : match.start()])
        if ranged:
            first = labels[-1]
            if first.isdigit() and label.isdigit():
                inner = [str(n) for n in range(int(first) + 1, int(label))]
            elif re.fullmatch(r"[a-z]", first) and re.fullmatch(r"[a-z]", label):
                inner = [chr(c) for c in range(ord(first) + 1, ord(label))]
            else:
                inner = []
            labels += inner if len(inner) + 2 <= _RANGE_MAX else []
        labels.append(label)
    return labels


def _last_end(text: str, before: int) -> int:
    """Where the label before ``before`` ends in ``text`` (0 if none)."""
    ends = [m.end() for m in _LABELS.finditer(text, 0, before)]
    return ends[-1] if ends else 0


def section_number(written: str) -> str:
    """A section number as digits: '12A' stays, 'forty-one' is '41'."""
    words = re.split(_HYPHEN, written.strip().lower())
    if words[0][0].isdigit():
        return written.strip()
    total = 0
    for word in words:
        if word in _TENS:
            total += 10 * (_TENS.index(word) + 2)
        elif word in _TEENS:
            total += 10 + _TEENS.index(word)
        elif word in _UNITS:
            total += _UNITS.index(word) + 1
    return str(total)


def _relation(before: str) -> str:
    found = _DEPENDS.search(before[-40:])
    return " ".join(found.group(1).lower().split()) if found else ""


def _owner(doc: Document, tail: str, index: _Index) -> tuple[str | None, int]:
    """Whose provision a reference names, read from the words after it: ``doc`` itself when nothing follows or "of
    this Act"; the law an "of the … Act" names when the corpus holds exactly one such; None for any other "of …"
    ("of that Act", "of Act 22 of 2001"), which cannot be resolved, unless it is a name ``doc`` defines as a law
    ("of the principal Act", where '"principal Act" means the Labour Act [Chapter 28:01]'). Also how many characters
    of ``tail`` that took. A judgment has no sections of its own: what it cites is another law's, so only a named law
    resolves."""
    case = is_judgment(doc)
    if found := _OF_THIS.match(tail):
        return None if case else doc.doc_key, found.end()
    if found := _OF_LAW.match(tail):
        owner, used = index.law(doc, found.group("law"), by_title=case), found.end()
        if owner is None:
            # A short name no title bears ("the Criminal Law Code") may be one the document defines as a law.
            owner, used = index.defined_law(doc, tail, by_title=case) or (None, used)
        return None if case and owner == doc.doc_key else owner, used
    if _OF.match(tail) and (defined := index.defined_law(doc, tail, by_title=case)):
        return None if case and defined[0] == doc.doc_key else defined[0], defined[1]
    if _OF.match(tail) or case:
        return None, 0
    return doc.doc_key, 0


def is_judgment(doc: Document) -> bool:
    """Whether ``doc`` is a court's judgment: its numbered provisions are paragraphs, and what it cites by number
    is always another law's."""
    return doc.doc_type == "judgment" or doc.judgment is not None


def _references_in(doc: Document, section: Section, index: _Index) -> list[Reference]:
    text = section.text
    case = is_judgment(doc)
    if _AMENDING.search(text) and not case:
        return []
    starts = provision_starts(text, section.section_id)
    taken = [m.span() for m in _NOTE.finditer(text)]
    # Inside a schedule drafted in sections, "section 2" is that schedule's own section 2.
    home = schedule_key(section.part) if section.unit == "section" else ""
    found: list[Reference] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    def add(start: int, end: int, targets: Iterable[str | None]) -> None:
        taken.append((start, end))
        source = provision_at(starts, start, section.section_id)
        words = " ".join(text[start:end].split())
        before = text[max(0, start - 60) : start]
        applied = _APPLIES.match(text, end) and not _EXCEPT.search(before)
        relation = _relation(before) or (APPLYING if applied else "")
        for target in dict.fromkeys(t for t in targets if t):
            if not _within(target, section.section_id) or not _within(source, target):
                found.append(Reference(source=source, target=target, words=words, relation=relation, at=start))

    for match in _SUBSECTIONS.finditer(text):
        if not free(*match.span()):
            continue
        tail = text[match.end() : match.end() + 240]
        paths = [[sub, *([par] if par else [])] for sub in _labels(match.group("subs"))
                 for par in (_labels(match.group("par") or "") or [""])]  # fmt: skip
        if of_section := _OF_SECTION.match(tail):
            owner, used = _owner(doc, tail[of_section.end() :], index)
            number = section_number(of_section.group("number"))
            inside = home if owner == doc.doc_key else ""
            targets = [index.resolve(owner, number, path, inside) for path in paths] if owner else []
            add(match.start(), match.end() + of_section.end() + used, targets)
        elif (_OF.match(tail) and not _OF_THIS.match(tail)) or case:
            # "subsection (2) of that section": not resolvable here; nor a judgment's bare "subsection (2)".
            taken.append(match.span())
        else:
            add(match.start(), match.end(), [index.within(section, path) for path in paths])
    for match in (_CASE_SECTIONS if case else _SECTIONS).finditer(text):
        # "Section 5. Immunity of archives": the heading of a document quoted inside this one (a treaty in a
        # schedule), not a reference to this document's section.
        heading = match.group(0)[0] == "S" and re.match(r"\.\s+[A-Z]", text[match.end() : match.end() + 4])
        if heading or not free(*match.span()):
            continue
        owner, used = _owner(doc, text[match.end() : match.end() + 200], index)
        if owner is None:
            taken.append(match.span())
            continue
        inside = home if owner == doc.doc_key else ""
        targets = [index.resolve(owner, number, labels, inside) for number, labels in _items(match.group("items"))]
        add(match.start(), match.end() + used, [*targets, *index.between(owner, match.group("items"), inside)])
    for match in _PARAGRAPHS.finditer(text):
        if case or not free(*match.span()) or _OF.match(text[match.end() : match.end() + 8]):
            continue
        here = provision_at(starts, match.start(), section.section_id)
        subsection = next((label for label in _labels(here.removeprefix(section.section_id)) if label[0].isdigit()), "")
        path = [subsection] if subsection else []
        add(match.start(), match.end(), [index.within(section, [*path, par]) for par in _labels(match.group("par"))])
    for match in _SCHEDULE.finditer(text):
        if case or not free(*match.span()):
            continue
        nth = _ORDINALS.index(match.group("nth").lower()) + 1
        add(match.start(), match.end(), [index.schedules.get(doc.doc_key, {}).get(nth)])
    # A paragraph found alone that names the provision it sits in is the drafting's own label, not a reference.
    return [r for r in found if r.target != r.source]


def find_links(documents: Iterable[Document]) -> Links:
    """The definitions and resolved references of ``documents`` (a reference resolves within its own tenant)."""
    docs = sorted(documents, key=lambda d: d.doc_key)
    index = _Index(docs)
    links = Links(reader=LINKS_READER)
    for doc in docs:
        if definitions := find_definitions(doc):
            links.definitions[doc.doc_key] = definitions
        for section in doc.sections:
            links.references.extend(_references_in(doc, section, index))
    return links


async def save_links(store: ObjectStore, links: Links) -> None:
    await put_json(store, LINKS_KEY, links.model_dump())


async def load_links(store: ObjectStore) -> Links:
    """What the last ingestion found; empty for a data dir ingested before links were read."""
    raw = await get_json(store, LINKS_KEY)
    return Links.model_validate(raw) if raw else Links()
