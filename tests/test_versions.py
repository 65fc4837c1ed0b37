"""The version in force: each document's consolidation, commencement and repeal dates; ``as_of`` searches only the
documents in force on a day; an answer names the consolidation it quotes and never quotes two versions of one law."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import async_playwright, expect

from api.auth import LOCAL
from api.main import create_app
from api.schemas.documents import Document, Section
from api.schemas.events import Citation, FinalEvent, StreamEvent, WarningEvent
from api.schemas.query import QueryRequest
from api.services import Services, open_services
from api.settings import LimitsSettings, LLMSettings, Settings
from api.tools.reader import DocumentReader
from api.tools.repeals import Repeal
from api.tools.versions import Version, Versions, commencement, earliest_day, iso_day
from api.tools.whatsapp import format_reply
from tests.conftest import ingest_into
from tests.servers import FakeOpenAI, LiveServer, Reply, skill_of
from tests.sse import collect
from tests.test_web import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS

OLD_KEY, NEW_KEY, CATS_KEY = "test/act/1990/1", "test/act/2020/4", "test/cats"
OLD = f"""<!-- id: {OLD_KEY}; jurisdiction: TEST; expression: 2016-12-31 -->
# Dog Licensing Act
[Chapter 9:01]

1. Short title
This Act may be cited as the Dog Licensing Act.

2. Licence fee for dogs
Every owner of a dog shall pay a dog licence fee of ten dollars each year to the local authority.

3. Guide dogs exempt from licence fee
No licence fee is payable for a guide dog that leads a blind person.
"""
NEW = f"""<!-- id: {NEW_KEY}; jurisdiction: TEST; expression: 2021-03-01 -->
# Dog Licensing Act, 2020
[Chapter 9:21]

1. Short title and commencement
(1) This Act may be cited as the Dog Licensing Act, 2020. (2) This Act shall come into operation on the 1st July,
2020.

2. Licence fee for dogs
Every owner of a dog shall pay a dog licence fee of twenty dollars each year to the local authority.

3. Repeal
The Dog Licensing Act [Chapter 9:01] is repealed.
"""
# No date anywhere (no year in its id, no dates in its source): never left out on a guess.
CATS = f"""<!-- id: {CATS_KEY}; jurisdiction: TEST -->
# Cat Registration Act

