"""The WhatsApp number end to end: signed webhook payloads shaped like Meta's, posted to our app under uvicorn,
answered through the query graph, and replied through a loopback Graph API that records what it was sent."""

import asyncio
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from api.main import create_app
from api.schemas.events import Citation, FinalEvent
from api.settings import LLMSettings, Settings, StateSettings, WebSettings, WhatsAppSettings
from api.tools.shared_state import MemorySeenIds, MemorySenderLimits
from api.tools.whatsapp import MAX_TEXT, format_reply, split_message
from tests.redis_server import RedisServer
from tests.servers import FakeGraphAPI, FakeOpenAI, LiveServer, Reply

APP_SECRET = "meta-app-secret"
VERIFY_TOKEN = "verify-me"
PHONE_ID = "1234567890"
SENDER = "263771234567"


def whatsapp_settings(graph_url: str, **overrides: Any) -> WhatsAppSettings:
    values: dict[str, Any] = {
        "verify_token": VERIFY_TOKEN, "app_secret": APP_SECRET, "access_token": "graph-token",
        "phone_number_id": PHONE_ID, "graph_url": graph_url, "backoff_s": 0.01, **overrides,
    }  # fmt: skip
    return WhatsAppSettings(**values)


def notification(*messages: dict[str, Any], phone_id: str = PHONE_ID) -> dict[str, Any]:
    """A webhook body as Meta sends it for incoming messages."""
    senders = {m["from"] for m in messages}
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_id},
        "contacts": [{"profile": {"name": "Tariro"}, "wa_id": s} for s in sorted(senders)],
        "messages": list(messages),
    }
    return {"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [
        {"value": value, "field": "messages"}]}]}  # fmt: skip


_ids = iter(range(1, 10_000))


def text_message(body: str, sender: str = SENDER, message_id: str | None = None) -> dict[str, Any]:
    message_id = message_id or f"wamid.HBgL{next(_ids):06d}"
    return {"from": sender, "id": message_id, "timestamp": str(int(time.time())), "type": "text",
            "text": {"body": body}}  # fmt: skip


def signed(payload: dict[str, Any], secret: str = APP_SECRET) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {"content-type": "application/json", "x-hub-signature-256": signature}


async def post(client: httpx.AsyncClient, payload: dict[str, Any], secret: str = APP_SECRET) -> httpx.Response:
    body, headers = signed(payload, secret)
    return await client.post("/api/v1/whatsapp/webhook", content=body, headers=headers)


async def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the Graph API to be called"
        await asyncio.sleep(0.05)


@contextmanager
def running(settings: Settings) -> Iterator[LiveServer]:
    with LiveServer(create_app(settings)) as app:
        yield app


@pytest.fixture
def graph() -> Iterator[tuple[FakeGraphAPI, str]]:
    fake = FakeGraphAPI(phone_number_id=PHONE_ID)
    with LiveServer(fake.app) as server:
        yield fake, server.url


async def test_the_webhook_is_404_until_configured(live_app: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live_app.url, timeout=30) as client:
        params = {"hub.mode": "subscribe", "hub.verify_token": "x", "hub.challenge": "1"}
        assert (await client.get("/api/v1/whatsapp/webhook", params=params)).status_code == 404
        assert (await post(client, notification(text_message("hi")))).status_code == 404


def test_half_a_configuration_fails_at_boot() -> None:
    with pytest.raises(ValueError, match="GWETA_WHATSAPP__ACCESS_TOKEN"):
        Settings(whatsapp=WhatsAppSettings(verify_token="v", app_secret="s", phone_number_id="1"))


