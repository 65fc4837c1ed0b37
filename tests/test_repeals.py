import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

from api.auth import LOCAL
from api.composer.judge.gate import gate_model_answer
from api.schemas.documents import Document, Section
from api.schemas.events import Citation, FinalEvent, WarningEvent
from api.schemas.query import QueryRequest
from api.services import open_services
from api.settings import Settings
from api.tools.reader import DocumentReader
from api.tools.repeals import find_repeals
from api.tools.whatsapp import format_reply
from tests.conftest import ingest_into


def law(key: str, title: str, chapter: str, *texts: str) -> Document:
    sections = [
        Section(section_id=f"{key}#s{n}", number=str(n), text=text, ref=f"s{n}") for n, text in enumerate(texts, 1)
    ]
    return Document(doc_key=key, title=title, chapter=chapter, content_hash=key, sections=sections)


def test_a_law_is_repealed_where_another_names_it_as_the_subject_of_is_repealed() -> None:
    marriage = law("t/1964/81", "Marriage Act", "Chapter 5:11", "1. Short title This Act is the Marriage Act.")
    rent = law("t/1982/2", "Rent Act", "", "1. Short title This Act is the Rent Act.")
    fees = law("t/1990/3", "Court Fees Act", "Chapter 7:04", "1. Fees Every court shall charge fees.")
    repealing = law(
        "t/2022/1", "Marriages Act, 2022", "Chapter 5:17",
        "1. Short title This Act may be cited as the Marriages Act, 2022.",
        # Matched by chapter although the name differs ("Marriages" / "Marriage"), and by title without a chapter.
        "2. Repeals (1) The Marriages Act [Chapter 5:11] and the Rent Act are repealed. (2) Nothing in this section "
        "affects a marriage solemnised before the commencement of this Act.",
        # A part of a law repealed, or a law amended, is not the law repealed.
        "3. Amendments Section 4 of the Court Fees Act [Chapter 7:04] is repealed. The Court Fees Act is amended.",
    )  # fmt: skip
    found = find_repeals([marriage, rent, fees, repealing])
    assert sorted(found) == ["t/1964/81", "t/1982/2"]
    repeal = found["t/1964/81"]
    assert (repeal.by_doc_key, repeal.by_title, repeal.by_section) == ("t/2022/1", "Marriages Act, 2022", "section 2")
    assert repeal.sentence.endswith("are repealed.")
    assert "repealed by section 2 of the Marriages Act, 2022" in repeal.message("Marriage Act")
    # A tenant's private document repeals nothing of the public corpus (nor of another tenant's).
    private = repealing.model_copy(update={"doc_key": "t/acme/1", "tenant": "acme"})
    assert find_repeals([marriage, rent, fees, private]) == {}
    # A law that names itself ("this Act … is repealed" in its own transitional provisions) is not repealed by it.
    assert find_repeals([law("t/1/1", "Rent Act", "", "9. The Rent Act is repealed on a date to be fixed.")]) == {}


def test_a_law_repealed_under_its_older_name_and_chapter_is_found_by_its_title_less_one_word() -> None:
    # A revised edition renumbered the chapter (3:07 -> 5:07) and dropped a word of the title.
    customary = law("t/1917/5", "Customary Marriages Act", "Chapter 5:07", "1. Short title The Customary Act.")
    # Two words short of the named title: too loose to be the same law.
    partner = law("t/1950/2", "Partnerships Act", "Chapter 5:08", "1. Short title The Partnerships Act.")
    repealing = law(
        "t/2022/1", "Marriages Act, 2022", "Chapter 5:17",
        "1. The Customary Law Marriages Act [Chapter 3:07] and the Civil Unions Partnerships Act [Chapter "
        "3:09] are repealed.",
    )  # fmt: skip
    found = find_repeals([customary, partner, repealing])
    assert sorted(found) == ["t/1917/5"]
    assert found["t/1917/5"].by_section == "section 1"
    # When the chapter names a document, the chapter decides, not the near title.
    numbered = law("t/1990/9", "Family Law Marriages Act", "Chapter 3:07", "1. Short title The Act.")
    assert sorted(find_repeals([customary, numbered, repealing])) == ["t/1990/9"]
    # An amending Act's repeal is not its principal Act's, and a law named without a chapter is matched exactly only.
    income = law("t/1967/5", "Income Tax Act", "Chapter 23:06", "1. Short title The Income Tax Act.")
    amending = law(
        "t/2020/1", "Finance Act, 2020", "Chapter 23:20",
        "1. The Income Tax Amendment Act [Chapter 23:99] is repealed. The Income Tax (Validation) Act is repealed.",
    )  # fmt: skip
    assert find_repeals([income, amending]) == {}
    # Two documents each one word short of the named title: which one is meant cannot be told, so neither.
    other = law("t/1918/6", "Law Marriages Act", "Chapter 5:09", "1. Short title The Law Marriages Act.")
    assert find_repeals([customary, other, repealing]) == {}


