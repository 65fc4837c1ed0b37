"""WhatsApp: the Graph API client that sends replies, and the bot that answers each message through the query graph.

The webhook router verifies and acknowledges; everything slow happens here, in background tasks the bot owns:

    webhook POST ──► WhatsAppBot.accept()  (dedupe the message id, rate-limit the sender, schedule; returns at once)
                         └─► task: mark read + typing ──► QueryOrchestrator.stream() ──► format ──► split ──► send

Answers come from the same orchestrator and graph as ``/api/v1/query/stream``; a sender is a caller of its own
(``whatsapp:<wa_id>``), so each sender has one session and follow-up questions work.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from api.auth import Caller
from api.errors import BackendError, ForbiddenError, UnauthorizedError
from api.orchestrators.query import Asker
from api.schemas.events import Citation, ErrorEvent, FinalEvent, WarningEvent
from api.schemas.query import MAX_QUESTION_CHARS, QueryRequest
from api.schemas.whatsapp import InboundMessage
from api.settings import WhatsAppSettings
from api.tools.corpus import Corpus

log = logging.getLogger(__name__)

MAX_TEXT = 4096  # WhatsApp's limit for one text message body
SESSION_ID = "whatsapp"
# Notifications that are not a message to answer: an emoji reaction to our reply, a system note, a deleted message.
SILENT_TYPES = frozenset({"reaction", "system", "ephemeral", "request_welcome"})

UNSUPPORTED = (
    "Sorry, I can only read text messages for now. Please type your legal question, for example: "
    '"What is the minimum age of marriage?"'
)
RATE_LIMITED = "You have sent several questions in a short time. Please wait a minute, then send your next question."
TOO_LONG = f"That message is too long for me. Please ask your question in fewer than {MAX_QUESTION_CHARS} characters."
FAILED = "Sorry, something went wrong on our side while answering. Please try again in a few minutes."


def verify_signature(body: bytes, header: str | None, app_secret: str) -> None:
    """Check ``X-Hub-Signature-256`` (``sha256=<hex HMAC of the raw body>``) in constant time."""
    if not header:
        raise UnauthorizedError("the webhook call is not signed (X-Hub-Signature-256)")
    expected = "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), header.strip().encode()):
        raise ForbiddenError("the webhook signature does not match")


def mask(wa_id: str) -> str:
    """A sender's number as logs show it."""
    return f"…{wa_id[-4:]}"


class SeenIds:
    """Message ids already accepted, the most recent ``bound`` of them (webhooks are retried, sometimes for days)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._ids: OrderedDict[str, None] = OrderedDict()

    def first_time(self, message_id: str) -> bool:
        if message_id in self._ids:
            self._ids.move_to_end(message_id)
            return False
        self._ids[message_id] = None
        if len(self._ids) > self.bound:
            self._ids.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._ids)


class RateLimiter:
    """At most ``limit`` questions per sender in any ``window_s``; the first refusal in a window is told so."""

    def __init__(self, limit: int, window_s: float, clock: Any = time.monotonic) -> None:
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._times: dict[str, deque[float]] = {}
        self._told: dict[str, float] = {}

    def check(self, sender: str) -> str:
        """'ok', 'limited' (reply politely) or 'quiet' (already told in this window: say nothing)."""
        now = self.clock()
        times = self._times.setdefault(sender, deque())
        while times and now - times[0] >= self.window_s:
            times.popleft()
        if len(self._times) > 10_000:  # forget senders that have gone quiet
            for key in [k for k, v in self._times.items() if not v and k != sender]:
                del self._times[key]
                self._told.pop(key, None)
        if len(times) < self.limit:
            times.append(now)
            return "ok"
        if now - self._told.get(sender, -self.window_s) >= self.window_s:
            self._told[sender] = now
            return "limited"
        return "quiet"


_YEAR_SUFFIX = re.compile(r",?\s*\d{4}$")
_BREAK = re.compile(r"(?:[.!?][\"')\]]*[ \t]+|\n+)")


def split_message(text: str, limit: int = MAX_TEXT) -> list[str]:
    """Pieces of at most ``limit`` characters, cut after a sentence (or paragraph) wherever one fits."""
    pieces: list[str] = []
    text = text.strip()
    while len(text) > limit:
        window = text[: limit + 1]
        cuts = [m.end() for m in _BREAK.finditer(window) if m.end() <= limit and m.start() > 0]
        cut = cuts[-1] if cuts else window.rfind(" ") + 1 or limit
        if cut <= 0 or cut > limit:
            cut = limit
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return [p for p in pieces if p]


def provision_label(citation: Citation) -> str:
    """'s 3(1)' for a statute's provision, 'para 12' for a judgment's paragraph, else the section's own label."""
    fragment = (citation.provision_id or citation.section_id).partition("#")[2].split("~")[0]
    if m := re.fullmatch(r"s(\w+)((?:\(\w+\))*)", fragment):
        return f"s {m.group(1)}{m.group(2)}"
    if m := re.fullmatch(r"p(\d+)", fragment):
        return f"para {m.group(1)}"
    return citation.section