async def test_handshake_echoes_the_challenge_only_for_our_verify_token(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(graph[1]))
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            good = {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444"}
            response = await client.get("/api/v1/whatsapp/webhook", params=good)
            assert response.status_code == 200 and response.text == "1158201444"
            bad = await client.get("/api/v1/whatsapp/webhook", params={**good, "hub.verify_token": "guess"})
            assert bad.status_code == 403 and "1158201444" not in bad.text


async def test_unsigned_or_badly_signed_posts_are_refused_and_nothing_is_sent(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = graph
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url))
    payload = notification(text_message("How long is maternity leave?"))
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            unsigned = await client.post("/api/v1/whatsapp/webhook", json=payload)
            forged = await post(client, payload, secret="not-the-app-secret")
            body, headers = signed(payload)
            tampered = await client.post("/api/v1/whatsapp/webhook", content=body.replace(b"maternity", b"paternity"),
                                         headers=headers)  # fmt: skip
            await asyncio.sleep(0.5)
    assert unsigned.status_code == 401 and forged.status_code == 403 and tampered.status_code == 403
    assert fake.attempts == 0
    assert sum("webhook refused" in r.getMessage() for r in caplog.records) == 3


async def test_a_text_question_is_acknowledged_then_answered_with_references_extractive(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    web = WebSettings(public_url="https://gweta.example.org")
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url), web=web)
    message = text_message("How long is maternity leave?")
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            response = await post(client, notification(message))
            assert response.status_code == 200 and response.json() == {"status": "accepted", "scheduled": 1}
            await wait_for(lambda: bool(fake.texts()))
    read = fake.sent[0]
    assert read == {"messaging_product": "whatsapp", "status": "read", "message_id": message["id"],
                    "typing_indicator": {"type": "text"}}  # fmt: skip
    [reply] = fake.texts(SENDER)
    sent = fake.sent[-1]
    assert sent["to"] == SENDER and sent["type"] == "text" and sent["recipient_type"] == "individual"
    assert "ninety-eight days" in reply
    assert "*Sources*\n[1] Employment Standards Act [Chapter 28:04], s 5" in reply
    assert "https://gweta.example.org/?doc=sample/act/2023/7&provision=s5" in reply
    assert "[1]" in reply.split("*Sources*")[0]  # the answer keeps its markers


async def test_the_llm_path_answers_and_follow_ups_share_the_senders_session(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    first = ["A landlord may ask ", "for at most two months' rent ", "as a deposit [1]."]
    second = ["The deposit must be kept ", "in a separate account [1]."]
    upstream = FakeOpenAI([Reply(first, delay_s=0.3), Reply(second)])
    with LiveServer(upstream.app) as llm:
        llm_cfg = LLMSettings(backend="openai", base_url=f"{llm.url}/v1", api_key="sk-test", model="m-1")
        settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url), llm=llm_cfg)
        with running(settings) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                response = await post(client, notification(text_message("How much deposit can a landlord ask?")))
                # Acknowledged while the model is still writing: the reply has not gone out yet.
                assert response.status_code == 200 and fake.texts() == []
                await wait_for(lambda: len(fake.texts()) == 1)
                await post(client, notification(text_message("And where must it be kept?")))
                await wait_for(lambda: len(fake.texts()) == 2)
    answer, follow_up = fake.texts(SENDER)
    assert answer.startswith("A landlord may ask for at most two months' rent as a deposit [1].")
    assert "[1] Residential Tenancies Act [Chapter 8:21], s 3" in answer and "https://" not in answer
    assert follow_up.startswith("The deposit must be kept in a separate account [1].")
    # The follow-up was made self-contained from the first turn of this sender's session.
    rewrites = [r for r in upstream.requests if "deposit" in json.dumps(r) and "where must it be kept" in json.dumps(r)]
    assert any("How much deposit can a landlord ask?" in json.dumps(r) for r in rewrites)


async def test_a_replayed_message_id_is_answered_once(private_data_dir: Path, graph: tuple[FakeGraphAPI, str]) -> None:
    fake, url = graph
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url))
    message = text_message("How much deposit can a landlord ask for?")
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            first = await post(client, notification(message))
            replay = await post(client, notification(message))
            await wait_for(lambda: bool(fake.texts()))
            await asyncio.sleep(1.0)
    assert first.json()["scheduled"] == 1 and replay.status_code == 200 and replay.json()["scheduled"] == 0
    assert len(fake.texts()) == 1 and len(fake.reads()) == 1


