"""The local embedding model run by ONNX Runtime, for the query path.

Under load, embedding questions took a third of a graph worker's sampled thread time (py-spy, 50 streams over the 385
Acts). One short question alone costs PyTorch's eager BERT 13.1 ms of CPU here and ONNX Runtime 6.9 ms, for the same
vectors (at most 1.8e-7 apart); long chunks in batches of 32 go faster in PyTorch (28.1 against 20.8 a second), so
ingestion keeps PyTorch (``benchmarks/results/embedding_runtimes.md``, one thread each). The graph is exported from the
loaded weights once and kept under the weights' fingerprint (a tuned model gets its own), and it is used only when it
gives the PyTorch model's vectors on probe texts; otherwise the query path stays on PyTorch, with a warning.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from api.settings import EmbeddingSettings
from api.tools.embeddings import Embedder, SentenceTransformerEmbedder, Vectors, core_share

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
AGREEMENT = 1e-4
"""The largest difference from PyTorch's vector, in any coordinate, for the exported graph to be used."""
PROBES = (
    "Can my employer deduct money from my salary?",
    "deposit",
    "Section 12 (Notice of termination). A landlord shall give a tenant not less than three months' notice in "
    "writing before terminating a lease of residential premises, except where the tenant is in arrears of rent. "
    * 20,  # longer than the model reads: truncated alike
)


