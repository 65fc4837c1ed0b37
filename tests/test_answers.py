"""Answers over real Zimbabwe statutes (read from ../shared), through the same orchestrator the API streams."""

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.schemas.events import FinalEvent
from api.schemas.query import QueryRequest
from api.services import Services, open_services
from api.settings import Settings
from tests.conftest import ingest_into

ACTS = ("marriages-act-2022.md", "citizenship-of-zimbabwe-act.md")


@pytest.fixture(scope="module")
async def zim(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    source = tmp_path_factory.mktemp("zim-src")
    for name in ACTS:  # a temporary selection for this test only; the project never keeps a copy
        shutil.copy(shared_data / "corpus/zimbabwe_legislation/markdown" / name, source)
    settings = Settings(data_dir=tmp_path_factory.mktemp("zim-data"))
    report = await ingest_into(settings, source)
    assert report.count("ingested") == 2
    async with open_services(settings) as services:
        yield services


async def final_answer(services: Services, question: str) -> FinalEvent:
    events = [e async for e in services.orchestrator.stream(QueryRequest(q=question, session_id="zim"))]
    final = events[-1]
    assert isinstance(final, FinalEvent)
    return final


async def test_minimum_age_of_marriage_cites_section_3(zim: Services, shared_data: Path) -> None:
    final = await final_answer(zim, "What is the minimum age of marriage?")
    source = (shared_data / "corpus/zimbabwe_legislation/markdown/marriages-act-2022.md").read_text()
    first = final.citations[0]
    assert first.section_id == "zw/act/2022/1#s3" and first.title == "Marriages Act, 2022"
    assert "No person under the age of eighteen years may contract a marriage" in first.quote
    assert all(c.quote in source for c in final.citations if c.doc_key == "zw/act/2022/1")


async def test_a_question_the_statutes_do_not_answer_is_declined(zim: Services) -> None:
    final = await final_answer(zim, "What is the speed limit on a highway?")
    assert final.abstained and not final.citations and "could not find" in final.answer


async def test_a_question_naming_a_law_the_corpus_lacks_is_declined_and_told_so(zim: Services) -> None:
    # The Marriages Act would otherwise answer well: "age" and "marriage" are all over it.
    final = await final_answer(zim, "What is the minimum age of marriage under the Matrimonial Causes Act?")
    assert final.abstained and not final.citations
    assert "no law named “Matrimonial Causes Act”" in final.answer
    named = await final_answer(zim, "What is the minimum age of marriage under the Marriages Act?")
    assert not named.abstained and named.citations[0].section_id == "zw/act/2022/1#s3"
