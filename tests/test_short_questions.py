"""A question with no word to search for (one letter, a number, only question words) gets a question back, over a
real stream read to its end: never an ``internal_error``."""

from pathlib import Path

import httpx
import pytest

from api.composer.answerability import evidence_features
from api.services import open_services
from api.settings import Settings
from tests.servers import LiveServer
from tests.sse import collect

STREAM = "/api/v1/query/stream"


@pytest.mark.parametrize("q", ["x", "0", "123", "ok", "why?", "what if she is 17?", "!!"])
async def test_a_question_with_no_word_to_search_for_is_asked_for_more(live_app: LiveServer, q: str) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=60) as client:
        for method, args in (("GET", {"params": {"q": q}}), ("POST", {"json": {"q": q}})):
            events = await collect(client, method, STREAM, **args)
            assert [e.event for e in events if e.event in ("final", "error")] == ["final"], events[-1]
            assert events[0].json()["route"] == "clarify"
            final = events[-1].json()
            assert final["answer"].startswith("Could you tell me a little more?") and final["abstained"]


async def test_the_evidence_of_a_question_without_meaning_words_covers_nothing(private_data_dir: Path) -> None:
    """The answerability features stay defined when a search of such a question finds passages ("123" does)."""
    seen: list[str] = []
    async with open_services(Settings(data_dir=private_data_dir)) as services:
        retriever = services.orchestrator.deps.retriever
        for q in ("123", "x", "why?"):
            found = await retriever.retrieve(q)
            if not found.hits:
                continue
            features = evidence_features(q, found, retriever.lexical, retriever.thesaurus)
            assert features["coverage"] == features["coverage_idf"] == features["pairs"] == 0.0
            seen.append(q)
    assert seen  # at least one of them found passages: the division it used to make was reached