class OnnxEmbedder(SentenceTransformerEmbedder):
    """A sentence-transformers model (a transformer, mean pooling, normalised vectors) whose transformer runs in ONNX
    Runtime; tokenizing, batching and the question cache are the PyTorch embedder's."""

    def __init__(
        self, model: SentenceTransformer, session: Any, pool: Executor, batch_size: int = 32, name: str = "minilm"
    ) -> None:
        super().__init__(model, pool, batch_size, name)
        self.session = session
        self._inputs = {i.name for i in session.get_inputs()}
        # A fast tokenizer keeps its padding and truncation settings in shared state: one copy per model thread.
        self._local = threading.local()

    def _tokenizer(self) -> Any:
        tokenizer = getattr(self._local, "tokenizer", None)
        if tokenizer is None:
            tokenizer = self._local.tokenizer = copy.deepcopy(self.model.tokenizer)
        return tokenizer

    def _batch(self, texts: list[str]) -> Vectors:
        encoded = self._tokenizer()(
            texts, padding=True, truncation=True, max_length=self.model.max_seq_length, return_tensors="np"
        )
        feeds = {name: encoded[name].astype(np.int64) for name in INPUTS if name in self._inputs}
        hidden = self.session.run(None, feeds)[0]
        mask = encoded["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)

    def _encode(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        # Longest first, in batches of ``batch_size``, as sentence-transformers does: texts of a length pad together.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        ordered = [texts[i] for i in order]
        size = self.batch_size
        vectors = np.vstack([self._batch(ordered[i : i + size]) for i in range(0, len(ordered), size)])
        out = np.empty_like(vectors)
        out[order] = vectors
        return out


def transformer(model: SentenceTransformer) -> torch.nn.Module:
    """The model's transformer (its first module's Hugging Face model)."""
    return cast("torch.nn.Module", model[0].auto_model)


def fingerprint(model: SentenceTransformer) -> str:
    """A digest of the transformer's weights and the exported inputs: the name of its exported graph."""
    digest = hashlib.blake2b(digest_size=12)
    for key, tensor in sorted(transformer(model).state_dict().items()):
        digest.update(key.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    digest.update(",".join(model.tokenizer.model_input_names).encode())
    return digest.hexdigest()


def export(model: SentenceTransformer, path: Path) -> None:
    """Write the model's transformer (token ids in, hidden states out; batch and length dynamic) to ``path``,
    atomically: a process that reads it meanwhile sees the whole file or none."""
    import torch

    hf_model = transformer(model).eval()
    example = model.tokenizer(["a short example", "another example text"], padding=True, return_tensors="pt")
    names = [name for name in INPUTS if name in example]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = hf_model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.transformer(**dict(zip(names, inputs, strict=True))).last_hidden_state  # type: ignore[no-any-return]

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    axes = {name: {0: "batch", 1: "tokens"} for name in (*names, "hidden")}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python branches it fixes at the example's shape
            torch.onnx.export(
                Hidden(), tuple(example[name] for name in names), str(partial), input_names=names,
                output_names=["hidden"], dynamic_axes=axes, opset_version=17, dynamo=False,
            )  # fmt: skip
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def open_session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    # Threads that busy-wait between calls take cores the other requests need (as BLAS's and torch's did).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnx_embedder(
    torch_embedder: SentenceTransformerEmbedder, folder: Path, threads: int
) -> SentenceTransformerEmbedder:
    """``torch_embedder``'s model run by ONNX Runtime, its graph exported to ``folder`` once (or read from there);
    ``torch_embedder`` itself when the runtime is missing, the export fails, or the vectors differ from PyTorch's."""
    model = torch_embedder.model
    path = folder / f"{torch_embedder.name}-{fingerprint(model)}.onnx"
    try:
        try:
            session = open_session(path, threads) if path.exists() else None
        except Exception as exc:  # noqa: BLE001 - a damaged file is exported again
            log.warning("the exported embedding model %s could not be read (%s); exporting it again", path, exc)
            session = None
        if session is None:
            log.info("exporting the embedding model to ONNX (once per model): %s", path)
            export(model, path)
            session = open_session(path, threads)
        embedder = OnnxEmbedder(model, session, torch_embedder.pool, torch_embedder.batch_size, torch_embedder.name)
        gap = float(np.abs(embedder._encode(PROBES) - torch_embedder._encode(PROBES)).max())
    except Exception as exc:  # noqa: BLE001 - the PyTorch model still answers
        log.warning("ONNX Runtime is not used for the embedding model (%s); questions are embedded with PyTorch", exc)
        return torch_embedder
    if gap > AGREEMENT:
        log.warning(
            "the embedding model's ONNX graph gives vectors up to %.1e from PyTorch's (more than %.0e); questions "
            "are embedded with PyTorch",
            gap,
            AGREEMENT,
        )
        return torch_embedder
    return embedder


def export_folder(cfg: EmbeddingSettings, data_dir: Path) -> Path:
    """Where exported graphs are kept: ``cfg.onnx_dir`` (data dirs on one machine may share it), else the data dir's."""
    return cfg.onnx_dir or data_dir / "models" / "onnx"


def forget_export(model: SentenceTransformer, folder: Path) -> list[Path]:
    """Delete the graphs exported from ``model`` into ``folder`` (under any embedder name); the paths deleted."""
    gone = sorted(folder.glob(f"*-{fingerprint(model)}.onnx"))
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


def for_queries(embedder: Embedder, cfg: EmbeddingSettings, folder: Path, callers: int) -> Embedder:
    """The query path's embedder: the local model on the configured runtime (``cfg.runtime``), each of ``callers``
    model threads running it on its share of the cores (``OMP_NUM_THREADS`` when set, as a graph worker's is, like
    torch's); other backends as they are."""
    if cfg.runtime != "onnx" or not isinstance(embedder, SentenceTransformerEmbedder):
        return embedder
    given = os.environ.get("OMP_NUM_THREADS", "")
    threads = int(given) if given.isdigit() and int(given) > 0 else core_share(callers)
    return onnx_embedder(embedder, folder, threads)


def for_sentences(embedder: Embedder, cfg: EmbeddingSettings, data_dir: Path) -> Embedder:
    """What ingestion embeds the quotable sentences with (``api.tools.sentence_vectors``): the query path's runtime,
    whose vectors answers would otherwise compute, on all the cores. For these short texts ONNX Runtime embeds 1.8
    times as many a second as PyTorch (236 against 131 on 2 cores, batches of 32, the 385 Acts' sentences)."""
    return for_queries(embedder, cfg, export_folder(cfg, data_dir), 1)