async def test_non_text_messages_get_a_short_note_of_what_is_supported(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url))
    audio = {"mime_type": "audio/ogg; codecs=opus", "sha256": "abc", "id": "1234", "voice": True}
    voice = {"from": SENDER, "id": "wamid.voice1", "timestamp": "1", "type": "audio", "audio": audio}
    image = {"from": "263779999999", "id": "wamid.image1", "timestamp": "1", "type": "image",
             "image": {"mime_type": "image/jpeg", "sha256": "def", "id": "5678"}}  # fmt: skip
    reaction = {"from": SENDER, "id": "wamid.reaction1", "timestamp": "1", "type": "reaction",
                "reaction": {"message_id": "wamid.out.1", "emoji": "\U0001f44d"}}  # fmt: skip
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            assert (await post(client, notification(voice, image, reaction))).json()["scheduled"] == 2
            await wait_for(lambda: len(fake.texts()) == 2)
            await asyncio.sleep(0.3)
    for to in (SENDER, "263779999999"):
        [note] = fake.texts(to)
        assert "only read text messages" in note and len(note) < 300
    assert len(fake.sent) == 4  # a read receipt and a note each; the thumbs-up reaction needs no answer


async def test_messages_for_another_number_are_ignored(private_data_dir: Path, graph: tuple[FakeGraphAPI, str]) -> None:
    fake, url = graph
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url))
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            response = await post(client, notification(text_message("hello"), phone_id="999"))
            value = {"metadata": {"phone_number_id": PHONE_ID}, "statuses": [{"id": "x", "status": "read"}]}
            change = {"field": "messages", "value": value}
            statuses = {"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [change]}]}
            receipt = await post(client, statuses)
            await asyncio.sleep(0.5)
    assert response.json()["scheduled"] == 0 and receipt.json()["scheduled"] == 0 and fake.attempts == 0


async def test_the_rate_limit_answers_politely_once_then_stays_quiet(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url, rate_limit=2))
    questions = ["How long is maternity leave?", "How much deposit can a landlord ask for?", "hello", "hello again"]
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            scheduled = [(await post(client, notification(text_message(q)))).json()["scheduled"] for q in questions]
            await wait_for(lambda: len(fake.texts()) == 3)
            await asyncio.sleep(0.5)
    assert scheduled == [1, 1, 1, 0]
    texts = fake.texts(SENDER)
    assert len(texts) == 3 and sum("Please wait a minute" in t for t in texts) == 1


async def test_graph_api_429_and_500_are_retried_with_backoff(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    fake.failures = [429, 500, 503]  # the read receipt gets 429 then 500; the reply one 503, then all succeed
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url))
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            await post(client, notification(text_message("How long is maternity leave?")))
            await wait_for(lambda: bool(fake.texts()))
    assert fake.attempts == 5 and len(fake.sent) == 2 and "ninety-eight days" in fake.texts()[0]


async def test_a_graph_api_that_keeps_failing_is_given_up_on_and_logged(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = graph
    fake.failures = [500] * 20
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url, attempts=2))
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            await post(client, notification(text_message("How long is maternity leave?")))
            await wait_for(lambda: any("reply to" in r.getMessage() for r in caplog.records))
    assert fake.attempts == 4 and fake.sent == []  # 2 tries for the read receipt, 2 for the answer


LEADS = ["", "Under the Act, ", "In short, ", "Put simply, ", "By law, ", "In other words, ", "That is, "]
DEPOSIT_RULES = [
    "a landlord may not ask for more than two months' rent as a deposit",
    "a landlord shall not require a deposit that exceeds the rent payable for two months",
    "a deposit may not exceed the rent payable for two months",
    "a landlord cannot require a deposit of more than two months' rent",
    "no landlord may require a deposit that exceeds two months' rent",
    "a landlord must not require a deposit exceeding the rent payable for two months",
    "the deposit a landlord requires may not exceed two months' rent",
    "a landlord shall keep every deposit in an interest-bearing account with a registered bank",
    "a landlord must keep the deposit in an interest-bearing account with a registered bank",
    "every deposit is kept by the landlord in an interest-bearing account with a registered bank",
    "the deposit must be held in an interest-bearing account with a registered bank",
    "the landlord keeps every deposit in an interest-bearing account at a registered bank",
]


