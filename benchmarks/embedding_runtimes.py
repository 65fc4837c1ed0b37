"""Embedding throughput and result parity: the packaged MiniLM under PyTorch against the same weights in ONNX Runtime.

Usage: python benchmarks/embedding_runtimes.py --data-dir D [--chunks 2000] [--threads 2] [--out results/X.md]
Needs the optional ``bench`` group (onnx, onnxruntime): ``python scripts/install.py --groups main,ml,dev,bench``.
Takes a seeded sample of an ingested data dir's chunks (the text ingestion embeds) and the zim_qa questions; embeds
both with each runtime in one process, then ranks the sample for every question by cosine similarity and compares
each runtime's top 10 with PyTorch's. The ONNX model is exported here from the packaged weights (nothing downloaded).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from report import publish

from api.schemas.documents import Chunk
from api.tools.embeddings import load_sentence_transformer

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def sample_chunks(data_dir: Path, size: int) -> list[str]:
    texts = []
    for path in sorted((data_dir / "objects" / "chunks").glob("*.json")):
        texts += [Chunk.model_validate(c).embed_text for c in json.loads(path.read_text())]
    return random.Random(7).sample(texts, min(size, len(texts)))


def export_onnx(model: object, folder: Path) -> tuple[Path, Path]:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    bert = model[0].auto_model.eval()  # type: ignore[index]

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor):  # type: ignore[no-untyped-def]
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    example = model.tokenizer(["a short example", "another example text"], padding=True, return_tensors="pt")  # type: ignore[attr-defined]
    fp32, int8 = folder / "minilm.onnx", folder / "minilm-int8.onnx"
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "hidden")}
    torch.onnx.export(
        Encoder(), tuple(example[k] for k in INPUTS), str(fp32), input_names=list(INPUTS), output_names=["hidden"],
        dynamic_axes=axes, opset_version=17, dynamo=False,
    )  # fmt: skip
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


def onnx_encoder(model: object, path: Path, threads: int) -> Callable[[list[str]], np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tokenizer, max_length = model.tokenizer, model.max_seq_length  # type: ignore[attr-defined]

    def batch(texts: list[str]) -> np.ndarray:
        enc = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")
        hidden = session.run(None, {k: enc[k].astype(np.int64) for k in INPUTS})[0]
        mask = enc["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def encode(texts: list[str]) -> np.ndarray:
        # Longest first, in batches of 32, as sentence-transformers does, so padding costs both the same.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        ordered = [texts[i] for i in order]
        vectors = np.vstack([batch(ordered[i : i + 32]) for i in range(0, len(ordered), 32)])
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    return encode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    model = load_sentence_transformer()
    chunks = sample_chunks(args.data_dir, args.chunks)
    questions = [json.loads(line)["question"] for line in (SHARED / "zim_qa/questions.jsonl").read_text().splitlines()]
    runtimes: dict[str, Callable[[list[str]], np.ndarray]] = {
        "pytorch (sentence-transformers)": lambda texts: model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True
        ),
    }
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        fp32, int8 = export_onnx(model, Path(tmp))
        export_s = time.perf_counter() - start
        runtimes["onnxruntime fp32"] = onnx_encoder(model, fp32, args.threads)
        runtimes["onnxruntime int8 (dynamic quantisation)"] = onnx_encoder(model, int8, args.threads)
        results = {}
        for name, encode in runtimes.items():
            encode(chunks[:64])  # warm up
            start = time.perf_counter()
            vectors = encode(chunks)
            seconds = time.perf_counter() - start
            results[name] = (seconds, vectors, encode(questions))
            print(f"{name}: {len(chunks) / seconds:.1f} chunks/s", file=sys.stderr)

    base_seconds, base_vectors, base_queries = results["pytorch (sentence-transformers)"]
    base_top = np.argsort(-(base_queries @ base_vectors.T), axis=1)[:, :10]
    lines = [
        "# Embedding runtimes: PyTorch against ONNX Runtime",
        "",
        f"`python benchmarks/embedding_runtimes.py --chunks {args.chunks} --threads {args.threads}`: "
        f"{len(chunks)} chunks sampled from the ingested corpus, {len(questions)} zim_qa questions, "
        f"{args.threads} threads each, one process. ONNX export from the packaged weights took {export_s:.1f} s.",
        "",
        "| runtime | chunks/s | vs PyTorch | max abs vector diff | same top-10 (order) | top-10 overlap |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, (seconds, vectors, queries) in results.items():
        top = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
        same = float(np.mean([np.array_equal(a, b) for a, b in zip(top, base_top, strict=True)]))
        overlap = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, base_top, strict=True)]))
        lines.append(
            f"| {name} | {len(chunks) / seconds:.1f} | {base_seconds / seconds:.2f}x "
            f"| {float(np.abs(vectors - base_vectors).max()):.2g} | {same:.2f} | {overlap:.2f} |"
        )
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
