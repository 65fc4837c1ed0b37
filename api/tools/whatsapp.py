"""WhatsApp: the Graph API client that sends replies, and the bot that answers each message through the query graph.

The webhook router verifies and acknowledges; everything slow happens here, in background tasks the bot owns:

    webhook POST ──► WhatsAppBot.accept()  (dedupe the message id, rate-limit the sender, schedule; returns at once)
                         (ids seen and sender limits live in the shared state, so every replica agrees)
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
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from api.auth import Caller
from api.errors import BackendError, ForbiddenError, StateUnavailableError, UnauthorizedError
from api.orchestrators.query import Asker
from api.schemas.events import Citation, ErrorEvent, FinalEvent, WarningEvent
from api.schemas.query import MAX_QUESTION_CHARS, QueryRequest
from api.schemas.whatsapp import InboundMessage
from api.settings import StateSettings, WhatsAppSettings
from api.text.citation_style import cite_as, jurisdiction_for
from api.text.schedules import unpinpointed
from api.tools.corpus import Corpus
from api.tools.shared_state import MemorySeenIds, MemorySenderLimits, SeenIds, SenderLimits, SharedState, Verdict

log = logging.getLogger(__name__)

MAX_TEXT = 4096  # WhatsApp's limit for one text message body
MAX_SOURCES = 3  # sources listed under a reply: a phone screen's worth
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


def reader_link(public_url: str, citation: Citation) -> str:
    fragment = (citation.provision_id or citation.section_id).partition("#")[2]
    return f"{public_url.rstrip('/')}/?doc={quote(citation.doc_key, safe='/')}&provision={quote(fragment, safe='()')}"


def whatsapp_markup(answer: str) -> str:
    """Markdown an LLM may write, as WhatsApp's own markup: **bold** and headings become *bold*."""
    answer = re.sub(r"\*\*(.+?)\*\*", r"*\1*", answer)
    return re.sub(r"(?m)^#{1,6}\s*(.+?)\s*$", r"*\1*", answer)


def sources_of(citations: Sequence[Citation]) -> list[list[Citation]]:
    """The cited sections in the order the answer first cites them, each with every citation of it."""
    sections: dict[str, list[Citation]] = {}
    for citation in sorted(citations, key=lambda c: c.index):
        sections.setdefault(citation.section_id or citation.provision_id, []).append(citation)
    return list(sections.values())


def source_line(citations: Sequence[Citation], chapter: str, jurisdiction: str = "", cited_as: str = "") -> str:
    """The cited section as its jurisdiction cites it ("Marriages Act [Chapter 5:15], s 3"; a judgment's paragraph
    by the judgment's own citation, ``cited_as``: "[2025] ZWHHC 48, para 12"), with the consolidation it is quoted
    from, briefly ("(as at 2022-05-27)"): one line however many of its parts are cited."""
    first = citations[0]
    line = cite_as(first.title, unpinpointed(first.section), first.section_id, chapter,
                   jurisdiction_for(first.doc_key, jurisdiction), citation=cited_as)  # fmt: skip
    return f"{line} (as at {first.consolidated})" if first.consolidated else line


def renumbered(answer: str, numbers: dict[int, int]) -> str:
    """The answer's [n] markers as the numbers of the sources listed; a marker of a source left out is dropped."""

    def marker(match: re.Match[str]) -> str:
        number = numbers.get(int(match.group(2)))
        return f"{match.group(1)}[{number}]" if number else ""

    answer = re.sub(r"(\s?)\[(\d+)\]", marker, answer)
    return re.sub(r"(\[\d+\])(?:\1)+", r"\1", answer)  # "[1][1]" once two quotes of one section became one source