def reader_link(public_url: str, citation: Citation) -> str:
    fragment = (citation.provision_id or citation.section_id).partition("#")[2]
    return f"{public_url.rstrip('/')}/?doc={quote(citation.doc_key, safe='/')}&provision={quote(fragment, safe='()')}"


def whatsapp_markup(answer: str) -> str:
    """Markdown an LLM may write, as WhatsApp's own markup: **bold** and headings become *bold*."""
    answer = re.sub(r"\*\*(.+?)\*\*", r"*\1*", answer)
    return re.sub(r"(?m)^#{1,6}\s*(.+?)\s*$", r"*\1*", answer)


def format_reply(
    final: FinalEvent, chapters: dict[str, str], public_url: str = "", repealed: Sequence[str] = ()
) -> str:
    """The answer as WhatsApp text, then a note for each cited law that another law repeals (``repealed``: the
    warnings' messages), then one short numbered reference per citation (with a reader link if set), headed as the
    closest provisions rather than sources when the question got those instead of an answer (``related``)."""
    parts = [whatsapp_markup(final.answer.strip())]
    if not final.verified:
        parts.append("_Part of this answer could not be checked against its sources; please read them._")
    parts += [f"_Note: {message[:1].upper()}{message[1:]}._" for message in repealed]
    if final.citations:
        # The closest provisions to a question nothing answers are never labelled as the answer's sources.
        lines = ["*Closest provisions (not an answer)*" if final.outcome == "related" else "*Sources*"]
        for citation in sorted(final.citations, key=lambda c: c.index):
            title, chapter = citation.title, chapters.get(citation.doc_key, "")
            if chapter:
                chapter = chapter if chapter.lower().startswith("chapter") else f"Chapter {chapter}"
                title = f"{_YEAR_SUFFIX.sub('', title)} [{chapter}]"
            line = f"[{citation.index}] {title}, {provision_label(citation)}"
            if public_url:
                line += f"\n{reader_link(public_url, citation)}"
            lines.append(line)
        parts.append("\n".join(lines))
    return "\n\n".join(p for p in parts if p)


class WhatsAppSender(Protocol):
    """What the bot needs of WhatsApp: send a text, and show 'read' with a typing indicator."""

    async def send_text(self, to: str, body: str, preview_url: bool = False) -> None: ...

    async def mark_read(self, message_id: str, typing: bool = True) -> None: ...


class GraphApiSender:
    """The Cloud API's ``POST /{version}/{phone_number_id}/messages``, retried with backoff on 429, 5xx and
    network errors (``Retry-After`` is honoured)."""

    def __init__(self, cfg: WhatsAppSettings, http: httpx.AsyncClient) -> None:
        self.cfg, self.http = cfg, http
        self.url = f"{cfg.graph_url.rstrip('/')}/{cfg.api_version}/{cfg.phone_number_id}/messages"

    async def _post(self, payload: dict[str, Any]) -> None:
        headers = {"Authorization": f"Bearer {self.cfg.access_token.get_secret_value()}"}
        problem = ""
        for attempt in range(1, self.cfg.attempts + 1):
            delay = self.cfg.backoff_s * 2 ** (attempt - 1)
            try:
                response = await self.http.post(self.url, json=payload, headers=headers)
            except httpx.TransportError as exc:
                problem = type(exc).__name__
            else:
                if response.status_code < 300:
                    return
                problem = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    raise BackendError(f"the WhatsApp Graph API refused the message ({problem})")
                retry_after = response.headers.get("retry-after", "")
                if retry_after.isdigit():
                    delay = min(float(retry_after), 30.0)
            if attempt < self.cfg.attempts:
                log.warning("Graph API %s (try %d of %d); retrying in %.2fs", problem, attempt, self.cfg.attempts,
                            delay)  # fmt: skip
                await asyncio.sleep(delay)
        raise BackendError(f"the WhatsApp Graph API did not accept the message after {self.cfg.attempts} tries "
                           f"({problem})")  # fmt: skip

    async def send_text(self, to: str, body: str, preview_url: bool = False) -> None:
        await self._post({
            "messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": "text",
            "text": {"preview_url": preview_url, "body": body},
        })  # fmt: skip

    async def mark_read(self, message_id: str, typing: bool = True) -> None:
        payload: dict[str, Any] = {"messaging_product": "whatsapp", "status": "read", "message_id": message_id}
        if typing:
            payload["typing_indicator"] = {"type": "text"}
        await self._post(payload)