1. Registration of cats
Every owner of a cat shall register the cat with the veterinary office within thirty days of acquiring it.
"""
FEE = "How much is the dog licence fee each year?"
GUIDE = "Is a licence fee payable for a guide dog that leads a blind person?"
CAT = "Within how many days must I register my cat?"


def doc(key: str, title: str, *texts: str, **dates: str) -> Document:
    sections = [Section(section_id=f"{key}#s{n}", number=str(n), text=t) for n, t in enumerate(texts, 1)]
    return Document(doc_key=key, title=title, content_hash=key, sections=sections, dates=dates)


def test_a_document_commences_where_its_source_or_its_own_words_say_so() -> None:
    assert iso_day("1st July, 2019") == iso_day("July 1, 2019") == iso_day("2019-07-01") == "2019-07-01"
    assert iso_day("30th February, 2019") == iso_day("some day") == ""
    says = doc("x/act/2019/2", "A Act", "1. Short title (1) This Act may be cited as the A Act. (2) This Act shall "
               "come into operation on the 1st July, 2019.")  # fmt: skip
    assert commencement(says) == "2019-07-01"
    deemed = doc("x/act/2004/7", "B Act", "13. This Act shall be deemed to have come into operation on the 15th "
                 "December, 2003.")  # fmt: skip
    assert commencement(deemed) == "2003-12-15"
    # The source's own field comes first.
    assert commencement(doc("x/act/2019/3", "C Act", "1. Text.", commencement="2019-09-01")) == "2019-09-01"
    # A date to be fixed, a part of the Act, or another law's commencement is not the document's commencement.
    for text in (
        "1. (2) This Act shall come into operation on a date to be fixed by the President by statutory instrument.",
        "1. (2) Sections 8 and 9 of this Act shall come into operation on the 1st January, 2015.",
        "5. Nothing affects a marriage solemnised before the date of commencement of the Marriages Act, 2022.",
    ):
        assert commencement(doc("x/act/2014/4", "D Act", text)) == ""
    # A law is not in force before its year (its id's) at the earliest; its consolidation date says nothing of that.
    assert earliest_day(doc("x/act/2022/1", "E Act", "1. Text.", expression="2022-05-27")) == "2022-01-01"
    assert earliest_day(doc("x/act/2022/1", "E Act", "1. Text.", enacted="2022-05-20")) == "2022-05-20"
    assert earliest_day(doc("uploads/e", "E Act", "1. Text.", expression="2022-05-27")) == ""


def repeal(by: str) -> Repeal:
    return Repeal(by_doc_key=by, by_title=by, by_section="section 3", sentence="The old Act is repealed.")


def test_which_version_is_in_force_on_a_day() -> None:
    versions = Versions(
        {
            "old": Version(title="Dog Licensing Act", earliest="1990-01-01", consolidated="2016-12-31"),
            "new": Version(title="Dog Licensing Act, 2020", commenced="2020-07-01", earliest="2020-01-01"),
            "undated": Version(title="Rent Act", earliest="1982-01-01"),
            "replacing": Version(title="Tenancies Act, 2022", earliest="2022-01-01"),
            "nodates": Version(title="Cat Registration Act"),
        },
        {"old": repeal("new"), "undated": repeal("replacing")},
    )
    status = versions.status
    # Repealed when its repealer commenced; in force before that, and not before its own year.
    assert [status("old", d) for d in ("1989-12-31", "2020-06-30", "2020-07-01")] == [
        "not_in_force", "in_force", "not_in_force"]  # fmt: skip
    assert [status("new", d) for d in ("2020-06-30", "2020-07-01")] == ["not_in_force", "in_force"]
    # A repealer whose commencement is not known: repealed at the earliest in its year, and only probably after it.
    assert [status("undated", d) for d in ("2021-12-31", "2022-01-01")] == ["in_force", "repeal_undated"]
    assert status("nodates", "1800-01-01") == "unknown" and status("absent", "1800-01-01") == "unknown"
    # Only what is known not to be in force is left out of a search.
    assert versions.not_in_force("2019-01-01") == ("new", "replacing")
    assert versions.not_in_force("2023-01-01") == ("old",)
    assert versions.repealed_on("2019-01-01", {"old": "s 3", "undated": "s 9"}) == {}
    assert versions.repealed_on("2023-01-01", {"old": "s 3", "undated": "s 9"}) == {"old": "s 3", "undated": "s 9"}
    # Versions of one law: the repealed and the repealing document; the best on a day is preferred.
    assert versions.group["old"] == versions.group["new"] and "nodates" not in versions.group
    assert versions.preferred("old", "2019-01-01") == "old" and versions.preferred("old", "2023-01-01") == "new"
    assert versions.choose(["old", "new", "nodates"], "2023-01-01") == {"old": "new", "new": "new"}
    # Of the versions whose words answer (those the quotes come from), the best; all of them when none does.
    assert versions.choose(["old", "new"], "2023-01-01", quoted={"old"}) == {"old": "old", "new": "old"}
    assert versions.choose(["old", "new"], "2023-01-01", quoted={"nodates"}) == {"old": "new", "new": "new"}
    # What an answer already cited stands; a question naming one version by its title gets that one.
    assert versions.choose(["new"], "2023-01-01", cited=["old"]) == {"new": "old", "old": "old"}
    assert (
        versions.choose(["undated", "replacing"], "2023-01-01", "What did the Rent Act say?")["replacing"] == "undated"
    )


def test_documents_with_one_title_but_another_year_are_versions_of_one_law() -> None:
    versions = Versions(
        {
            "a": Version(title="Rent Act, 1982", earliest="1982-01-01"),
            "b": Version(title="Rent Act, 2020", earliest="2020-01-01"),
            "c": Version(title="Rent Act, 2020", tenant="acme", earliest="2020-01-01"),  # another tenant's: apart
            "d": Version(title="Rent Control Act, 2020", earliest="2020-01-01"),
            # One title and one year, or no year at all: two documents, not two versions.
            "e": Version(title="Employment Policy", tenant="acme"),
            "f": Version(title="Employment Policy", tenant="acme"),
            "g": Version(title="Levy Act", earliest="2001-01-01"),
            "h": Version(title="Levy Act", earliest="2001-01-01"),
        },
        {},
    )
    assert versions.group["a"] == versions.group["b"] and {"c", "d", "e", "f", "g", "h"}.isdisjoint(versions.group)
    assert versions.choose(["a", "b", "d"], "2024-01-01") == {"a": "b", "b": "b"}  # both in force: the later


@pytest.fixture(scope="module")
async def versions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two versions of the Dog Licensing Act (the later repeals the earlier) and an Act with no dates, ingested."""
    root = tmp_path_factory.mktemp("versions")
    (root / "laws").mkdir()
    for name, text in (("old.md", OLD), ("new.md", NEW), ("cats.md", CATS)):
        (root / "laws" / name).write_text(text)
    report = await ingest_into(Settings(data_dir=root / "data"), root / "laws")
    assert report.failures == 0 and report.repealed == 1
    return root / "data"