async def test_a_long_llm_answer_is_split_at_sentence_boundaries(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    # Distinct sentences: the gate holds back a sentence the answer has already said.
    said = [f"{lead}{rule} [1]." for lead in LEADS for rule in DEPOSIT_RULES]
    sentences = [s[0].upper() + s[1:] for s in said]
    paragraphs = [" ".join(sentences[i : i + 12]) for i in range(0, len(sentences), 12)]  # about 6,000 characters
    long_answer = "\n\n".join(paragraphs)
    pieces = [long_answer[i : i + 500] for i in range(0, len(long_answer), 500)]
    upstream = FakeOpenAI([Reply(pieces), Reply(pieces)])
    with LiveServer(upstream.app) as llm:
        llm_cfg = LLMSettings(backend="openai", base_url=f"{llm.url}/v1", api_key="sk-test", model="m-1")
        settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url), llm=llm_cfg)
        with running(settings) as app:
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                await post(client, notification(text_message("How much deposit can a landlord ask for?")))
                await wait_for(lambda: len(fake.texts()) >= 2)
                await asyncio.sleep(0.5)
    texts = fake.texts(SENDER)
    assert len(texts) == 2 and all(len(t) <= MAX_TEXT for t in texts)
    assert texts[0].endswith("[1].") and texts[1][0].isupper()
    assert all(sentence in "".join(texts) for sentence in sentences) and len(set(sentences)) == 84
    # The sources close the reply: the model's, then the definitions its quote uses (section 2).
    assert texts[-1].rstrip().endswith("[1] Residential Tenancies Act [Chapter 8:21], s 3\n"
                                       "[2] Residential Tenancies Act [Chapter 8:21], s 2")  # fmt: skip


def test_split_message_prefers_sentences_then_words() -> None:
    text = "First sentence here. " * 300
    pieces = split_message(text, limit=1000)
    assert all(len(p) <= 1000 and p.endswith("here.") for p in pieces) and " ".join(pieces) == text.strip()
    words = split_message("word " * 500, limit=100)
    assert all(len(p) <= 100 and not p.startswith(" ") for p in words) and " ".join(words) == ("word " * 500).strip()
    assert split_message("x" * 250, limit=100) == ["x" * 100, "x" * 100, "x" * 50]
    assert split_message("short") == ["short"] and split_message("   ") == []


def test_references_name_the_act_its_chapter_and_the_provision() -> None:
    citation = Citation(
        index=1, doc_key="zw/act/2022/1", title="Marriages Act, 2022", section_id="zw/act/2022/1#s3",
        provision_id="zw/act/2022/1#s3(1)", section="section 3", heading="Minimum age of marriage", chunk_id="c1",
        quote="No person under the age of eighteen years may contract a marriage",
    )  # fmt: skip
    final = FinalEvent(answer="**Eighteen.** No person under eighteen may marry [1].", citations=[citation])
    reply = format_reply(final, {"zw/act/2022/1": "5:15"}, "https://gweta.example.org/")
    assert reply.startswith("*Eighteen.* No person")
    assert (
        "[1] Marriages Act [Chapter 5:15], s 3\nhttps://gweta.example.org/?doc=zw/act/2022/1&provision=s3(1)" in reply
    )
    unverified = format_reply(final.model_copy(update={"verified": False}), {}, "")
    assert "could not be checked" in unverified and unverified.endswith("[1] Marriages Act, 2022, s 3")


def test_a_reply_lists_at_most_three_sources_one_per_section_and_renumbers_the_markers() -> None:
    def cited(index: int, section: str, part: str = "") -> Citation:
        return Citation(
            index=index, doc_key="zw/act/2022/1", title="Marriages Act, 2022", section_id=f"zw/act/2022/1#s{section}",
            provision_id=f"zw/act/2022/1#s{section}{part}", section=f"section {section}", chunk_id="c", quote="q",
        )  # fmt: skip

    citations = [cited(1, "3", "(1)"), cited(2, "3", "(3)"), cited(3, "8"), cited(4, "9", "(2)"), cited(5, "10")]
    final = FinalEvent(answer="One [1]. Two [2].\n\nThree [3]. Four [4] and five [5].", citations=citations)
    reply = format_reply(final, {}, "https://gweta.example.org")
    assert reply.split("\n\n*Sources*\n") == [
        "One [1]. Two [1].\n\nThree [2]. Four [3] and five.",  # the answer first, its markers those listed below
        "[1] Marriages Act, 2022, s 3\nhttps://gweta.example.org/?doc=zw/act/2022/1&provision=s3(1)\n"
        "[2] Marriages Act, 2022, s 8\nhttps://gweta.example.org/?doc=zw/act/2022/1&provision=s8\n"
        "[3] Marriages Act, 2022, s 9\nhttps://gweta.example.org/?doc=zw/act/2022/1&provision=s9(2)\n"
        "_and 1 more provision_",
    ]
    same = FinalEvent(answer="It says so [1][2].", citations=citations[:2])
    assert format_reply(same, {}, "").startswith("It says so [1].\n\n*Sources*\n[1] Marriages Act, 2022, s 3")


