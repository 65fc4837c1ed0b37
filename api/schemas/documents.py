"""What ingestion stores and retrieval returns: documents, their sections (parents) and chunks."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from api.text.schedules import schedule_label, schedule_of


class Section(BaseModel):
    """One provision of a document: the parent that chunks expand to."""

    section_id: str = Field(description="Stable provision id, e.g. 'sample/act/2024/3#s4'.")
    number: str = Field(description="The document's own number for it, e.g. '4' or '12A'; '' for a preamble.")
    heading: str = ""
    part: str = Field("", description="Enclosing part/chapter headings, outermost first, joined by ' > '.")
    text: str = Field(description="The provision's text as stored (the cleaned source), heading line included.")
    ref: str = Field("", description="The source's own reference for it, e.g. 's12B' or a passage number.")
    source_id: str = Field("", description="The source's id for this piece (e.g. a passage id), kept for evaluation.")
    pages: tuple[int, int] | None = Field(None, description="First and last source page (1-based), when paged.")
    offsets: tuple[int, int] | None = Field(
        None,
        description="Character offsets where the provision starts and ends in the source's text: in the text of its "
        "first and last page for paged sources (see pages), else in the whole file; None when not known.",
    )
    notes: list[str] = Field(default_factory=list, description="Amendment notes such as '[section 4 substituted…]'.")
    unit: str = Field(
        "",
        description="What a schedule's provision is called: 'paragraph', or 'section' in a schedule drafted in "
        "sections (api/text/schedules.py); '' outside a schedule, or when not read (a schedule's: 'paragraph').",
    )

    @property
    def schedule(self) -> str:
        """The schedule the provision is in ("Schedule 28", "Schedule 1, Part I"); '' when in none."""
        return schedule_of(self.part)

    @property
    def label(self) -> str:
        """'section 3'; 'paragraph 4 of Schedule 28' for a schedule's provision; 'paragraph 12' for a judgment's
        paragraph (its id's unit is "p"); 'preamble' (or the schedule's name) for unnumbered text."""
        schedule = self.schedule
        if not self.number:
            return schedule or "preamble"
        if schedule:
            return schedule_label(self.unit, self.number, schedule)
        paragraph = re.fullmatch(r"p\d+\w*(?:~\d+)?", self.section_id.partition("#")[2])
        return f"{'paragraph' if paragraph else 'section'} {self.number}"


class Party(BaseModel):
    """One party to a case, as the judgment's heading names it."""

    name: str = Field(description="The party's name, e.g. 'Esther Chitando' or 'Navada Resources (Private) Limited'.")
    side: str = Field(
        description="'applicant' for the side named first (plaintiff, applicant, appellant, …), 'respondent' for the "
        "side named after 'versus' (defendant, respondent, …)."
    )
    role: str = Field("", description="What the judgment calls that side, e.g. 'plaintiff'; '' when it does not say.")
    capacity: str = Field("", description="The capacity it is sued in, e.g. 'In her capacity as the Executrix …'.")


class Judgment(BaseModel):
    """What a judgment's heading says about the case: read at ingestion, used to cite it in its court's style."""

    court: str = Field("", description="The court, e.g. 'High Court of Zimbabwe'.")
    decided: str = Field("", description="The date judgment was given (ISO), e.g. '2025-01-31'; '' when not found.")
    neutral_citation: str = Field(
        "", description="How the judgment is cited: its medium-neutral citation ('[2025] ZWHHC 48') where it has one, "
        "else the court's own judgment number ('HH 106-17'); '' when neither is found."
    )  # fmt: skip
    citations: list[str] = Field(
        default_factory=list, description="Every citation of the judgment found, preferred first."
    )
    case_numbers: list[str] = Field(default_factory=list, description="The court's case numbers, e.g. 'HC 3863/14'.")
    case_name: str = Field(
        "", description="The parties as 'X v Y', e.g. 'Esther Chitando v Pauline Mandigo and Others'."
    )
    parties: list[Party] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list, description="The judges as the heading names them, 'Muchawa J'.")


class Document(BaseModel):
    """A parsed source document: a statute, a judgment, any text with structure."""

    doc_key: str
    title: str
    chapter: str = ""
    jurisdiction: str = ""
    source: str = Field("", description="Where it came from (a path or URL).")
    doc_type: str = Field("", description="'act', 'judgment', 'passage', … as the source says or the parser infers.")
    dates: dict[str, str] = Field(default_factory=dict, description="Named dates, e.g. {'expression': '2022-05-27'}.")
    pages: int = 0
    warnings: list[str] = Field(default_factory=list, description="What the parser noticed, for the ingest report.")
    tenant: str = Field("", description="The tenant that owns it; '' is the public corpus every caller may read.")
    content_hash: str
    sections: list[Section]
    judgment: Judgment | None = Field(None, description="A judgment's court, date, citation, parties and judges.")

    @property
    def date(self) -> str:
        """The date a date-range filter goes by (ISO): enacted or decided if known, else the text's expression
        date, else the year in a law id such as zw/act/2022/1; '' when nothing says."""
        for name in ("enacted", "judgment", "decided", "expression"):
            if self.dates.get(name):
                return self.dates[name]
        year = re.search(r"/(?:act|si|judgment|[a-z]+)/(\d{4})/", self.doc_key)
        return f"{year.group(1)}-01-01" if year else ""

    def rekeyed(self, doc_key: str) -> Document:
        """The same document under another key, its provision ids renamed to match."""
        prefix = f"{self.doc_key}#"
        sections = [
            s.model_copy(update={"section_id": f"{doc_key}#{s.section_id.removeprefix(prefix)}"}) for s in self.sections
        ]
        return self.model_copy(update={"doc_key": doc_key, "sections": sections})

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.section_id == section_id), None)


class Chunk(BaseModel):
    """A piece of one section, small enough to embed; never crosses a section boundary."""

    chunk_id: str
    doc_key: str
    section_id: str
    section_number: str
    section_heading: str
    section_label: str = Field(
        "",
        description="The provision's label as its section gives it ('section 4', 'paragraph 4 of Schedule 28'); '' "
        "in chunks stored before it was kept (their label is worked out from the number).",
    )
    title: str
    jurisdiction: str = ""
    text: str = Field(description="A verbatim slice of the section's text.")
    ordinal: int = Field(description="Position of this chunk within its section.")
    provision_id: str = Field("", description="The finest provision the chunk starts in, e.g. '…#s3(1)(a)'.")
    source_id: str = ""
    doc_type: str = ""
    date: str = Field("", description="The document's date (ISO), for date-range filters.")
    tenant: str = ""

    @property
    def label(self) -> str:
        """What its provision is called: its section's label as ingestion wrote it ("section 4", "paragraph 4 of
        Schedule 28"), else (a chunk stored before labels were kept) one worked out from its number; an unnumbered
        provision by its heading."""
        if not self.section_number:
            return self.section_heading or self.section_label or "preamble"
        if self.section_label:
            return self.section_label
        return f"{'paragraph' if self.doc_type == 'judgment' else 'section'} {self.section_number}"

    @property
    def embed_text(self) -> str:
        """Text given to the embedder: the chunk in its context, so a bare subsection still says what it is about."""
        # A schedule's provision is embedded under its own label; every other keeps the text it was embedded with.
        label = self.section_label if " of " in self.section_label else f"section {self.section_number}"
        return f"{self.title} — {label} {self.section_heading}\n{self.text}"
