"""Token coalescing: answer text goes out a sentence or a short pause at a time, never later than it must."""

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from api.composer.citations import FLUSH_AFTER_S, FLUSH_CHARS, CitationTracker, stream_words
from api.main import create_app
from api.schemas.events import Citation, CitationEvent, TokenEvent
from tests.servers import FakeOpenAI, LiveServer, Reply
from tests.sse import read_events
from tests.test_llm import QUESTION, llm_settings
from tests.test_stream import assert_contract

CITATION = Citation(index=1, doc_key="sample/act/2024/3", title="Residential Tenancies Act, 2024",
                    section_id="sample/act/2024/3#s3", section="section 3", chunk_id="sample/act/2024/3#s3/c0",
                    quote="A landlord shall not require a deposit")  # fmt: skip


def sent(events: list[Any]) -> list[str]:
    return [f"token:{e.text}" if isinstance(e, TokenEvent) else f"citation:{e.citation.index}" for e in events]


async def test_pieces_join_up_to_a_sentence_end_or_a_marker_then_the_rest_on_flush() -> None:
    events: list[Any] = []
    tracker = CitationTracker([CITATION], events.append)
    for piece in ["The ", "deposit ", "is capped. ", "It is ", "held in ", "trust [1", "] and ", "repaid ", "on exit"]:
        tracker.feed(piece)
    assert sent(events) == [
        "token:The ",  # the first piece at once
        "token:deposit is capped. ",  # a sentence's end
        "token:It is held in trust [1] and ",  # the marker completed: its citation follows at once
        "citation:1",
    ]
    tracker.flush()
    assert sent(events)[-1] == "token:repaid on exit" and tracker.pending == ""
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == tracker.text
    tracker.flush()  # nothing left: no empty event
    assert len(events) == 5


async def test_a_pause_sends_what_was_written_after_the_flush_interval() -> None:
    events: list[Any] = []
    tracker = CitationTracker([], events.append)
    tracker.feed("A landlord ")
    tracker.feed("may not ")
    tracker.feed("ask ")
    assert sent(events) == ["token:A landlord "]
    await asyncio.sleep(FLUSH_AFTER_S * 3)
    assert sent(events) == ["token:A landlord ", "token:may not ask "]


async def test_a_long_run_without_a_sentence_end_is_sent_in_bounded_pieces() -> None:
    events: list[Any] = []
    tracker = CitationTracker([], events.append)
    stream_words("word " * 400, tracker)
    texts = [e.text for e in events]
    assert "".join(texts) == "word " * 400 and tracker.pending == ""
    assert all(len(t) < FLUSH_CHARS + 20 for t in texts) and 4 <= len(texts) <= 7


async def test_extractive_answers_stream_a_sentence_per_event() -> None:
    events: list[Any] = []
    tracker = CitationTracker([CITATION], events.append)
    stream_words(
        "Section 3 provides: “A landlord shall not require a deposit.” [1]\n\nIt also says more. Done.", tracker
    )
    assert sent(events) == [
        "token:Section 3 provides: ",
        "token:“A landlord shall not require a deposit.” [1]\n\nIt ",  # three words a piece: the marker's
        "citation:1",
        "token:also says more. ",
        "token:Done.",
    ]
    assert [e for e in events if isinstance(e, CitationEvent)][0].citation.quote == CITATION.quote


async def test_a_paced_model_streams_sentence_by_sentence_through_the_server(private_data_dir: Path) -> None:
    """A model slower than the flush interval: each sentence reaches the reader on its own once it is complete and
    checked, while the model is still writing the next (verified streaming holds a sentence, not the answer)."""
    first = ["A landlord ", "may not ask ", "for more than ", "two months' rent ", "as a deposit [1", "]. "]
    second = ["So the deposit ", "cannot exceed ", "two months' rent [1]."]
    pieces = first + second
    upstream = FakeOpenAI([Reply(pieces, delay_s=FLUSH_AFTER_S * 4)])
    with LiveServer(upstream.app) as llm_server:
        with LiveServer(create_app(llm_settings(private_data_dir, llm_server.url))) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                arrivals: list[tuple[float, Any]] = []
                params = {"q": QUESTION}
                async with client.stream("GET", "/api/v1/query/stream", params=params) as response:
                    async for event in read_events(response):
                        arrivals.append((time.perf_counter(), event))
    events = [e for _, e in arrivals]
    # (After the model's sentences come the definitions its cited words use, each as its own paragraph.)
    texts = [e.json()["text"] for e in events if e.event == "token"]
    assert texts[:2] == ["".join(first).strip(), " " + "".join(second)]
    assert assert_contract(events)["answer"].startswith("".join(pieces) + "\n\nSection 2 ")
    token_times = [t for t, e in arrivals if e.event == "token"][:2]
    # The first sentence was read while the model was still writing the second.
    assert token_times[-1] - token_times[0] >= FLUSH_AFTER_S * 4 * (len(second) - 2)
