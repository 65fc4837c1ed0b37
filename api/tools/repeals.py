"""Laws a corpus itself says are repealed, so an answer that quotes one can say so.

A corpus of legislation carries no repeal status of its own, but its laws state their repeals: "The Marriage Act
[Chapter 5:11] is repealed." (the Marriages Act, 2022, s47). Each sentence of a provision whose subject is one or
more named laws and whose verb is "is repealed" / "are (hereby) repealed" names what it repeals; a named law is
matched to the corpus's documents by its chapter number ("[Chapter 5:11]", the citation that survives renaming) or
else by its title. A sentence that repeals part of a law ("section 5 of the X Act is repealed", "the definition of
… is repealed") is not a repeal of the law. Ingestion writes what it finds beside the lexical index
(``REPEALS_KEY``); the corpus reads it at load.

A law repealed under the name and chapter it had before a revised edition renumbered and retitled it ("the
Customary Law Marriages Act [Chapter 3:07]", held as the Customary Marriages Act, Chapter 5:07) is matched when
exactly one document's title is the named title less one word (``_renamed``).

What this cannot see: repeals stated only in a schedule's table, by a law outside the corpus, or under a name that
differs from the document's by more than one word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

from api.schemas.documents import Document, Section
from api.text.instruments import instruments_named, title_words
from api.tools.object_store import ObjectStore, get_json, put_json

REPEALS_KEY = "indexes/repeals.json"
_REPEALED = re.compile(r"\b(?:is|are)\s+(?:hereby\s+)?repealed\b", re.I)
_SENTENCE = re.compile(r"(?<=[.;])\s+(?=\(?[A-Z0-9])")
_CHAPTER = re.compile(r"\[?Chapter\s*(\d+:\d+)\]?", re.I)
# What makes a part of a law the subject, not the law: "section 5 of", "the definition of … in", "Part III of".
_PART_OF = re.compile(
    r"\b(?:sections?|subsections?|paragraphs?|subparagraphs?|schedules?|parts?|definitions?|items?|words)\b"
    r"[^;]*?\b(?:of|in)\b",
    re.I,
)


class Repeal(BaseModel):
    """Where the corpus says a document was repealed."""

    by_doc_key: str
    by_title: str
    by_section: str
    """The repealing provision's label, e.g. 'section 47'."""
    sentence: str
    date: str = ""
    """When the repeal took effect (ISO): the repealing document's commencement, where known; '' when not."""

    def message(self, title: str) -> str:
        return (
            f'the {title} was repealed by {self.by_section} of the {self.by_title} ("{self.sentence}"); what it says '
            "may no longer be the law"
        )


def chapter_number(chapter: str) -> str:
    """ "5:11" from "Chapter 5:11" or "[Chapter 5:11]"; "" when there is none."""
    found = re.search(r"\d+:\d+", chapter)
    return found.group(0) if found else ""


def find_repeals(documents: Iterable[Document]) -> dict[str, Repeal]:
    """The documents that another of ``documents`` (of the same tenant) repeals (by doc key), each with the first
    provision that does."""
    docs = list(documents)
    # A document repeals only its own tenant's documents: a private upload saying "the Labour Act is repealed" must
    # not mark the public corpus for every caller.
    by_chapter: dict[tuple[str, str], list[str]] = {}
    # By the same words answers name laws by (``api.composer.citations``), all of them: "the Companies Act" is not the
    # Companies and Other Business Entities Act.
    by_title: dict[tuple[str, frozenset[str]], list[str]] = {}
    for doc in docs:
        if number := chapter_number(doc.chapter):
            by_chapter.setdefault((doc.tenant, number), []).append(doc.doc_key)
        by_title.setdefault((doc.tenant, frozenset(title_words(doc.title))), []).append(doc.doc_key)
    found: dict[str, Repeal] = {}
    for doc in sorted(docs, key=lambda d: d.doc_key):
        for section in doc.sections:
            if not _REPEALED.search(section.text):
                continue
            for sentence in _SENTENCE.split(_body(section)):
                if not (verb := _REPEALED.search(sentence)):
                    continue
                subject = sentence[: verb.start()]
                if _PART_OF.search(subject):
                    continue
                named = {target for c in _CHAPTER.findall(subject) for target in by_chapter.get((doc.tenant, c), [])}
                for _, words in instruments_named(_CHAPTER.sub(" ", subject)):
                    named |= set(by_title.get((doc.tenant, frozenset(words)), []))
                named |= _renamed(subject, doc.tenant, by_chapter, by_title)
                for target in sorted(named - {doc.doc_key}):
                    found.setdefault(target, Repeal(
                        by_doc_key=doc.doc_key, by_title=doc.title, by_section=section.label,
                        sentence=" ".join(sentence.split())[:300],
                    ))  # fmt: skip
    return found


# Words that make a law one that changes another: the Income Tax Amendment Act is not the Income Tax Act.
_AMENDING_WORDS = frozenset(
    "amendment amendments amending repeal repeals validation consequential transitional miscellaneous provisions "
    "supplementary further interim".split()
)
# A law named with its chapter: "the Customary Law Marriages Act [Chapter 3:07]".
_NAMED_WITH_CHAPTER = re.compile(r"\s*\[?Chapter\s*(\d+:\d+)\]?", re.I)


def _renamed(
    subject: str,
    tenant: str,
    by_chapter: dict[tuple[str, str], list[str]],
    by_title: dict[tuple[str, frozenset[str]], list[str]],
) -> set[str]:
    """The documents a repeal names under an older name and number.

    Revised editions renumber chapters and shorten titles, and a later law may repeal an earlier one by the name and
    chapter it had when enacted. A named law whose chapter matches no document and whose title matches none exactly
    is the one document (of the tenant) whose title words are all among the named law's, with one word fewer — a
    single dropped word keeps the law's distinctive words, where a looser match could take a different law. A title
    of one word is too little to go on."""
    found: set[str] = set()
    for match, words in instruments_named(subject):
        after = _NAMED_WITH_CHAPTER.match(subject, subject.find(match) + len(match))
        # Only a law named with a chapter that names no document: without one, or with one a document holds, the
        # exact matches above decide.
        if after is None or by_chapter.get((tenant, after.group(1))):
            continue
        if by_title.get((tenant, frozenset(words))):
            continue
        near = [
            key
            for (owner, title), keys in by_title.items()
            if owner == tenant
            and len(title) >= 2
            and title < words
            and len(words - title) == 1
            and not (words - title) & _AMENDING_WORDS
            for key in keys
        ]
        if len(near) == 1:
            found.add(near[0])
    return found


def _body(section: Section) -> str:
    """The provision's text without its number and heading, so a quoted sentence starts where the law's does."""
    text = section.text.lstrip()
    for lead in (f"{section.number}.", section.number, section.heading):
        if lead and text.startswith(lead):
            text = text[len(lead) :].lstrip()
    return text


async def save_repeals(store: ObjectStore, repeals: dict[str, Repeal]) -> None:
    await put_json(store, REPEALS_KEY, {key: r.model_dump() for key, r in sorted(repeals.items())})


async def load_repeals(store: ObjectStore) -> dict[str, Repeal]:
    """What the last ingestion found; empty for a data dir ingested before repeals were read."""
    raw = await get_json(store, REPEALS_KEY)
    return {key: Repeal.model_validate(value) for key, value in (raw or {}).items()}
