"""The query path's local model on ONNX Runtime: the PyTorch model's vectors, exported once per model and data dir,
and PyTorch kept wherever the exported graph would answer differently."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Pooling

from api.services import Services, open_services
from api.settings import EmbeddingSettings, Settings
from api.tools.embeddings import SentenceTransformerEmbedder, build_embedder, core_share, load_sentence_transformer
from api.tools.onnx_embedder import OnnxEmbedder, fingerprint, for_queries, onnx_embedder, transformer
from api.tools.sentence_vectors import StoredSentences

TEXTS = [
    "Can my employer deduct money from my salary?",
    "deposit",
    "Section 12 (Notice of termination). A landlord shall give a tenant three months' notice in writing. " * 30,
    "Mutemo weVashandi: mubhadharo wevashandi unobviswa here?",  # words the model's vocabulary splits finely
    "",
    *(f"section {i} of the Labour Act on unfair dismissal" for i in range(40)),
]


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as pool:
        yield pool


def local(pool: ThreadPoolExecutor) -> SentenceTransformerEmbedder:
    embedder = build_embedder(EmbeddingSettings(), pool)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


async def test_onnx_runtime_gives_the_pytorch_models_vectors(pool: ThreadPoolExecutor, tmp_path: Path) -> None:
    torch_embedder = local(pool)
    onnx = onnx_embedder(torch_embedder, tmp_path, threads=1)
    assert isinstance(onnx, OnnxEmbedder)
    # Mixed lengths in one call (padding), a text past the model's length (truncation), an empty one, in batches.
    expected, got = await torch_embedder.embed_documents(TEXTS), await onnx.embed_documents(TEXTS)
    assert got.shape == expected.shape and got.dtype == np.float32
    assert float(np.abs(got - expected).max()) < 1e-5
    for text in TEXTS[:4]:  # one text at a time, as questions mostly come
        assert float(np.abs(await onnx.embed_query(text) - await torch_embedder.embed_query(text)).max()) < 1e-5
    assert onnx.count_tokens(TEXTS[0]) == torch_embedder.count_tokens(TEXTS[0])


def test_the_exported_graph_is_kept_per_model_and_exported_again_when_damaged(
    pool: ThreadPoolExecutor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    torch_embedder = local(pool)
    assert isinstance(onnx_embedder(torch_embedder, tmp_path, threads=1), OnnxEmbedder)
    (path,) = tmp_path.glob("*.onnx")
    assert path.name == f"minilm-{fingerprint(torch_embedder.model)}.onnx"
    written = path.stat().st_mtime_ns
    assert isinstance(onnx_embedder(torch_embedder, tmp_path, threads=1), OnnxEmbedder)
    assert path.stat().st_mtime_ns == written  # read, not exported again
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no partial file left behind

    path.write_bytes(b"not an onnx graph")
    with caplog.at_level(logging.WARNING):
        again = onnx_embedder(torch_embedder, tmp_path, threads=1)
    assert isinstance(again, OnnxEmbedder) and "exporting it again" in caplog.text
    assert path.stat().st_size > 1_000_000

    # Other weights (a tuned model) are another graph: never served by the packaged model's.
    tuned = load_sentence_transformer()
    with torch.no_grad():
        next(transformer(tuned).parameters()).add_(0.01)
    assert fingerprint(tuned) != fingerprint(torch_embedder.model)


def test_a_model_the_graph_would_answer_differently_stays_on_pytorch(
    pool: ThreadPoolExecutor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    packaged = load_sentence_transformer()
    # The first token's state as the vector: a sentence-transformers model the exported graph's mean pooling is not.
    cls = SentenceTransformer(modules=[packaged[0], Pooling(384, pooling_mode="cls"), packaged[2]], device="cpu")
    torch_embedder = SentenceTransformerEmbedder(cls, pool)
    with caplog.at_level(logging.WARNING):
        chosen = onnx_embedder(torch_embedder, tmp_path, threads=1)
    assert chosen is torch_embedder
    assert "questions are embedded with PyTorch" in caplog.text


def test_the_data_dir_cannot_hold_the_graph_so_pytorch_answers(
    pool: ThreadPoolExecutor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "models"
    blocked.write_text("a file where the folder would go")
    torch_embedder = local(pool)
    with caplog.at_level(logging.WARNING):
        chosen = for_queries(torch_embedder, EmbeddingSettings(), blocked / "onnx", callers=2)
    assert chosen is torch_embedder and "ONNX Runtime is not used" in caplog.text
    assert for_queries(torch_embedder, EmbeddingSettings(runtime="torch"), tmp_path, callers=2) is torch_embedder


def query_runtime(services: Services) -> type:
    """The model the query path runs: under the ingested sentences' lookup and the shared cache and batcher."""
    stored = services.orchestrator.deps.retriever.embedder
    assert isinstance(stored, StoredSentences)
    return type(getattr(stored.inner, "inner", None))


async def test_the_service_embeds_questions_on_the_configured_runtime(
    private_data_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GWETA_EMBEDDINGS__ONNX_DIR")  # the suite's shared folder: here, the default place
    for runtime, kind in (("onnx", OnnxEmbedder), ("torch", SentenceTransformerEmbedder)):
        settings = Settings(data_dir=private_data_dir, embeddings=EmbeddingSettings(runtime=runtime))
        async with open_services(settings) as services:
            assert query_runtime(services) is kind
    assert list((private_data_dir / "models" / "onnx").glob("minilm-*.onnx"))
    elsewhere = Settings(data_dir=private_data_dir, embeddings=EmbeddingSettings(onnx_dir=tmp_path / "graphs"))
    async with open_services(elsewhere) as services:
        assert query_runtime(services) is OnnxEmbedder
    assert list((tmp_path / "graphs").glob("minilm-*.onnx"))


def test_each_model_thread_runs_the_graph_on_its_share_of_the_cores(
    pool: ThreadPoolExecutor, shared_onnx_graphs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch_embedder = local(pool)

    def threads(callers: int) -> int:
        chosen = for_queries(torch_embedder, EmbeddingSettings(), shared_onnx_graphs, callers)
        assert isinstance(chosen, OnnxEmbedder)
        return int(chosen.session.get_session_options().intra_op_num_threads)

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads(callers=1) == core_share(1) and threads(callers=64) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as a graph worker is started
    assert threads(callers=1) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")  # OpenMP's nested form: not a count this reads
    assert threads(callers=1) == core_share(1)
