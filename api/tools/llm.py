"""The chat model: none by default (answers are extractive), any OpenAI-compatible endpoint when configured.

Structured calls (guard, route, plan, expand, grade…) go through LangChain's ``ChatOpenAI``. The streamed answer
goes through ``ChatStream``, which reads the same endpoint's Server-Sent Events itself: under ChatOpenAI every chunk
of a streamed answer is parsed by the openai SDK into pydantic models, turned into a LangChain message chunk and
handed to every callback, which costs a streamed 200-token answer about seven times the CPU of reading the lines and
decoding their JSON (`benchmarks/stream_client.py`), and with 50 answers streaming at once that CPU is what an
instance runs out of. The answer is still traced: its run opens and closes on the graph's callbacks (LangSmith when
configured) with the prompt, the text and the token usage, like a ChatOpenAI run, without a callback per chunk.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import ensure_config
from pydantic import SecretStr

from api.errors import UpstreamLLMError
from api.settings import LLMSettings

Usage = dict[str, int]
_BODY_SHOWN = 300
"""Characters of an error response's body kept in the error message."""


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


def build_chat_stream(cfg: LLMSettings, http: httpx.AsyncClient) -> ChatStream | None:
    """The streamed-answer client for the same endpoint and model as ``build_llm``'s (None without a model)."""
    match cfg.backend:
        case "none":
            return None
        case "openai":
            key = cfg.api_key.get_secret_value() or "not-needed"
            return ChatStream(
                url=(cfg.base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions",
                model=cfg.model,
                headers={"Authorization": f"Bearer {key}"},
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                timeout_s=cfg.timeout_s,
                http=http,
            )


@dataclass(frozen=True, slots=True)
class ChatStream:
    """One OpenAI-protocol chat completion, streamed: ``POST {base}/chat/completions`` with ``stream: true``, read as
    Server-Sent Events, each ``data:`` line's ``choices[0].delta.content`` yielded as it comes."""

    url: str
    model: str
    headers: Mapping[str, str]
    temperature: float
    max_tokens: int
    timeout_s: float
    """Longest wait for the connection, for the first chunk (the model reads its prompt first) and between chunks."""
    http: httpx.AsyncClient

    def body(self, system: str, user: str) -> dict[str, Any]:
        """The request ChatOpenAI sends for the same settings (``stream_usage``: usage in a last chunk)."""
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_completion_tokens": self.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

    async def pieces(self, system: str, user: str) -> AsyncIterator[str | Usage]:
        """The answer's text pieces as they arrive, and the usage where the server reports it (a dict, once).

        Raises UpstreamLLMError for an HTTP error status, an error event, a broken or timed-out connection and a
        line that is not the protocol's JSON."""
        timeout = httpx.Timeout(self.timeout_s, connect=min(5.0, self.timeout_s))
        try:
            async with self.http.stream(
                "POST", self.url, json=self.body(system, user), headers=self.headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    detail = (await response.aread()).decode(errors="replace")[:_BODY_SHOWN]
                    raise UpstreamLLMError(f"the language model answered HTTP {response.status_code}: {detail}")
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank separators, comments (": ping"), "event:" lines
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    for piece in _chunk_pieces(data):
                        yield piece
        except httpx.HTTPError as exc:
            raise UpstreamLLMError(f"the language model failed ({type(exc).__name__})") from exc


def _chunk_pieces(data: str) -> list[str | Usage]:
    """The text and usage one ``data:`` payload carries."""
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        raise UpstreamLLMError(f"the language model sent a chunk that is not JSON: {data[:80]!r}") from None
    if not isinstance(chunk, dict):
        raise UpstreamLLMError("the language model sent a chunk that is not a JSON object")
    if chunk.get("error"):
        error = chunk["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise UpstreamLLMError(f"the language model reported an error: {str(message)[:_BODY_SHOWN]}")
    out: list[str | Usage] = []
    for choice in chunk.get("choices") or ():
        content = (choice.get("delta") or {}).get("content") if isinstance(choice, dict) else None
        if isinstance(content, str) and content:
            out.append(content)
    usage = chunk.get("usage")
    if isinstance(usage, dict) and (usage.get("prompt_tokens") or usage.get("completion_tokens")):
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        out.append({"input_tokens": prompt, "output_tokens": completion,
                    "total_tokens": int(usage.get("total_tokens") or prompt + completion)})  # fmt: skip
    return out


class TracedRun:
    """The streamed answer as one chat-model run on the callbacks of the graph node that asks for it (none locally;
    LangChain's tracer, so LangSmith, in production): opened with the prompt, closed with the text and usage or the
    error. A no-op where the node's config carries no callbacks."""

    def __init__(self, stream: ChatStream) -> None:
        self.stream = stream
        self._run: Any = None

    async def start(self, system: str, user: str) -> None:
        config = ensure_config()
        callbacks = config.get("callbacks")
        if not callbacks:
            return
        manager = AsyncCallbackManager.configure(
            inheritable_callbacks=callbacks,
            inheritable_tags=config.get("tags"),
            inheritable_metadata=config.get("metadata"),
            local_metadata={"ls_provider": "openai", "ls_model_name": self.stream.model, "ls_model_type": "chat"},
        )
        params = {k: v for k, v in self.stream.body(system, user).items() if k != "messages"}
        runs = await manager.on_chat_model_start(
            {"lc": 1, "type": "not_implemented", "id": ["api", "tools", "llm", "ChatStream"], "name": "ChatStream"},
            [[SystemMessage(system), HumanMessage(user)]],
            invocation_params=params,
        )
        self._run = runs[0]

    async def end(self, text: str, usage: Usage) -> None:
        if self._run is not None:
            message = AIMessage(text, usage_metadata=usage_metadata(usage))
            result = LLMResult(generations=[[ChatGeneration(message=message)]],
                               llm_output={"model_name": self.stream.model})  # fmt: skip
            await self._run.on_llm_end(result)

    async def fail(self, exc: BaseException) -> None:
        if self._run is not None:
            await self._run.on_llm_error(exc)


def usage_metadata(usage: Usage) -> UsageMetadata:
    """``usage`` as LangChain's UsageMetadata (input, output and total tokens)."""
    inputs, outputs = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    return UsageMetadata(input_tokens=inputs, output_tokens=outputs,
                         total_tokens=usage.get("total_tokens", inputs + outputs))  # fmt: skip
