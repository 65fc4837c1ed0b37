"""What the documents endpoints return: a document's outline and one provision with its neighbours, for readers."""

from __future__ import annotations

from pydantic import BaseModel, Field

from api.schemas.documents import Judgment
from api.tools.repeals import Repeal
from api.tools.versions import Version


class DocumentSummary(BaseModel):
    doc_key: str
    title: str
    doc_type: str = ""
    date: str = Field("", description="The date a date-range filter goes by (ISO), '' when nothing says.")
    jurisdiction: str = ""


class DocumentList(BaseModel):
    documents: list[DocumentSummary]
    doc_types: list[str] = Field(description="Every document type the caller can filter by.")


class SectionOutline(BaseModel):
    section_id: str
    label: str = Field(description="'section 3', 'paragraph 12' (a judgment's), or 'preamble'.")
    heading: str = ""
    part: str = ""


class DocumentView(DocumentSummary):
    chapter: str = ""
    repealed_by: Repeal | None = Field(None, description="Where another document of the corpus repeals this one.")
    judgment: Judgment | None = Field(
        None, description="A judgment's court, decision date, citation, case numbers, parties and judges."
    )
    version: Version | None = Field(
        None, description="Its consolidation, commencement and earliest dates, where ingestion read them."
    )
    sections: list[SectionOutline]


class SectionView(SectionOutline):
    number: str
    text: str = Field(description="The provision's text as stored; every citation's quote occurs in it verbatim.")
    notes: list[str] = Field(default_factory=list)
    pages: tuple[int, int] | None = None


class LinkView(BaseModel):
    """A reference between two provisions, as a reader shows it (a link to the other one)."""

    provision_id: str = Field(description="The other provision: the one referred to, or the one that refers.")
    title: str = Field(description="The title of the other provision's document.")
    words: str = Field(description="The referring words as the law writes them, e.g. 'subsection (3)'.")
    relation: str = Field("", description="'subject to', 'in terms of', …; '' for a plain mention.")
    at: int = Field(
        0, description="Where the referring words start in the referring section's text (of refers_to: this section's)."
    )
    cite_as: str = Field(
        "", description="The other provision as its jurisdiction cites it, e.g. 'Marriages Act [Chapter 5:15], s 12'."
    )


class CaseView(LinkView):
    """A judgment that cites the provision: its first citing paragraph (``provision_id``), the others, and how the
    judgment is cited."""

    cite_as: str = Field(description="The citing paragraph as the judgment cites itself: '[2025] ZWHHC 48, para 12'.")
    court: str = ""
    decided: str = Field("", description="The date judgment was given (ISO), '' when its heading does not say.")
    paragraphs: list[str] = Field(default_factory=list, description="Every paragraph of it that cites the provision.")


class DefinitionView(BaseModel):
    """A term the section uses that its document defines, with the defining words verbatim."""

    term: str
    provision_id: str = Field(description="The provision that defines it.")
    text: str = Field(description="The definition as the document words it.")


class ProvisionView(BaseModel):
    doc_key: str
    title: str
    chapter: str = ""
    repealed_by: Repeal | None = Field(None, description="Where another document of the corpus repeals this one.")
    judgment: Judgment | None = Field(None, description="Where the document is a judgment, what its heading says.")
    version: Version | None = Field(
        None, description="Its consolidation, commencement and earliest dates, where ingestion read them."
    )
    provision_id: str = Field(description="The provision asked for, e.g. '…#s3(1)'.")
    section: SectionView = Field(description="The section that holds it (the unit quotes are checked against).")
    previous: SectionView | None = None
    next: SectionView | None = None
    refers_to: list[LinkView] = Field(default_factory=list, description="Provisions this section refers to.")
    referred_by: list[LinkView] = Field(
        default_factory=list,
        description="Provisions of other laws, and of this one, that refer to this section (the caller may read); "
        "judgments are listed in cited_by_cases instead.",
    )
    cited_by_cases: list[CaseView] = Field(
        default_factory=list,
        description="Cases that cite this section: each judgment (the caller may read) whose paragraphs cite it or a "
        "provision within it, the most recent first.",
    )
    definitions: list[DefinitionView] = Field(
        default_factory=list, description="Terms this section uses that its document defines."
    )
