"""The chat model: none by default (answers are extractive), any OpenAI-compatible endpoint when configured."""

from __future__ import annotations

import httpx
from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from api.settings import LLMSettings


def build_llm(cfg: LLMSettings, http: httpx.AsyncClient) -> BaseChatModel | None:
    """Build the chat model on the app's one shared HTTP client (closed by the lifespan)."""
    match cfg.backend:
        case "none":
            return None
        case "openai":
            from langchain_openai import ChatOpenAI

            return ChatOpenAI(
                model=cfg.model,
                base_url=cfg.base_url,
                api_key=cfg.api_key if cfg.api_key.get_secret_value() else SecretStr("not-needed"),
                temperature=cfg.temperature,
                timeout=cfg.timeout_s,
                # LangChain's own default (120 s between chunks) cuts off a slow local model still reading its prompt.
                stream_chunk_timeout=cfg.timeout_s,
                max_retries=0,  # structured calls retry with their own backoff within their time limit
                max_completion_tokens=cfg.max_tokens,
                streaming=True,
                stream_usage=True,
                http_async_client=http,
            )