async def test_a_reply_through_the_webhook_fits_a_phone(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str]
) -> None:
    fake, url = graph
    web = WebSettings(public_url="https://gweta.example.org")
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url), web=web)
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            await post(client, notification(text_message("What is the minimum age of marriage?")))
            await wait_for(lambda: bool(fake.texts()))
    [reply] = fake.texts(SENDER)
    answer, sources = reply.split("\n\n*Sources*\n")
    assert answer.startswith("Section 3 of the Marriage Act") and "eighteen" in answer
    # Two quotes of section 3, one of section 8 and the two definitions (section 2) its quoted words use: three
    # sources, and the answer's markers name them.
    assert re.findall(r"\[(\d)\]", answer) == ["1", "1", "2", "3", "3"]
    lines = sources.splitlines()
    assert lines == [
        "[1] Marriage Act [Chapter 5:17], s 3", "https://gweta.example.org/?doc=sample/act/2022/9&provision=s3(1)",
        "[2] Marriage Act [Chapter 5:17], s 8", "https://gweta.example.org/?doc=sample/act/2022/9&provision=s8(1)",
        "[3] Marriage Act [Chapter 5:17], s 2", "https://gweta.example.org/?doc=sample/act/2022/9&provision=s2",
    ]  # fmt: skip
    assert len(reply) < 1500  # one message, the two definitions included


async def test_seen_ids_and_rate_limiter_are_bounded() -> None:
    seen = MemorySeenIds(100)
    assert all([await seen.first_time(f"m{i}") for i in range(150)]) and len(seen) == 100
    assert not await seen.first_time("m149") and await seen.first_time("m0")  # the oldest were forgotten
    now = [0.0]
    limiter = MemorySenderLimits(2, 60.0, clock=lambda: now[0])
    assert [await limiter.check("a") for _ in range(4)] == ["ok", "ok", "limited", "quiet"]
    assert await limiter.check("b") == "ok"
    now[0] = 61.0
    assert await limiter.check("a") == "ok"


async def test_with_redis_down_a_message_is_left_for_metas_retry_and_answered_once_after(
    private_data_dir: Path, graph: tuple[FakeGraphAPI, str], redis: RedisServer
) -> None:
    """The duplicate filter fails closed by default: while Redis is down the webhook answers 503 (Meta retries
    later) rather than risk answering twice; once Redis is back the retry is answered, and a second retry is not."""
    fake, url = graph
    state = StateSettings(backend="redis", url=SecretStr(redis.url), timeout_s=0.5)
    settings = Settings(data_dir=private_data_dir, whatsapp=whatsapp_settings(url), state=state)
    message = notification(text_message("How long is maternity leave?"))
    with running(settings) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
            redis.kill()
            refused = await post(client, message)
            assert refused.status_code == 503 and refused.json()["error"]["code"] == "state_unavailable"
            redis.start()  # the app is not restarted
            for _ in range(50):
                retried = await post(client, message)
                if retried.status_code == 200:
                    break
                await asyncio.sleep(0.1)
            assert retried.json() == {"status": "accepted", "scheduled": 1}
            again = await post(client, message)
            assert again.json() == {"status": "accepted", "scheduled": 0}
            await wait_for(lambda: bool(fake.texts()))
            await asyncio.sleep(0.5)
    assert len(fake.reads()) == 1 and len(fake.texts(SENDER)) == 1
