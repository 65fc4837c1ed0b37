"""Graph workers: questions answered in worker processes (``graph_workers``) give the answers the serving process
would give itself; a worker that dies ends its answers with an error and is started again (backing off while it
cannot load); workers that cannot load fail the start; an answer that fails in its worker ends with an error and the
worker answers on; a reader who leaves cancels the answer in its worker; stopping `gweta serve` leaves no worker
behind. Real processes throughout."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from api.auth import Caller
from api.errors import BackendError
from api.schemas.events import ErrorEvent, FinalEvent, MetaEvent, StreamEvent
from api.schemas.query import QueryRequest
from api.services import Services, open_services
from api.settings import Settings
from api.tools.sentence_vectors import StoredSentences
from api.tuning import STATE_FILE
from api.workers import HUNG_GRACE_S, LATE, LOST_WORKER, NO_WORKER, RESTART_DELAY_S, GraphWorkers
from tests.sse import collect
from tests.test_replicas import free_port

QUESTIONS = [
    "How much deposit can a landlord ask for?",
    "How long is maternity leave?",
    "What is the minimum age of marriage?",
    "Can my employer read my private e-mail?",  # not in the sample corpus: an abstention
]


@contextlib.asynccontextmanager
async def serving(data_dir: Path, workers: int, **settings: Any) -> AsyncIterator[tuple[Services, GraphWorkers]]:
    async with open_services(Settings(data_dir=data_dir, graph_workers=workers, **settings), serving=True) as services:
        assert isinstance(services.asker, GraphWorkers)
        yield services, services.asker


def break_tuning(data_dir: Path) -> Path:
    """Leave an unreadable ``gweta tune`` state in the data dir: a process that opens its services now fails."""
    state = data_dir / STATE_FILE
    state.parent.mkdir(exist_ok=True)
    state.write_text("{not json")
    return state


async def answer(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in events]


def essentials(final: StreamEvent) -> dict[str, Any]:
    assert isinstance(final, FinalEvent), final
    return {
        "answer": final.answer,
        "citations": [c.model_dump() for c in final.citations],
        "abstained": final.abstained,
        "verified": final.verified,
    }


async def test_workers_give_the_answers_the_serving_process_gives(private_data_dir: Path) -> None:
    async with serving(private_data_dir, 2) as (services, workers):
        assert len(set(workers.pids)) == 2 and os.getpid() not in workers.pids
        # The workers answer from the sentence vectors ingestion kept; this process, which only serves the debug
        # routes, does not load them and embeds its sentences itself: the answers below are the same all the same.
        here_embedder = services.orchestrator.deps.retriever.embedder
        assert isinstance(here_embedder, StoredSentences) and here_embedder.stored is None
        for question in QUESTIONS:
            request = QueryRequest(q=question, session_id=f"w-{QUESTIONS.index(question)}")
            here = await answer(services.orchestrator.stream(request))
            # A fresh session there too: a short question asked after others in one session reads as a follow-up.
            there = await answer(
                workers.stream(request.model_copy(update={"session_id": f"other-{request.session_id}"}))
            )
            assert isinstance(there[0], MetaEvent)
            assert [type(e) for e in there] == [type(e) for e in here], question
            assert essentials(there[-1]) == essentials(here[-1]), question
        # Answers run at once, spread over the workers.
        requests = [QueryRequest(q=q, session_id=f"many-{i}") for i, q in enumerate(QUESTIONS * 3)]
        finals = [events[-1] for events in await asyncio.gather(*(answer(workers.stream(r)) for r in requests))]
        assert all(isinstance(f, FinalEvent) for f in finals)
        assert set(workers.completed) == set(workers.pids) and not workers.failed


async def test_a_follow_up_reads_the_session_another_worker_saved(private_data_dir: Path) -> None:
    """Sessions live in the checkpointer, not in a worker: the second turn goes to the other worker and still reads
    the first (it answers as the serving process does for the same two turns, not as for a fresh session)."""
    first, follow_up = "How much deposit can a landlord ask for?", "And when must it be given back?"
    async with serving(private_data_dir, 2) as (services, workers):
        here = [
            await answer(services.orchestrator.stream(QueryRequest(q=q, session_id="here"))) for q in (first, follow_up)
        ]
        fresh = await answer(services.orchestrator.stream(QueryRequest(q=follow_up, session_id="fresh")))
        assert essentials(fresh[-1]) != essentials(here[1][-1])  # the follow-up depends on its session

        await answer(workers.stream(QueryRequest(q=first, session_id="there")))
        (saved_by,) = workers.completed
        os.kill(saved_by, signal.SIGSTOP)  # busy: the follow-up goes to the other worker
        held = workers.stream(QueryRequest(q=QUESTIONS[1], session_id="held"))
        holding = asyncio.ensure_future(anext(held))
        await asyncio.sleep(0.3)
        try:
            second = await answer(workers.stream(QueryRequest(q=follow_up, session_id="there")))
        finally:
            holding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await holding
            await held.aclose()
            os.kill(saved_by, signal.SIGCONT)
        assert essentials(second[-1]) == essentials(here[1][-1])
        (answered_by,) = set(workers.completed) - {saved_by}
        assert workers.completed[answered_by] == 1


async def test_a_worker_that_dies_ends_its_answer_with_an_error_and_is_started_again(private_data_dir: Path) -> None:
    async with serving(private_data_dir, 1) as (_, workers):
        (pid,) = workers.pids
        os.kill(pid, signal.SIGSTOP)  # it takes the question but cannot answer it
        stream = workers.stream(QueryRequest(q="How long is maternity leave?", session_id="d"))
        pending = asyncio.ensure_future(answer(stream))
        await asyncio.sleep(0.5)
        assert not pending.done()
        os.kill(pid, signal.SIGKILL)
        events = await asyncio.wait_for(pending, 10)
        assert events == [ErrorEvent(code="internal_error", message="Something went wrong on our side.")]
        # The next question waits for the new worker and is answered by it.
        events = await asyncio.wait_for(answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="e"))), 120)
        assert isinstance(events[-1], FinalEvent) and events[-1].citations
        assert workers.pids and workers.pids != [pid]


async def test_a_reader_who_leaves_cancels_the_answer_in_its_worker(private_data_dir: Path) -> None:
    async with serving(private_data_dir, 1) as (_, workers):
        (pid,) = workers.pids
        os.kill(pid, signal.SIGSTOP)
        stream = workers.stream(QueryRequest(q=QUESTIONS[1], session_id="c"))
        reading = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.3)
        assert workers.in_progress == 1
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await stream.aclose()
        assert workers.in_progress == 0
        os.kill(pid, signal.SIGCONT)
        # The worker got the cancel after the question: it answers the next one, and only that one.
        events = await asyncio.wait_for(answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="n"))), 60)
        assert isinstance(events[-1], FinalEvent) and events[-1].citations
        assert workers.completed == {pid: 1} and workers.cancelled == {pid: 1}


async def test_no_worker_ready_in_time_is_a_clear_error(private_data_dir: Path) -> None:
    async with serving(private_data_dir, 1, worker_start_timeout_s=1) as (_, workers):
        (pid,) = workers.pids
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):  # until the serving process has seen it go
            if not workers.pids:
                break
            await asyncio.sleep(0.05)
        events = await answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="x")))
        assert len(events) == 1 and isinstance(events[0], ErrorEvent) and events[0].code == "unavailable"


def test_gweta_serve_answers_through_its_workers_and_leaves_none_behind(private_data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "GWETA_GRAPH_WORKERS": "2", "GWETA_LIMITS__REQUESTS_PER_MINUTE": "0"}
    log = tmp_path / "serve.log"
    gweta = Path(sys.executable).parent / "gweta"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(gweta), "serve", "--data-dir", str(private_data_dir), "--port", str(port)],
            env=env, stdout=out, stderr=out,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        children = psutil.Process(server.pid).children(recursive=True)
        workers = [p for p in children if "api.workers" in " ".join(p.cmdline())]
        assert len(workers) == 2

        async def ask() -> list[Any]:
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                runs = [
                    collect(client, "GET", "/api/v1/query/stream", params={"q": q, "session_id": f"h{i}"})
                    for i, q in enumerate(QUESTIONS)
                ]
                return await asyncio.gather(*runs)

        answers = asyncio.run(ask())
        # on failure: the last event and the server's errors, whole (a tuple's repr is cut short in pytest's report)
        errors = "\n".join(line for line in log.read_text().splitlines() if '"level": "ERROR"' in line)
        for events, question in zip(answers, QUESTIONS, strict=True):
            assert events[0].event == "meta" and events[-1].event == "final", (
                f"{question}: {events[-1]}\n{errors[-4000:]}"
            )
        server.send_signal(signal.SIGTERM)
        # uvicorn shuts down cleanly, then ends by the signal it was sent
        assert server.wait(timeout=60) in (0, -signal.SIGTERM), log.read_text()[-3000:]
        assert "Application shutdown complete" in log.read_text()
        gone, alive = psutil.wait_procs(workers, timeout=15)
        assert not alive, [p.pid for p in alive]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


async def test_a_hung_worker_is_stopped_after_the_deadline_and_started_again(private_data_dir: Path) -> None:
    # 3 s: long enough for a restarted worker's first (cold) answer on a loaded 2-core machine, which once ran past 1 s
    async with serving(private_data_dir, 1, question_deadline_s=3) as (services, workers):
        (pid,) = workers.pids
        os.kill(pid, signal.SIGSTOP)  # alive, holding the question, never answering
        began = time.monotonic()
        events = await answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="h")))
        assert events == [LATE]
        assert time.monotonic() - began < services.settings.question_deadline_s + HUNG_GRACE_S + 3
        # It is started again: while it loads, a question is told the service is restarting, then answered.
        for _ in range(60):
            events = await answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="i")))
            if events != [NO_WORKER]:
                break
        assert isinstance(events[-1], FinalEvent) and events[-1].citations
        assert pid not in workers.pids


async def test_workers_that_cannot_load_fail_the_start_with_a_clear_error(tmp_path: Path) -> None:
    """A deploy whose workers cannot open their services fails at boot, naming them, as soon as they exit (not after
    the start's timeout); they are not started again."""
    break_tuning(tmp_path)
    workers = GraphWorkers(Settings(data_dir=tmp_path), 2)
    try:
        began = time.monotonic()
        with pytest.raises(BackendError, match=re.escape("graph worker(s) [0, 1] did not load")) as failed:
            await asyncio.wait_for(workers.start(timeout_s=300), 60)
        assert failed.value.code == "backend_error"
        assert time.monotonic() - began < 60
        assert not workers.pids
        await asyncio.sleep(RESTART_DELAY_S[0] + 1)
        assert not workers.pids
    finally:
        await workers.close()


async def test_a_worker_that_cannot_load_again_is_restarted_with_back_off(
    private_data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="api.workers")
    async with serving(private_data_dir, 1, worker_start_timeout_s=1) as (_, workers):
        (pid,) = workers.pids
        state = break_tuning(private_data_dir)  # the serving process has loaded; a worker started now cannot
        os.kill(pid, signal.SIGKILL)
        restart = re.compile(r"graph worker 0 exited \(code (-?\d+)\); starting it again in (\d+) s")

        def restarts() -> list[tuple[int, int]]:
            found = (restart.fullmatch(r.getMessage()) for r in caplog.records)
            return [(int(m[1]), int(m[2])) for m in found if m]

        deadline = time.monotonic() + 60
        while len(restarts()) < 3:
            assert time.monotonic() < deadline, restarts()
            await asyncio.sleep(0.1)
        # Killed, then two starts that exited while loading, each waited for twice as long as the one before.
        assert restarts() == [(-signal.SIGKILL, 1), (1, 2), (1, 4)]
        assert not workers.pids
        events = await answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="b")))
        assert events == [NO_WORKER]
        # Mended before the next start: that one loads and answers.
        state.unlink()
        deadline = time.monotonic() + 120
        while (events := await answer(workers.stream(QueryRequest(q=QUESTIONS[0], session_id="c")))) == [NO_WORKER]:
            assert time.monotonic() < deadline
        assert isinstance(events[-1], FinalEvent) and events[-1].citations
        assert len(restarts()) == 3 and pid not in workers.pids


async def test_an_answer_that_fails_in_its_worker_ends_with_an_error_and_the_worker_answers_on(
    private_data_dir: Path,
) -> None:
    async with serving(private_data_dir, 1) as (_, workers):
        (pid,) = workers.pids
        # A signed token's claims are JSON, which can spell a lone surrogate ("\\ud800"): such a subject passes
        # sign-in, and its session key cannot be encoded, so the answer raises in the worker before its graph runs.
        odd = Caller(subject="\ud800")
        request = QueryRequest(q=QUESTIONS[0], session_id="f")
        events = await asyncio.wait_for(answer(workers.stream(request, odd)), 60)
        assert events == [LOST_WORKER]
        assert workers.failed == {pid: 1} and not workers.completed and workers.in_progress == 0
        # The same worker answers the next question.
        events = await asyncio.wait_for(answer(workers.stream(request)), 60)
        assert isinstance(events[-1], FinalEvent) and events[-1].citations
        assert workers.pids == [pid] and workers.completed == {pid: 1} and workers.failed == {pid: 1}