@pytest.fixture
async def services(versions_dir: Path, tmp_path: Path) -> AsyncIterator[Services]:
    copy = shutil.copytree(versions_dir, tmp_path / "data", ignore=shutil.ignore_patterns("LOCK"))
    async with open_services(Settings(data_dir=copy)) as opened:
        yield opened


async def ask(services: Services, question: str, as_of: str | None = None, session: str = "s") -> list[StreamEvent]:
    request = QueryRequest(q=question, as_of=as_of, session_id=session)
    return [event async for event in services.orchestrator.stream(request)]


def final_of(events: list[StreamEvent]) -> FinalEvent:
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final


def warned(events: list[StreamEvent], code: str) -> list[str]:
    return [e.message for e in events if isinstance(e, WarningEvent) and e.code == code]


async def test_ingestion_keeps_each_documents_dates_and_when_its_repeal_took_effect(services: Services) -> None:
    versions = services.corpus.versions.versions
    assert versions[OLD_KEY].consolidated == "2016-12-31" and versions[OLD_KEY].commenced == ""
    assert (versions[NEW_KEY].consolidated, versions[NEW_KEY].commenced) == ("2021-03-01", "2020-07-01")
    assert versions[CATS_KEY] == Version(title="Cat Registration Act")
    assert services.corpus.repealed[OLD_KEY].date == "2020-07-01"
    # The reader gives them beside the text.
    reader = DocumentReader(services.corpus)
    fee = await reader.provision(NEW_KEY, "s2", LOCAL)
    assert fee.version is not None and (fee.version.consolidated, fee.version.commenced) == ("2021-03-01", "2020-07-01")
    old = await reader.document(OLD_KEY, LOCAL)
    assert old.version == versions[OLD_KEY] and old.repealed_by is not None and old.repealed_by.date == "2020-07-01"


async def test_an_answer_quotes_the_version_in_force_and_names_its_consolidation(services: Services) -> None:
    events = await ask(services, FEE)
    final = final_of(events)
    assert final.citations and {c.doc_key for c in final.citations} == {NEW_KEY}
    assert {c.consolidated for c in final.citations} == {"2021-03-01"}
    assert "twenty dollars" in final.answer and "ten dollars" not in final.answer
    # The quote-only answer says which consolidation it quotes, once.
    assert final.answer.count("(Quoted from the Dog Licensing Act, 2020 as consolidated on 2021-03-01.)") == 1
    # The note is the corpus's record, not a statement the quote must support: the answer is verified as it stands.
    assert final.verified and not final.verification.get("unsupported_facts"), final.verification
    assert warned(events, "other_version") == warned(events, "repealed_law") == []


async def test_as_of_a_day_searches_only_the_documents_in_force_then(services: Services) -> None:
    # Before the new Act commenced: the old one, without a note of a repeal that had not taken effect.
    events = await ask(services, FEE, as_of="2019-06-01")
    final = final_of(events)
    assert {c.doc_key for c in final.citations} == {OLD_KEY} and "ten dollars" in final.answer
    assert {c.consolidated for c in final.citations} == {"2016-12-31"}
    assert "(Quoted from the Dog Licensing Act as consolidated on 2016-12-31.)" in final.answer
    assert "repealed" not in final.answer and warned(events, "repealed_law") == warned(events, "other_version") == []
    # Once the repeal took effect, the old Act is not searched: its guide-dog exemption is not quoted as the law.
    events = await ask(services, GUIDE, as_of="2021-01-01", session="t")
    assert OLD_KEY not in {c.doc_key for c in final_of(events).citations}
    # A document whose dates are not known is searched on any day.
    cats = final_of(await ask(services, CAT, as_of="1900-01-01", session="u"))
    assert {c.doc_key for c in cats.citations} == {CATS_KEY} and {c.consolidated for c in cats.citations} == {""}
    assert "consolidated" not in cats.answer


