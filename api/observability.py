"""Structured logs joined by a request id; LangSmith tracing when configured."""

from __future__ import annotations

import json
import logging
import uuid
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from api.settings import TracingSettings

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


def configure_logging(level: str = "INFO", json_logs: bool = True) -> None:
    handler = logging.StreamHandler()
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
