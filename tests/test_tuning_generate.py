"""`gweta tune --generate`: questions the configured model writes per provision become "generated" pairs with BM25
hard negatives; bad replies, failed calls and questions that copy the provision are skipped and counted; the time
budget cuts the run; no model configured means no call. The model is the loopback OpenAI-protocol server."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

from starlette.requests import Request
from starlette.responses import Response

from api.settings import LLMSettings, Settings
from api.tools.corpus import Corpus
from api.tools.object_store import build_object_store
from ingestion.pairs import GENERATE_STAGE, copies_provision, generate_pairs, mine_pairs, split_pairs, usable_questions
from tests.servers import FakeOpenAI, LiveServer, Reply, answer_json

SKILL = "generate_questions"


class QuestionWriter(FakeOpenAI):
    """Answers each provision it is asked about by the order the requests arrive in (a bad reply, an empty one, one
    that copies the provision, ...), records which questions it gave for which provision, and the most requests it
    had in flight at once."""

    def __init__(self, behaviours: list[str], delay_s: float = 0.05, one_at_a_time_s: float = 0.0) -> None:
        super().__init__([])
        self.behaviours, self.delay_s = behaviours, delay_s
        self.one_at_a_time_s = one_at_a_time_s  # > 0: answer one request at a time, each taking this long (llama.cpp)
        self.serial = asyncio.Lock()
        self.asked_about: dict[str, str] = {}  # question -> the provision text it was written for
        self.in_flight = self.most_in_flight = 0

    async def chat(self, request: Request) -> Response:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if not self.one_at_a_time_s:
                return await super().chat(request)
            async with self.serial:
                await asyncio.sleep(self.one_at_a_time_s)
                return await super().chat(request)
        finally:
            self.in_flight -= 1

    def _next(self, skill: str) -> Reply:
        if skill != SKILL:
            return Reply(status=400)
        n = self.skills_called.count(SKILL) - 1
        user = self.requests[-1]["messages"][-1]["content"]
        text = user.split("Provision:\n", 1)[1].strip()
        heading = re.search(r"^Heading: (.*)$", user, re.M)
        subject = heading.group(1).lower() if heading else "this"
        copy = "Is it so that " + " ".join(text.split()[:10]) + "?"
        plain = [f"What are my rights about {subject} (case {n})?", f"Can someone explain {subject} to me, case {n}?"]
        behaviour = self.behaviours[n] if n < len(self.behaviours) else "valid"
        generic = "What is the purpose of the Act?"
        questions = {
            "empty": [], "copy": [copy], "copy+valid": [copy, plain[0]], "valid": plain, "generic": [generic, plain[1]],
            "only generic": [generic],
        }.get(behaviour, [])  # fmt: skip
        for question in questions:
            self.asked_about[question] = text
        delay = {"delay_s": self.delay_s}
        match behaviour:
            case "invalid":
                return Reply(["Sure! Here are some questions a tenant might ask."], **delay)
            case "failed":
                return Reply(status=400)
            case "not a list":
                return answer_json({"questions": "What is a deposit?"}, **delay)
        return answer_json({"questions": questions}, **delay)


def llm_settings(
    data_dir: Path, url: str, backend: Literal["none", "openai"] = "openai", timeout_s: float = 30.0
) -> Settings:
    cfg = LLMSettings(backend=backend, base_url=f"{url}/v1", api_key="sk-test", model="m-1", timeout_s=timeout_s)
    return Settings(data_dir=data_dir, llm=cfg)


async def _corpus(data_dir: Path) -> Corpus:
    settings = Settings(data_dir=data_dir)
    return await Corpus.load(build_object_store(settings.object_store, settings.data_dir))


def test_a_reply_keeps_distinct_plain_questions_and_drops_those_asking_for_a_provision_number() -> None:
    reply = {"questions": [
        "What does provision 5. Marriage consideration (1) state?", "What does section 12B say?",
        "When must a landlord refund a deposit?", "When must a landlord  refund a deposit?", "Why?",
        "Can my boss cut my wages?", "Is a marriage valid without witnesses?",
    ]}  # fmt: skip
    assert usable_questions(reply) == [
        "When must a landlord refund a deposit?", "Can my boss cut my wages?", "Is a marriage valid without witnesses?",
    ]  # fmt: skip
    assert usable_questions({"questions": "What is a deposit?"}) is None


def test_the_copy_guard_counts_consecutive_words_case_and_punctuation_aside() -> None:
    text = "(1) A landlord shall not require a deposit that exceeds the rent payable for two months."
    assert copies_provision("Is it true a LANDLORD shall not require a deposit, that exceeds the rent?", text)
    assert not copies_provision("Can the landlord shall not require a deposit that is large?", text)  # 7 in a row
    assert not copies_provision("How much deposit can my landlord ask for?", text)


async def test_valid_replies_become_generated_pairs_and_bad_ones_are_skipped_and_counted(
    sample_data_dir: Path,
) -> None:
    chunks = sorted((await _corpus(sample_data_dir)).chunks.values(), key=lambda c: c.chunk_id)
    section_of = {c.embed_text: c.section_id for c in chunks}
    upstream = QuestionWriter(
        ["invalid", "empty", "copy", "copy+valid", "failed", "not a list", "generic", "only generic"]
    )
    stages: list[tuple[str, int, int | None]] = []
    with LiveServer(upstream.app) as llm:
        settings = llm_settings(sample_data_dir, llm.url)
        pairs, stats = await generate_pairs(
            settings, chunks, 11, max_seconds=60, concurrency=2, progress=lambda *a: stages.append(a)
        )

    assert upstream.skills_called == [SKILL] * 11 and upstream.most_in_flight == 2  # bounded, yet concurrent
    request = upstream.requests[0]
    assert request["model"] == "m-1" and not request.get("stream")
    assert request["response_format"] == {"type": "json_object"}
    assert "Act: " in request["messages"][-1]["content"]
    assert len({r["messages"][-1]["content"] for r in upstream.requests}) == 11  # eleven different provisions
    # 11 asked: 1 invalid, 1 empty, 1 failed call, 1 not a list, 1 only a copy, 1 only the question another provision
    # got too; kept: 1 plain beside a copy, 1 plain beside that shared question, 3 x 2 plain.
    assert (stats.asked, stats.invalid, stats.empty, stats.failed, stats.copied, stats.shared) == (11, 2, 1, 1, 2, 2)
    assert (stats.answered, stats.questions, stats.unasked, stats.stopped_by, stats.note) == (5, 8, 0, "done", "")
    assert stages[0] == (GENERATE_STAGE, 0, 11) and sum(s[1] for s in stages if s[0] == GENERATE_STAGE) == 11

    assert len(pairs) == 8 and {p.kind for p in pairs} == {"generated"}
    for pair in pairs:
        provision = upstream.asked_about[pair.query]  # a question the model wrote, for this pair's provision
        assert provision in pair.positive and section_of[pair.positive] == pair.section_id
        assert not copies_provision(pair.query, pair.positive)
        assert pair.negative and section_of[pair.negative] != pair.section_id  # a hard negative from elsewhere
    # Split with the mined pairs by provision: a held-out provision is unseen in training, whichever its kind.
    train, held = split_pairs(mine_pairs(chunks, 40) + pairs)
    assert not {p.section_id for p in train} & {p.section_id for p in held}


async def test_the_time_budget_cuts_the_calls_in_flight_and_leaves_the_rest_unasked(sample_data_dir: Path) -> None:
    chunks = list((await _corpus(sample_data_dir)).chunks.values())
    upstream = QuestionWriter([], delay_s=0.4)  # each valid reply takes seconds
    with LiveServer(upstream.app) as llm:
        start = time.perf_counter()
        pairs, stats = await generate_pairs(llm_settings(sample_data_dir, llm.url), chunks, 6, 0.5, concurrency=2)
        elapsed = time.perf_counter() - start
    assert pairs == [] and elapsed < 3
    assert (stats.asked, stats.failed, stats.unasked, stats.stopped_by) == (2, 2, 4, "time")


async def test_calls_queued_at_a_server_that_answers_one_at_a_time_get_their_turn(sample_data_dir: Path) -> None:
    chunks = list((await _corpus(sample_data_dir)).chunks.values())
    upstream = QuestionWriter([], delay_s=0.0, one_at_a_time_s=0.3)
    with LiveServer(upstream.app) as llm:
        settings = llm_settings(sample_data_dir, llm.url, timeout_s=0.5)  # one reply fits, three queued do not
        pairs, stats = await generate_pairs(settings, chunks, 6, 30, concurrency=3)
    assert upstream.most_in_flight == 3 and (stats.asked, stats.failed, stats.answered) == (6, 0, 6)
    assert len(pairs) == 12


async def test_no_model_configured_means_nothing_generated_and_no_call(sample_data_dir: Path) -> None:
    chunks = list((await _corpus(sample_data_dir)).chunks.values())
    upstream = QuestionWriter([])
    with LiveServer(upstream.app) as llm:
        unset = llm_settings(sample_data_dir, llm.url, backend="none")  # an address, but no model chosen
        pairs, stats = await generate_pairs(unset, chunks, 5, 60)
        assert pairs == [] and stats.note == "no model configured" and stats.asked == 0
        pairs, stats = await generate_pairs(llm_settings(sample_data_dir, llm.url), chunks, 0, 60)  # not asked for
        assert pairs == [] and stats.note == "off"
    assert upstream.requests == []


def test_the_command_passes_generate_to_tune_and_reports_what_came_back(private_data_dir: Path) -> None:
    upstream = QuestionWriter(["invalid"])
    with LiveServer(upstream.app) as llm:
        env = {
            **os.environ, "GWETA_DATA_DIR": str(private_data_dir), "GWETA_LLM__BACKEND": "openai",
            "GWETA_LLM__BASE_URL": f"{llm.url}/v1", "GWETA_LLM__MODEL": "m-1",
        }  # fmt: skip

        def gweta(*args: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "api.cli", "tune", *args]
            return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)

        bad = gweta("--generate", "-1")
        assert bad.returncode == 2 and "--generate 0 or more" in bad.stderr
        done = gweta(
            "--generate", "3", "--generate-concurrency", "2", "--max-pairs", "12", "--max-minutes", "0.01",
            "--batch-size", "4",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert upstream.skills_called == [SKILL] * 3 and upstream.most_in_flight == 2
    assert "generated questions: 4 from 2 of 3 provisions asked (3 requested)" in done.stdout
    assert (
        "skipped: 1 invalid and 0 empty replies, 0 failed calls, 0 questions copying the provision, 0 written for"
        in done.stdout
    )
    assert re.search(r"pairs mined from the corpus: train \d+, held_out \d+, .*generated 4\b", done.stdout)
    assert "generate " in done.stdout.splitlines()[-1]  # its time among the stages'
