from pathlib import Path

import pytest
from pydantic import ValidationError

from api.settings import Settings


def test_defaults_are_embedded_and_need_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("GWETA_"):
            monkeypatch.delenv(name)
    s = Settings()
    assert s.vector_store.uri == "" and s.milvus_uri.endswith("milvus.db")
    assert (s.object_store.backend, s.checkpointer.backend, s.llm.backend) == ("local", "sqlite", "none")
    assert (s.embeddings.backend, s.reranker.backend, s.tracing.backend) == ("minilm", "none", "log")


def test_nested_sections_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GWETA_DATA_DIR", "/tmp/gweta-x")
    monkeypatch.setenv("GWETA_LLM__BACKEND", "openai")
    monkeypatch.setenv("GWETA_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GWETA_LLM__API_KEY", "sk-secret")
    s = Settings()
    assert s.data_dir == Path("/tmp/gweta-x")
    assert s.llm.backend == "openai" and s.llm.base_url.endswith("/v1")
    assert "sk-secret" not in repr(s)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"llm": {"backend": "openai"}}, "llm.base_url"),
        ({"reranker": {"backend": "bge"}}, "reranker.model_path"),
        ({"auth": {"enabled": True}}, "auth.jwt_secret"),
        ({"vector_store": {"backend": "pinecone"}}, "vector_store.backend"),
    ],
)
def test_unworkable_settings_fail_at_boot_with_a_clear_message(overrides: dict[str, object], expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        Settings(**overrides)  # type: ignore[arg-type]
    assert expected.split(".")[0] in str(info.value)
    assert expected.split(".")[-1] in str(info.value) or "Input should be" in str(info.value)
