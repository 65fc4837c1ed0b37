"""What ingestion stores and retrieval returns: documents, their sections (parents) and chunks."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Section(BaseModel):
    """One provision of a document: the parent that chunks expand to."""

    section_id: str = Field(description="Stable provision id, e.g. 'sample/act/2024/3#s4'.")
    number: str = Field(description="The document's own number for it, e.g. '4' or '12A'; '' for a preamble.")
    heading: str = ""
    part: str = Field("", description="Enclosing part/chapter headings, outermost first, joined by ' > '.")
    text: str = Field(description="The provision's text exactly as in the source, heading line included.")

    @property
    def label(self) -> str:
        return f"section {self.number}" if self.number else "preamble"


class Document(BaseModel):
    """A parsed source document: a statute, a judgment, any text with structure."""

    doc_key: str
    title: str
    chapter: str = ""
    jurisdiction: str = ""
    source: str = Field("", description="Where it came from (a path or URL).")
    content_hash: str
    sections: list[Section]

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.section_id == section_id), None)


class Chunk(BaseModel):
    """A piece of one section, small enough to embed; never crosses a section boundary."""

    chunk_id: str
    doc_key: str
    section_id: str
    section_number: str
    section_heading: str
    title: str
    jurisdiction: str = ""
    text: str = Field(description="A verbatim slice of the section's text.")
    ordinal: int = Field(description="Position of this chunk within its section.")

    @property
    def embed_text(self) -> str:
        """Text given to the embedder: the chunk in its context, so a bare subsection still says what it is about."""
        return f"{self.title} — section {self.section_number} {self.section_heading}\n{self.text}"