class WhatsAppBot:
    """Accepts webhook messages at once and answers each in a background task, a bounded number at a time."""

    def __init__(
        self,
        cfg: WhatsAppSettings,
        sender: WhatsAppSender,
        orchestrator: Asker,
        corpus: Corpus,
        public_url: str = "",
    ) -> None:
        self.cfg, self.sender, self.orchestrator, self.corpus = cfg, sender, orchestrator, corpus
        self.public_url = public_url
        self.seen = SeenIds(cfg.seen_ids)
        self.limiter = RateLimiter(cfg.rate_limit, cfg.rate_window_s)
        self._slots = asyncio.Semaphore(cfg.concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    def accept(self, messages: list[InboundMessage]) -> int:
        """Schedule an answer for each message not seen before; returns how many were scheduled. Never waits."""
        scheduled = 0
        for message in messages:
            if not self.seen.first_time(message.id):
                log.info("whatsapp: message %s from %s seen before; not answered again", message.id,
                         mask(message.sender))  # fmt: skip
                continue
            if message.type in SILENT_TYPES:
                continue
            if message.type == "text":
                verdict = self.limiter.check(message.sender)
                if verdict == "quiet":
                    log.info("whatsapp: %s is over the rate limit; message dropped", mask(message.sender))
                    continue
                reply = RATE_LIMITED if verdict == "limited" else None
            else:
                reply = UNSUPPORTED
            task = asyncio.create_task(self._handle(message, reply), name=f"whatsapp-{message.id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            scheduled += 1
        return scheduled

    async def _handle(self, message: InboundMessage, canned: str | None) -> None:
        async with self._slots:
            try:
                try:
                    await self.sender.mark_read(message.id, typing=canned is None)
                except BackendError as exc:  # a missing read receipt must not cost the answer
                    log.warning("whatsapp: could not mark %s read: %s", message.id, exc.message)
                question = (message.text.body if message.text else "").strip()
                if canned is None and len(question) > MAX_QUESTION_CHARS:
                    canned = TOO_LONG
                if canned is None and not question:
                    canned = UNSUPPORTED
                body = canned if canned is not None else await self.answer(message.sender, question)
                for piece in split_message(body):
                    await self.sender.send_text(message.sender, piece, preview_url=False)
                log.info("whatsapp: answered %s from %s", message.id, mask(message.sender))
            except BackendError as exc:
                log.error("whatsapp: reply to %s failed: %s", mask(message.sender), exc.message)
            except Exception:
                log.exception("whatsapp: answering %s failed unexpectedly", message.id)

    async def answer(self, wa_id: str, question: str) -> str:
        """Run the question through the query graph in this sender's session; the reply text."""
        try:
            request = QueryRequest(q=question, session_id=SESSION_ID)
        except ValidationError:
            return UNSUPPORTED
        caller = Caller(subject=f"whatsapp:{wa_id}")
        final: FinalEvent | None = None
        repealed: list[str] = []
        async for event in self.orchestrator.stream(request, caller):
            if isinstance(event, FinalEvent):
                final = event
            elif isinstance(event, WarningEvent) and event.code == "repealed_law":
                repealed.append(event.message)
            elif isinstance(event, ErrorEvent):
                log.warning("whatsapp: the query failed for %s: %s", mask(wa_id), event.code)
                return FAILED
        if final is None:
            return FAILED
        chapters = {}
        for doc_key in {c.doc_key for c in final.citations}:
            document = await self.corpus.document(doc_key)
            if document is not None and document.chapter:
                chapters[doc_key] = document.chapter
        return format_reply(final, chapters, self.public_url, repealed)

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Let answers in flight finish (up to ``timeout_s``), then cancel what is left."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


@asynccontextmanager
async def open_whatsapp(
    cfg: WhatsAppSettings, orchestrator: Asker, corpus: Corpus, public_url: str = ""
) -> AsyncIterator[WhatsAppBot | None]:
    """The bot for the app's lifespan, or None while the number is not configured."""
    if not cfg.configured:
        yield None
        return
    async with httpx.AsyncClient(timeout=httpx.Timeout(cfg.timeout_s, connect=5.0)) as http:
        bot = WhatsAppBot(cfg, GraphApiSender(cfg, http), orchestrator, corpus, public_url)
        try:
            yield bot
        finally:
            await bot.drain()