async def test_only_the_version_not_in_force_answering_is_quoted_with_a_warning(services: Services) -> None:
    # Documents dated before 2020 only: the version in force today is not searched, so only the other can be quoted.
    request = QueryRequest(q=GUIDE, date_to="2019-12-31")
    events = [event async for event in services.orchestrator.stream(request)]
    final = final_of(events)
    assert {c.doc_key for c in final.citations} == {OLD_KEY}
    assert warned(events, "other_version") == [
        "this answer quotes the Dog Licensing Act (as consolidated on 2016-12-31), which is not the version of that "
        "law in force today: the Dog Licensing Act, 2020 is; check what the Dog Licensing Act, 2020 says"
    ]
    assert len(warned(events, "repealed_law")) == 1
    # WhatsApp's reply carries the warning as a note, and each source's consolidation, briefly.
    reply = format_reply(final, {OLD_KEY: "Chapter 9:01"}, "", warned(events, "other_version"))
    assert "_Note: This answer quotes the Dog Licensing Act" in reply
    assert "(as at 2016-12-31)" in reply.split("*Sources*")[1]


def test_a_whatsapp_source_names_its_consolidation_in_a_few_words() -> None:
    cited = Citation(
        index=1, doc_key=NEW_KEY, title="Dog Licensing Act, 2020", section_id=f"{NEW_KEY}#s2", section="section 2",
        chunk_id=f"{NEW_KEY}#s2/c0", quote="twenty dollars", consolidated="2021-03-01",
    )  # fmt: skip
    reply = format_reply(FinalEvent(answer="It is twenty dollars [1].", citations=[cited]), {NEW_KEY: "9:21"})
    assert "\n[1] Dog Licensing Act, 2020 (Chapter 9:21), section 2 (as at 2021-03-01)" in reply


