"""Documents for readers: a doc_key is looked up in the manifest, never turned into a path by the client.

A client names a document only by its ``doc_key``; the object key it is stored under is derived here from a key the
manifest already holds, so nothing a caller sends reaches the object store unless it is a known document. Keys that
look like path tricks (``..``, absolute paths, backslashes, NUL, percent-encoded separators) are refused before any
lookup. Tenants are kept apart as the query stream keeps them: a caller reads the public corpus and its own tenant's
documents, and anything else is simply not found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from api.auth import Caller
from api.errors import NotFoundError
from api.schemas.documents import Document, Section
from api.schemas.reader import (
    CaseView,
    DefinitionView,
    DocumentList,
    DocumentSummary,
    DocumentView,
    LinkView,
    ProvisionView,
    SectionOutline,
    SectionView,
)
from api.text.citation_style import cite_as, jurisdiction_for
from api.text.schedules import pinpointed, split_label
from api.tools.corpus import Corpus
from api.tools.links import Reference

_ENCODED_TRICKS = re.compile(r"%(?:2f|5c|00|25|2e)", re.IGNORECASE)
_FRAGMENT = re.compile(r"^[A-Za-z0-9()~._-]{1,64}$")
NOT_FOUND = "no such document"


def unsafe(raw_path: str, *values: str) -> bool:
    """Whether a request path or the values decoded from it try to walk out of the corpus."""
    if _ENCODED_TRICKS.search(raw_path):
        return True
    for value in values:
        if not value or "\x00" in value or "\\" in value or value.startswith("/") or len(value) > 512:
            return True
        if any(part in ("", ".", "..") for part in value.split("/")):
            return True
    return False


def _outline(section: Section) -> SectionOutline:
    return SectionOutline(section_id=section.section_id, label=section.label, heading=section.heading,
                          part=section.part)  # fmt: skip


def _view(section: Section) -> SectionView:
    return SectionView(
        section_id=section.section_id, label=section.label, heading=section.heading, part=section.part,
        number=section.number, text=section.text, notes=section.notes, pages=section.pages,
    )  # fmt: skip


def section_for(document: Document, provision_id: str) -> int | None:
    """The index of the section holding ``provision_id`` (e.g. '…#s3(1)(a)' is in '…#s3'), or None."""
    best: tuple[int, int] | None = None
    for i, section in enumerate(document.sections):
        sid = section.section_id
        if provision_id == sid or (provision_id.startswith(sid) and provision_id[len(sid)] == "("):
            if best is None or len(sid) > best[1]:
                best = (i, len(sid))
    return None if best is None else best[0]


class DocumentReader:
    """Read-only access to the corpus's documents for one caller at a time."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._owners: dict[str, str] = {}
        self._facets: dict[str, tuple[str, str, str]] = {}
        for doc_key, facets in corpus.chunks.documents.items():
            self._owners[doc_key] = facets.tenant
            self._facets[doc_key] = (facets.doc_type, facets.date, facets.jurisdiction)

    def _may_read(self, doc_key: str, caller: Caller) -> bool:
        owner = self._owners.get(doc_key)
        return doc_key in self.corpus.manifest.documents and owner in (None, "", caller.tenant)

    def listing(self, caller: Caller) -> DocumentList:
        documents = []
        for doc_key, entry in sorted(self.corpus.manifest.documents.items(), key=lambda kv: kv[1].title):
            if self._may_read(doc_key, caller):
                doc_type, date, jurisdiction = self._facets.get(doc_key, ("", "", ""))
                documents.append(DocumentSummary(doc_key=doc_key, title=entry.title, doc_type=doc_type, date=date,
                                                 jurisdiction=jurisdiction))  # fmt: skip
        return DocumentList(documents=documents, doc_types=sorted({d.doc_type for d in documents if d.doc_type}))

    async def load(self, doc_key: str, caller: Caller) -> Document:
        """The document, if this caller may read it; NotFoundError otherwise (never a hint that it exists)."""
        if not self._may_read(doc_key, caller):
            raise NotFoundError(NOT_FOUND)
        document = await self.corpus.document(doc_key)
        if document is None or document.tenant not in ("", caller.tenant):
            raise NotFoundError(NOT_FOUND)
        return document

    async def document(self, doc_key: str, caller: Caller) -> DocumentView:
        document = await self.load(doc_key, caller)
        return DocumentView(
            doc_key=document.doc_key, title=document.title, doc_type=document.doc_type, date=document.date,
            jurisdiction=document.jurisdiction, chapter=document.chapter,
            repealed_by=self.corpus.repealed.get(doc_key), version=self.corpus.versions.versions.get(doc_key),
            sections=[_outline(s) for s in document.sections], judgment=document.judgment,
        )  # fmt: skip

    async def provision(self, doc_key: str, fragment: str, caller: Caller) -> ProvisionView:
        """The section holding ``<doc_key>#<fragment>``, with the sections before and after it."""
        if not _FRAGMENT.match(fragment):
            raise NotFoundError("no such provision")
        document = await self.load(doc_key, caller)
        provision_id = f"{doc_key}#{fragment}"
        index = section_for(document, provision_id)
        if index is None:
            raise NotFoundError("no such provision")
        sections = document.sections
        section = sections[index]
        links = self.corpus.links
        received = links.referred_by(section.section_id)
        return ProvisionView(
            doc_key=doc_key, title=document.title, chapter=document.chapter,
            repealed_by=self.corpus.repealed.get(doc_key), version=self.corpus.versions.versions.get(doc_key),
            provision_id=provision_id, judgment=document.judgment,
            section=_view(sections[index]), previous=_view(sections[index - 1]) if index > 0 else None,
            next=_view(sections[index + 1]) if index + 1 < len(sections) else None,
            refers_to=self._links(((r.target, r) for r in links.refers_to(section.section_id)), caller),
            referred_by=self._links(((r.source, r) for r in received if not self._is_case(r.source)), caller),
            cited_by_cases=self._cases([r for r in received if self._is_case(r.source)], caller),
            definitions=[
                DefinitionView(term=d.term, provision_id=d.provision_id, text=d.text)
                for d in links.defined_in(section.text, doc_key, section.section_id, section.part)
            ],
        )  # fmt: skip

    def _label(self, provision_id: str) -> str:
        """What a linked provision is called where its own number would mislead: a schedule's ("paragraph 4(2) of
        Schedule 28", from its section's first chunk); else its id's fragment ("s4(2)"), which the style reads."""
        section_id = provision_id.split("(", 1)[0]
        chunk = self.corpus.chunks.get(f"{section_id}/c0")
        if chunk is not None and split_label(chunk.section_label):
            return pinpointed(chunk.section_label, provision_id.removeprefix(section_id))
        return provision_id.partition("#")[2]

    def _is_case(self, provision_id: str) -> bool:
        doc_key = provision_id.split("#")[0]
        entry = self.corpus.manifest.documents.get(doc_key)
        return (entry is not None and entry.judgment is not None) or self._facets.get(doc_key, ("",))[0] == "judgment"

    def _cases(self, references: list[Reference], caller: Caller) -> list[CaseView]:
        """Each judgment citing the section once, with every paragraph of it that does (only judgments the caller
        may read), the most recent first."""
        cases: dict[str, CaseView] = {}
        for reference in references:
            doc_key = reference.source.split("#")[0]
            if not self._may_read(doc_key, caller):
                continue
            if (case := cases.get(doc_key)) is not None:
                if reference.source not in case.paragraphs:
                    case.paragraphs.append(reference.source)
                continue
            entry = self.corpus.manifest.documents[doc_key]
            judgment = entry.judgment
            jurisdiction = jurisdiction_for(doc_key, self._facets.get(doc_key, ("", "", ""))[2])
            fragment = reference.source.partition("#")[2]
            label = "preamble" if fragment.startswith("preamble") else f"paragraph {fragment.lstrip('p')}"
            styled = cite_as(entry.title, label, reference.source, "", jurisdiction,
                             citation=judgment.neutral_citation if judgment else "")  # fmt: skip
            cases[doc_key] = CaseView(
                provision_id=reference.source, title=entry.title, words=reference.words, relation=reference.relation,
                cite_as=styled, court=judgment.court if judgment else "",
                decided=judgment.decided if judgment else self._facets.get(doc_key, ("", "", ""))[1],
                paragraphs=[reference.source],
            )  # fmt: skip
        by_name = sorted(cases.values(), key=lambda c: c.title)
        return sorted(by_name, key=lambda c: c.decided, reverse=True)

    def _links(self, pairs: Iterable[tuple[str, Reference]], caller: Caller) -> list[LinkView]:
        """Each other provision once (its first reference's words), only where the caller may read its document."""
        views: dict[str, LinkView] = {}
        for other, reference in pairs:
            doc_key = other.split("#")[0]
            if other in views or not self._may_read(doc_key, caller):
                continue
            entry = self.corpus.manifest.documents[doc_key]
            jurisdiction = jurisdiction_for(doc_key, self._facets.get(doc_key, ("", "", ""))[2])
            styled = cite_as(entry.title, self._label(other), other, entry.chapter, jurisdiction,
                             citation=entry.judgment.neutral_citation if entry.judgment else "")  # fmt: skip
            views[other] = LinkView(provision_id=other, title=entry.title, words=reference.words,
                                    relation=reference.relation, at=reference.at, cite_as=styled)  # fmt: skip
        return list(views.values())
