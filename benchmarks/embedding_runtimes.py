"""Embedding throughput and result parity: the packaged MiniLM under PyTorch against the same weights in ONNX Runtime.

Usage: python benchmarks/embedding_runtimes.py --data-dir D [--chunks 2000] [--threads 2] [--out results/X.md]
Takes a seeded sample of an ingested data dir's chunks (the text ingestion embeds) and the zim_qa questions; embeds
both with each runtime in one process, then ranks the sample for every question by cosine similarity and compares
each runtime's top 10 with PyTorch's; and times each question embedded alone (CPU ms, as the query path mostly embeds).
The ONNX graph is exported from the packaged weights as the service exports it (``api/tools/onnx_embedder.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from report import publish

from api.schemas.documents import Chunk
from api.tools.embeddings import SentenceTransformerEmbedder, load_sentence_transformer
from api.tools.onnx_embedder import OnnxEmbedder, export, open_session

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def sample_chunks(data_dir: Path, size: int) -> list[str]:
    texts = []
    for path in sorted((data_dir / "objects" / "chunks").glob("*.json")):
        texts += [Chunk.model_validate(c).embed_text for c in json.loads(path.read_text())]
    return random.Random(7).sample(texts, min(size, len(texts)))


def one_at_a_time(encode: Callable[[list[str]], np.ndarray], questions: list[str]) -> float:
    """CPU milliseconds per question embedded alone, as a question arrives at the service."""
    for question in questions[:5]:
        encode([question])  # warm up
    start = time.process_time()
    for question in questions:
        encode([question])
    return (time.process_time() - start) / len(questions) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    torch.set_num_threads(args.threads)
    model = load_sentence_transformer()
    chunks = sample_chunks(args.data_dir, args.chunks)
    questions = [json.loads(line)["question"] for line in (SHARED / "zim_qa/questions.jsonl").read_text().splitlines()]
    pool = ThreadPoolExecutor(1)
    runtimes: dict[str, Callable[[list[str]], np.ndarray]] = {
        "pytorch (sentence-transformers)": SentenceTransformerEmbedder(model, pool)._encode
    }
    with tempfile.TemporaryDirectory() as tmp:
        fp32, int8 = Path(tmp) / "minilm.onnx", Path(tmp) / "minilm-int8.onnx"
        start = time.perf_counter()
        export(model, fp32)  # as the service exports it
        export_s = time.perf_counter() - start
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
        for name, path in (("onnxruntime fp32 (the query path's)", fp32), ("onnxruntime int8 (dynamic)", int8)):
            runtimes[name] = OnnxEmbedder(model, open_session(path, args.threads), pool)._encode
        results = {}
        for name, encode in runtimes.items():
            encode(chunks[:64])  # warm up
            start = time.perf_counter()
            vectors = encode(chunks)
            seconds = time.perf_counter() - start
            results[name] = (seconds, vectors, encode(questions), one_at_a_time(encode, questions))
            print(f"{name}: {len(chunks) / seconds:.1f} chunks/s", file=sys.stderr)

    base_seconds, base_vectors, base_queries, _ = results["pytorch (sentence-transformers)"]
    base_top = np.argsort(-(base_queries @ base_vectors.T), axis=1)[:, :10]
    lines = [
        "# Embedding runtimes: PyTorch against ONNX Runtime",
        "",
        f"`python benchmarks/embedding_runtimes.py --chunks {args.chunks} --threads {args.threads}`: "
        f"{len(chunks)} chunks sampled from the ingested corpus, {len(questions)} zim_qa questions, "
        f"{args.threads} thread(s) each, one process. ONNX export from the packaged weights took {export_s:.1f} s.",
        "",
        "| runtime | chunks/s (batches of 32) | vs PyTorch | one question alone: CPU ms | max abs vector diff "
        "| same top-10 (order) | top-10 overlap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, (seconds, vectors, queries, alone_ms) in results.items():
        top = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
        same = float(np.mean([np.array_equal(a, b) for a, b in zip(top, base_top, strict=True)]))
        overlap = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, base_top, strict=True)]))
        lines.append(
            f"| {name} | {len(chunks) / seconds:.1f} | {base_seconds / seconds:.2f}x | {alone_ms:.1f} "
            f"| {float(np.abs(vectors - base_vectors).max()):.2g} | {same:.2f} | {overlap:.2f} |"
        )
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
