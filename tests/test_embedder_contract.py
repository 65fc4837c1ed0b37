"""The Embedder contract on the packaged local model and on the OpenAI-compatible backend (langchain-openai) against
a loopback server that speaks `/v1/embeddings`; one collection per model, and `gweta reembed` to move between them."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.errors import ConfigError
from api.main import create_app
from api.services import open_services
from api.settings import EmbeddingSettings, Settings
from api.tools.corpus import Manifest
from api.tools.embeddings import Embedder, build_embedder, build_shared_embedder
from api.tools.object_store import LocalObjectStore
from api.tools.onnx_embedder import OnnxEmbedder, for_queries
from api.tools.reembed import reembed
from api.tools.vector_store import MilvusVectorStore, collection_for
from tests.servers import LiveServer
from tests.sse import collect


class FakeEmbeddings:
    """`POST /v1/embeddings` as OpenAI serves it (float or base64 encoding): hashed bag-of-words vectors, so texts
    that share words are close. Records every request's inputs."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []
        self.app = Starlette(routes=[Route("/v1/embeddings", self.embeddings, methods=["POST"])])

    @staticmethod
    def vector(text: str, dims: int) -> np.ndarray:
        v = np.zeros(dims, dtype=np.float32)
        for word in re.findall(r"[a-z]+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            v[int.from_bytes(digest[:4], "little") % dims] += 1.0 if digest[4] % 2 else -1.0
        return v if v.any() else np.ones(dims, dtype=np.float32)

    async def embeddings(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != "Bearer sk-test":
            return JSONResponse({"error": {"message": "bad key"}}, status_code=401)
        body = await request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.requests.append(inputs)
        dims = int(body.get("dimensions") or 64)
        data = []
        for i, text in enumerate(inputs):
            v = self.vector(text, dims)
            value: Any = (
                base64.b64encode(v.astype("<f4").tobytes()).decode()
                if body.get("encoding_format") == "base64"
                else v.tolist()
            )
            data.append({"object": "embedding", "index": i, "embedding": value})
        usage = {"prompt_tokens": sum(len(t.split()) for t in inputs), "total_tokens": 0}
        return JSONResponse({"object": "list", "data": data, "model": body["model"], "usage": usage})


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    with LiveServer(fake.app) as server:
        yield fake, f"{server.url}/v1"


def openai_settings(base_url: str, dims: int = 64) -> EmbeddingSettings:
    return EmbeddingSettings(
        backend="openai", base_url=base_url, model="text-embedding-3-small", api_key=SecretStr("sk-test"),
        dimensions=dims, batch_size=16,
    )  # fmt: skip


@pytest.fixture(params=["local", "onnx", "openai", "shared"])
async def embedder(request: pytest.FixtureRequest) -> AsyncIterator[Embedder]:
    with ThreadPoolExecutor(1) as pool:
        if request.param == "local":
            yield build_embedder(EmbeddingSettings(), pool)
        elif request.param == "onnx":  # the query path's runtime for the local model
            onnx = for_queries(
                build_embedder(EmbeddingSettings(), pool), EmbeddingSettings(), request.getfixturevalue("tmp_path"), 1
            )
            assert isinstance(onnx, OnnxEmbedder)
            yield onnx
        elif request.param == "shared":  # the query path's cross-request cache and batcher over the local model
            yield build_shared_embedder(EmbeddingSettings(), build_embedder(EmbeddingSettings(), pool))
        else:
            _, url = request.getfixturevalue("upstream")
            async with httpx.AsyncClient() as http:
                yield build_embedder(openai_settings(url), pool, http)


async def test_vectors_have_the_declared_shape_and_unit_length(embedder: Embedder) -> None:
    texts = [f"section {i} of the Residential Tenancies Act about deposits" for i in range(40)]
    vectors = await embedder.embed_documents(texts)
    assert vectors.shape == (40, embedder.dimensions) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    again = await embedder.embed_documents(list(reversed(texts)))
    assert np.allclose(again[::-1], vectors, atol=1e-5)  # order kept, deterministic
    assert (await embedder.embed_documents([])).shape == (0, embedder.dimensions)


async def test_related_texts_are_closer_than_unrelated_ones(embedder: Embedder) -> None:
    a, b, c = await embedder.embed_documents(
        ["the landlord may ask for a deposit of two months rent", "how much deposit may a landlord ask for",
         "the minister shall publish the regulations in the gazette"]
    )  # fmt: skip
    assert float(a @ b) > float(a @ c)


async def test_a_question_is_embedded_once(embedder: Embedder, request: pytest.FixtureRequest) -> None:
    first = await embedder.embed_query("Can my landlord cut off the electricity?")
    assert first.shape == (embedder.dimensions,)
    again = await embedder.embed_query("Can my landlord cut off the electricity?")
    assert again is first  # served from the per-process query cache, not computed (or requested) again


def test_each_model_gets_its_own_collection() -> None:
    assert collection_for("gweta_chunks", "minilm:384") == "gweta_chunks"
    assert collection_for("gweta_chunks", "openai:text-embedding-3-small:1536") == (
        "gweta_chunks__openai_text_embedding_3_small_1536"
    )
    assert collection_for("gweta_chunks", "openai:text-embedding-3-small:256") != collection_for(
        "gweta_chunks", "openai:text-embedding-3-small:1536"
    )


def test_one_collection_never_holds_two_models(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    MilvusVectorStore(uri, "chunks", 384, embedder="minilm:384").client.close()
    with pytest.raises(ConfigError, match="holds vectors of minilm:384.*gweta reembed"):
        MilvusVectorStore(uri, "chunks", 384, embedder="openai:other-model:384")
    with pytest.raises(ConfigError, match="gweta reembed"):
        MilvusVectorStore(uri, "chunks", 256, embedder="minilm:256")
    MilvusVectorStore(uri, "chunks", 384, embedder="minilm:384").client.close()  # the same model opens it


async def test_reembed_moves_the_corpus_and_the_service_answers_with_the_api_model(
    sample_data_dir: Path, tmp_path: Path, upstream: tuple[FakeEmbeddings, str]
) -> None:
    fake, url = upstream
    data_dir = tmp_path / "data"
    shutil.copytree(sample_data_dir, data_dir, ignore=shutil.ignore_patterns("LOCK"))
    settings = Settings(data_dir=data_dir, embeddings=openai_settings(url, dims=128))
    with pytest.raises(ConfigError, match="gweta reembed"):  # the corpus was embedded by another model
        async with open_services(settings):
            pass
    before = await Manifest.load(LocalObjectStore(data_dir / "objects"))
    with ThreadPoolExecutor(1) as pool:
        report = await reembed(settings, pool)
    after = await Manifest.load(LocalObjectStore(data_dir / "objects"))
    assert before.embedder == "minilm:384" and after.embedder == report.embedder == "openai:text-embedding-3-small:128"
    assert report.collection == "gweta_chunks__openai_text_embedding_3_small_128" and report.chunks > 20
    assert after.version != before.version  # replicas see a new corpus version and reload
    fake.requests.clear()
    question = "How much deposit can a landlord ask for?"
    with LiveServer(create_app(settings)) as app:
        async with httpx.AsyncClient(base_url=app.url, timeout=60) as client:
            events = await collect(client, "GET", "/api/v1/query/stream", params={"q": question, "session_id": "e"})
    final = events[-1].json()
    assert events[-1].event == "final" and final["citations"], final
    assert any(c["section_id"] == "sample/act/2024/3#s3" for c in final["citations"])
    # The question is embedded once, and that vector serves every step (QA memory, the search, remembering); the
    # extractive composer embeds candidate sentences in requests of their own.
    assert [inputs for inputs in fake.requests if question in inputs] == [[question]]