async def test_as_of_through_the_streaming_endpoint(versions_dir: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(versions_dir, tmp_path / "data", ignore=shutil.ignore_patterns("LOCK"))
    with LiveServer(create_app(Settings(data_dir=copy))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            stream = "/api/v1/query/stream"
            then = await collect(client, "GET", stream, params={"q": FEE, "as_of": "2019-06-01"})
            now = await collect(client, "POST", stream, json={"q": FEE, "session_id": "b"})
            for bad in ("2019-02-30", "2019", "yesterday", "２０１９-01-01"):
                response = await client.get(stream, params={"q": FEE, "as_of": bad})
                assert response.status_code == 422, bad
                error = response.json()["error"]
                assert error["code"] == "bad_request" and [d["field"] for d in error["details"]] == ["as_of"]
                assert "Traceback" not in response.text
                # It says what a day looks like, or that the day does not exist; never the schema's regex.
                problem = error["details"][0]["problem"]
                assert ("not a real date" if bad == "2019-02-30" else "is not a day as YYYY-MM-DD") in problem, problem
                assert "[0-9]" not in problem
    for events, key, day in ((then, OLD_KEY, "2016-12-31"), (now, NEW_KEY, "2021-03-01")):
        streamed = [e.json()["citation"] for e in events if e.event == "citation"]
        final = events[-1].json()
        assert events[-1].event == "final" and streamed
        for citation in [*streamed, *final["citations"]]:
            assert (citation["doc_key"], citation["consolidated"]) == (key, day)


async def test_the_command_line_asks_as_of_a_day(versions_dir: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(versions_dir, tmp_path / "data", ignore=shutil.ignore_patterns("LOCK"))

    def gweta(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "api.cli", "ask", *args],
            env={**os.environ, "GWETA_DATA_DIR": str(copy), "COLUMNS": "400"},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False,
        )  # fmt: skip

    bad = await asyncio.to_thread(gweta, FEE, "--as-of", "2019-02-30")
    assert bad.returncode == 2 and "Invalid --as-of" in bad.stdout
    shown = await asyncio.to_thread(gweta, FEE, "--as-of", "2019-06-01")
    assert shown.returncode == 0, shown.stdout
    assert "ten dollars" in shown.stdout and "twenty dollars" not in shown.stdout
    assert "(as consolidated on 2016-12-31)" in shown.stdout


async def test_the_model_is_shown_one_version_of_a_law(versions_dir: Path, tmp_path: Path) -> None:
    """The model path reads the same evidence: of the two versions' fee provisions, it is shown the one in force only,
    and its answer cites that one."""
    copy = shutil.copytree(versions_dir, tmp_path / "data", ignore=shutil.ignore_patterns("LOCK"))
    upstream = FakeOpenAI(
        [Reply(["Every owner of a dog shall pay a dog licence fee ", "of twenty dollars each year [1]."])]
    )
    with LiveServer(upstream.app) as llm_server:
        llm = LLMSettings(backend="openai", base_url=f"{llm_server.url}/v1", model="m-1")
        with LiveServer(create_app(Settings(data_dir=copy, llm=llm))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=120) as client:
                events = await collect(client, "GET", "/api/v1/query/stream", params={"q": FEE})
    shown = [json.dumps(r["messages"]) for r in upstream.requests if skill_of(r) == "synthesize"]
    assert shown and "twenty dollars" in shown[0] and "ten dollars" not in shown[0]
    final = events[-1].json()
    assert events[-1].event == "final" and "twenty dollars" in final["answer"]
    assert {(c["doc_key"], c["consolidated"]) for c in final["citations"]} == {(NEW_KEY, "2021-03-01")}
    assert not [e for e in events if e.event == "warning" and e.json()["code"] == "other_version"]


async def test_the_web_page_asks_as_of_a_day_and_shows_the_consolidation(versions_dir: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(versions_dir, tmp_path / "data", ignore=shutil.ignore_patterns("LOCK"))
    settings = Settings(data_dir=copy, limits=LimitsSettings(requests_per_minute=0))
    with LiveServer(create_app(settings)) as site:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            sent: list[dict[str, Any]] = []
            page.on(
                "request", lambda r: sent.append(json.loads(r.post_data or "{}")) if r.url.endswith("/stream") else None
            )
            await page.goto(site.url)
            await expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=TIMEOUT_MS)
            await page.locator("#filters summary").click()
            await page.locator("#as-of").fill("2019-06-01")
            await page.locator("#question").fill(FEE)
            await page.locator("#question").press("Enter")
            turn = page.locator(".turn").nth(0)
            await expect(turn.locator(".answer")).to_have_attribute("data-state", "done", timeout=TIMEOUT_MS)
            section = turn.locator(".source .source-section").first
            await expect(section).to_contain_text("as consolidated on 2016-12-31", timeout=TIMEOUT_MS)
            assert "ten dollars" in await turn.locator(".answer").inner_text()
            # The reader says which consolidation it shows, and from when the law was repealed.
            await turn.locator("a.cite").first.click()
            meta = page.locator("#reader-meta")
            await expect(meta).to_contain_text("As consolidated on 2016-12-31", timeout=TIMEOUT_MS)
            await expect(meta).to_contain_text("Repealed by section 3 of the Dog Licensing Act, 2020 from 2020-07-01")
            await browser.close()
    assert sent and sent[0]["as_of"] == "2019-06-01"


BEES = """<!-- id: test/act/2019/8; jurisdiction: TEST; expression: 2019-11-30 -->
# Beekeeping (Hives) Act, 2019

4. Registration of hives
Every beekeeper shall register each hive with the agricultural office and shall state in the application:
(a) the place where the hive is kept; and
(b) the number of colonies in the hive.
"""


async def test_a_consolidation_note_after_a_quote_without_a_full_stop_is_not_read_as_its_claim(
    tmp_path: Path,
) -> None:
    """A quote that ends without a full stop (a list's opening words) runs into the note after it when sentences are
    split, and a title may hold brackets of its own: the note's date is the corpus's record, not a fact the quoted
    provision must state."""
    (tmp_path / "laws").mkdir()
    (tmp_path / "laws" / "bees.md").write_text(BEES)
    assert (await ingest_into(Settings(data_dir=tmp_path / "data"), tmp_path / "laws")).failures == 0
    async with open_services(Settings(data_dir=tmp_path / "data")) as services:
        final = final_of(await ask(services, "What must a beekeeper state in the application to register a hive?"))
    assert "(Quoted from the Beekeeping (Hives) Act, 2019 as consolidated on 2019-11-30.)" in final.answer
    assert ":” [1] (Quoted" in final.answer
    assert final.verified and not final.verification.get("unsupported_facts"), (final.answer, final.verification)