def format_reply(
    final: FinalEvent,
    chapters: dict[str, str],
    public_url: str = "",
    repealed: Sequence[str] = (),
    jurisdictions: dict[str, str] | None = None,
    cited_as: dict[str, str] | None = None,
) -> str:
    """A reply that fits a phone: the answer first, then a note for each cited law that another law repeals or that
    is not the version in force (``repealed``: the warnings' messages), then at most ``MAX_SOURCES`` sources, one per
    cited section, as ``[k] Act [Chapter], s N`` (a judgment by its own citation, ``cited_as``) with a reader link
    (when the site's address is set) and the consolidation quoted ("(as at 2022-05-27)"). The answer's markers are
    renumbered to match; a source past the limit is counted, not listed. The closest provisions to a question
    nothing answers (``related``) are never headed as the answer's sources."""
    sources = sources_of(final.citations)
    numbers = {c.index: k for k, group in enumerate(sources[:MAX_SOURCES], 1) for c in group}
    parts = [whatsapp_markup(renumbered(final.answer.strip(), numbers))]
    if not final.verified:
        parts.append("_Part of this answer could not be checked against its sources; please read them._")
    parts += [f"_Note: {message[:1].upper()}{message[1:]}._" for message in repealed]
    if sources:
        lines = ["*Closest provisions (not an answer)*" if final.outcome == "related" else "*Sources*"]
        for k, group in enumerate(sources[:MAX_SOURCES], 1):
            key = group[0].doc_key
            named = source_line(group, chapters.get(key, ""), (jurisdictions or {}).get(key, ""),
                                (cited_as or {}).get(key, ""))  # fmt: skip
            line = f"[{k}] {named}"
            if public_url:
                line += f"\n{reader_link(public_url, group[0])}"
            lines.append(line)
        if len(sources) > MAX_SOURCES:
            more = len(sources) - MAX_SOURCES
            lines.append(f"_and {more} more {'provision' if more == 1 else 'provisions'}_")
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
        shared: SharedState | None = None,
    ) -> None:
        self.cfg, self.sender, self.orchestrator, self.corpus = cfg, sender, orchestrator, corpus
        self.public_url = public_url
        self.seen: SeenIds = shared.seen if shared is not None else MemorySeenIds(cfg.seen_ids)
        self.limiter: SenderLimits = (
            shared.senders if shared is not None else MemorySenderLimits(cfg.rate_limit, cfg.rate_window_s)
        )
        self.state = shared.cfg if shared is not None else StateSettings()
        self._slots = asyncio.Semaphore(cfg.concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    async def accept(self, messages: list[InboundMessage]) -> int:
        """Schedule an answer for each message not seen before; returns how many were scheduled. Waits only for the
        shared state; if it fails, StateUnavailableError (a 503, so Meta retries the webhook later) unless the
        settings say to go on (``state.whatsapp_seen_fail`` / ``state.limits_fail`` = open)."""
        scheduled = 0
        for message in messages:
            if not await self._first_time(message.id):
                log.info("whatsapp: message %s from %s seen before; not answered again", message.id,
                         mask(message.sender))  # fmt: skip
                continue
            if message.type in SILENT_TYPES:
                continue
            if message.type == "text":
                verdict = await self._check_sender(message.sender)
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

    async def _first_time(self, message_id: str) -> bool:
        try:
            return await self.seen.first_time(message_id)
        except StateUnavailableError:
            if self.state.whatsapp_seen_fail == "closed":
                raise
            log.warning("whatsapp: message ids unavailable; %s answered unchecked (fail open)", message_id)
            return True

    async def _check_sender(self, sender: str) -> Verdict:
        try:
            return await self.limiter.check(sender)
        except StateUnavailableError:
            if self.state.limits_fail == "closed":
                raise
            return "ok"

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
            elif isinstance(event, WarningEvent) and event.code in ("repealed_law", "other_version"):
                repealed.append(event.message)
            elif isinstance(event, ErrorEvent):
                log.warning("whatsapp: the query failed for %s: %s", mask(wa_id), event.code)
                return FAILED
        if final is None:
            return FAILED
        chapters, jurisdictions, cited_as = {}, {}, {}
        for doc_key in {c.doc_key for c in final.citations}:
            document = await self.corpus.document(doc_key)
            if document is not None:
                chapters[doc_key], jurisdictions[doc_key] = document.chapter, document.jurisdiction
                cited_as[doc_key] = document.judgment.neutral_citation if document.judgment else ""
        return format_reply(final, chapters, self.public_url, repealed, jurisdictions, cited_as)

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Let answers in flight finish (up to ``timeout_s``), then cancel what is left."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


@asynccontextmanager
async def open_whatsapp(
    cfg: WhatsAppSettings, orchestrator: Asker, corpus: Corpus, public_url: str = "", shared: SharedState | None = None
) -> AsyncIterator[WhatsAppBot | None]:
    """The bot for the app's lifespan, or None while the number is not configured."""
    if not cfg.configured:
        yield None
        return
    async with httpx.AsyncClient(timeout=httpx.Timeout(cfg.timeout_s, connect=5.0)) as http:
        bot = WhatsAppBot(cfg, GraphApiSender(cfg, http), orchestrator, corpus, public_url, shared)
        try:
            yield bot
        finally:
            await bot.drain()