OLD = """<!-- id: test/act/1990/1; jurisdiction: TEST -->
# Dog Licensing Act
[Chapter 9:01]

1. Short title
This Act may be cited as the Dog Licensing Act.

2. Licence fee for dogs
Every owner of a dog shall pay a dog licence fee of ten dollars each year to the local authority.
"""
NEW = """<!-- id: test/act/2020/4; jurisdiction: TEST -->
# Animal Keeping Act, 2020
[Chapter 9:20]

1. Short title
This Act may be cited as the Animal Keeping Act, 2020.

2. Registration of cats
Every owner of a cat shall register the cat with the veterinary office within thirty days of acquiring it.

3. Repeal
The Dog Licensing Act [Chapter 9:01] is repealed.
"""


async def test_an_answer_that_cites_a_repealed_law_says_which_law_repealed_it(tmp_path: Path) -> None:
    source = tmp_path / "laws"
    source.mkdir()
    (source / "dogs.md").write_text(OLD)
    (source / "animals.md").write_text(NEW)
    settings = Settings(data_dir=tmp_path / "data")
    report = await ingest_into(settings, source)
    assert report.repealed == 1
    async with open_services(settings) as services:
        assert set(services.corpus.repealed) == {"test/act/1990/1"}
        # The reader says so beside the text: the provision's view and the document's outline.
        reader = DocumentReader(services.corpus)
        old_fee = await reader.provision("test/act/1990/1", "s2", LOCAL)
        assert old_fee.repealed_by is not None and old_fee.repealed_by.by_section == "section 3"
        assert (await reader.document("test/act/1990/1", LOCAL)).repealed_by == old_fee.repealed_by
        assert (await reader.provision("test/act/2020/4", "s2", LOCAL)).repealed_by is None
        for n, (question, cites_old) in enumerate((
            ("How much is the dog licence fee each year?", True),
            ("Within how many days must I register my cat?", False),
        )):  # fmt: skip
            events = [e async for e in services.orchestrator.stream(QueryRequest(q=question, session_id=f"s{n}"))]
            final = events[-1]
            assert isinstance(final, FinalEvent) and final.citations
            cited = {c.doc_key for c in final.citations}
            assert ("test/act/1990/1" in cited) is cites_old
            repealed = [e.message for e in events if isinstance(e, WarningEvent) and e.code == "repealed_law"]
            if cites_old:
                # The quote-only answer says so beside the quote, not only in a warning after it.
                assert (
                    "(The Dog Licensing Act was repealed by section 3 of the Animal Keeping Act, 2020: this may "
                    "no longer be the law.)" in final.answer
                )
                assert repealed == [
                    'the Dog Licensing Act was repealed by section 3 of the Animal Keeping Act, 2020 ("The Dog '
                    'Licensing Act [Chapter 9:01] is repealed."); what it says may no longer be the law'
                ]
                # WhatsApp's reply carries it too, before the sources.
                reply = format_reply(final, {}, "", repealed)
                assert "_Note: The Dog Licensing Act was repealed by section 3" in reply
                assert reply.index("_Note:") < reply.index("*Sources*")
            else:
                assert repealed == []
    # The command line shows it on a line of its own after the answer's text (in a copy: Milvus Lite lets one process
    # open a data dir, and this one opened it).
    copy = shutil.copytree(settings.data_dir, tmp_path / "copy", ignore=shutil.ignore_patterns("LOCK"))
    shown = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "api.cli", "ask", "How much is the dog licence fee each year?"],
        env={**os.environ, "GWETA_DATA_DIR": str(copy), "COLUMNS": "400"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stdout
    assert any(line.startswith("warning: the Dog Licensing Act was repealed") for line in shown.stdout.splitlines())


def test_a_repealed_law_supports_a_sentence_only_when_it_says_the_law_is_no_longer_in_force() -> None:
    """Later law wins: the gate lets a repealed law's provision support a sentence only if the sentence says it is
    no longer the law."""
    fee = "2. Licence fee for dogs Every owner of a dog shall pay a dog licence fee of ten dollars each year."
    cited = Citation(index=1, doc_key="test/act/1990/1", title="Dog Licensing Act", section_id="test/act/1990/1#s2",
                     section="section 2", chunk_id="test/act/1990/1#s2/c0", quote=fee)  # fmt: skip
    repealed = {"test/act/1990/1": "section 3 of the Animal Keeping Act, 2020"}
    today = "Every dog owner must pay a licence fee of ten dollars each year [1]."
    assert gate_model_answer(today, {1: cited}, {cited.section_id: fee}).passed  # not repealed: supported
    failed = gate_model_answer(today, {1: cited}, {cited.section_id: fee}, repealed=repealed)
    assert not failed.passed
    assert failed.claims[0].missing_facts == ["in force (repealed by section 3 of the Animal Keeping Act, 2020)"]
    history = (
        "Under the repealed Dog Licensing Act, every dog owner had to pay a licence fee of ten dollars each year [1]."
    )
    assert gate_model_answer(history, {1: cited}, {cited.section_id: fee}, repealed=repealed).passed
