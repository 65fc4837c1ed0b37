"""Structured logs joined by a request id; LangSmith tracing when configured."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from contextvars import ContextVar
from typing import Any
from urllib.parse import quote, unquote_plus

from langchain_core.callbacks import BaseCallbackHandler

from api.settings import PrivacySettings, TracingSettings

request_id: ContextVar[str] = ContextVar("request_id", default="-")


def new_request_id() -> str:
    rid = uuid.uuid4().hex
    request_id.set(rid)
    return rid


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": request_id.get(),
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


# Query-string names whose values are credentials, and the shapes credentials have anywhere else in a log line.
CREDENTIAL_PARAMS = frozenset({"access_token", "token", "id_token", "api_key", "apikey", "key", "password", "secret"})
REDACTED = "[redacted]"
_CREDENTIAL_SHAPES = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), r"\1 " + REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), REDACTED),  # a JWT, wherever it is
    (re.compile(r"(?i)\b(authorization|api[_-]?key|access_token|password|secret)([\"']?\s*[:=]\s*[\"']?)[^\s&\"',]+"),
     r"\1\2" + REDACTED),
)  # fmt: skip


def describe_question(question: str, privacy: PrivacySettings) -> str:
    """A question as the privacy setting lets logs show it: a short hash (default), the text, or nothing."""
    match privacy.log_questions:
        case "text":
            return json.dumps(question, ensure_ascii=False)
        case "hash":
            return "sha256:" + hashlib.sha256(question.encode()).hexdigest()[:16]
        case "none":
            return "[not logged]"


def redact(text: str) -> str:
    """``text`` with credentials replaced by a marker."""
    for pattern, replacement in _CREDENTIAL_SHAPES:
        text = pattern.sub(replacement, text)
    return text


_NAMED_CREDENTIAL = re.compile(
    r"(?i)(?:^|[^a-z0-9_])(?:" + "|".join(sorted(CREDENTIAL_PARAMS)) + r")\s*[=:]"
)  # a credential's name and its value's start, wherever a decoded target holds one
_SAFE = "/[]:@!$'()*+,=~"  # written as they are; anything else (line breaks, quotes, spaces) percent-encoded


def _decoded(text: str) -> str:
    """``text`` percent-decoded until it no longer changes: a twice-encoded credential is still one."""
    for _ in range(5):
        plain = unquote_plus(text)
        if plain == text:
            break
        text = plain
    return text


def _holds_credential(text: str) -> bool:
    plain = _decoded(text)
    return bool(_NAMED_CREDENTIAL.search(plain)) or redact(plain) != plain


def _parameter(piece: str, privacy: PrivacySettings, question: bool) -> str:
    """One ``name=value`` of a query string or of a path's matrix parameters, fit for a log."""
    name, equals, value = piece.partition("=")
    key = _decoded(name).strip().lower()
    if key in CREDENTIAL_PARAMS or _holds_credential(name):
        return f"{quote(_decoded(name), safe='')[:40]}={REDACTED}"
    if question and key == "q":
        return f"q={quote(describe_question(_decoded(value), privacy), safe=_SAFE)}"
    if _holds_credential(value):
        return f"{quote(_decoded(name), safe='')}={REDACTED}"
    return quote(_decoded(name), safe="") + equals + quote(_decoded(value), safe=_SAFE)


def redact_target(target: str, privacy: PrivacySettings) -> str:
    """A request target (path and query string) fit for a log: credentials redacted in every form a URL can carry
    them (query parameters split by ``&`` or ``;``, matrix parameters in the path, percent-encoded once or more,
    or nested in another parameter's value), the question per privacy, and nothing that could forge a log line."""
    path, _, query = target.partition("?")
    segments = _decoded(path).split(";")  # matrix parameters: /documents;access_token=...
    shown = quote(segments[0], safe=_SAFE) if not _holds_credential(segments[0]) else REDACTED
    shown += "".join(";" + _parameter(p, privacy, question=False) for p in segments[1:])
    if query:
        pieces = [p for p in re.split(r"[&;]", query) if p]
        shown += "?" + "&".join(_parameter(p, privacy, question=True) for p in pieces)
    return redact(shown)


class RedactingFilter(logging.Filter):
    """Rewrites every record it sees without credentials: on a handler, for all our logs; on uvicorn's access
    logger, the request target (whose query string may carry ``access_token`` and the question) too."""

    def __init__(self, privacy: PrivacySettings | None = None) -> None:
        super().__init__()
        self.privacy = privacy or PrivacySettings()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
            client, method, target, version, status = record.args
            record.args = (client, method, redact_target(str(target), self.privacy), version, status)
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def install_access_log_redaction(privacy: PrivacySettings) -> None:
    """Put one RedactingFilter (with this privacy setting) on uvicorn's access logger, replacing any earlier one."""
    access = logging.getLogger("uvicorn.access")
    for old in [f for f in access.filters if isinstance(f, RedactingFilter)]:
        access.removeFilter(old)
    access.addFilter(RedactingFilter(privacy))


def configure_logging(level: str = "INFO", json_logs: bool = True) -> None:
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter() if json_logs else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "sentence_transformers", "transformers", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # Milvus Lite's in-process gRPC server logs an ERROR for an optional call it does not implement.
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
    # pymilvus configures its own loggers when first imported; import it now so the settings below stick. Milvus
    # Lite cannot hand out server timestamps and pymilvus warns on every paged query; its fallback is correct.
    import pymilvus  # noqa: F401

    milvus_log = logging.getLogger("pymilvus")
    milvus_log.handlers[:] = []
    milvus_log.propagate = True
    milvus_log.setLevel(logging.ERROR)


def build_callbacks(cfg: TracingSettings) -> list[BaseCallbackHandler]:
    """Callbacks that trace every graph node: none locally (logs carry the request id), LangSmith in production."""
    match cfg.backend:
        case "log":
            return []
        case "langsmith":
            from langchain_core.tracers import LangChainTracer
            from langsmith import Client

            client = Client(api_url=cfg.endpoint, api_key=cfg.api_key.get_secret_value() or None)
            return [LangChainTracer(project_name=cfg.project, client=client)]
