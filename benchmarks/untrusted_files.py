"""Parse and chunk hostile files and report peak memory, time and the largest provision and chunk.

Usage: python benchmarks/untrusted_files.py [--mb 50] [--out results/untrusted_files.md]
Each case runs in a fresh process (peak resident memory is per process): a file of one line of words with no other
boundary, and a file that is one single "word". Both are parsed as the ingest worker parses them, then chunked with
the packaged model's tokenizer, as the ingesting process does before embedding. Embedding is left out: its cost is
per chunk and is measured by benchmarks/ingest_corpus.py.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CASES = {
    "one line of words": lambda mb: "1. Definitions " + "lorem ipsum dolor " * (mb * 2**20 // 18),
    "one single word": lambda mb: "x" * (mb * 2**20),
}


def measure(case: str, mb: int) -> dict[str, float]:
    """Run in the child process: write the file, parse it, chunk it, return the figures."""
    from api.settings import EmbeddingSettings
    from api.tools.embeddings import build_embedder
    from ingestion.chunking import chunk_document
    from ingestion.parse_pool import parse_file
    from ingestion.parsers import ParseOptions

    with ThreadPoolExecutor(1) as pool:
        embedder = build_embedder(EmbeddingSettings(), pool)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hostile.txt"
        path.write_text(CASES[case](mb))
        start = time.perf_counter()
        parsed = parse_file(path, ParseOptions(max_file_bytes=(mb + 1) * 2**20))
        parse_s = time.perf_counter() - start
    if parsed.error:
        raise SystemExit(parsed.error)
    start = time.perf_counter()
    chunks = [c for d in parsed.documents for c in chunk_document(d, embedder.count_tokens, 200)]
    chunk_s = time.perf_counter() - start
    sections = [s for d in parsed.documents for s in d.sections]
    return {
        "parse_s": parse_s,
        "chunk_s": chunk_s,
        "sections": len(sections),
        "largest_section": max(len(s.text) for s in sections),
        "chunks": len(chunks),
        "largest_chunk": max(len(c.text) for c in chunks),
        "title": max(len(d.title) for d in parsed.documents),
        "baseline_mib": baseline,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--case", help=argparse.SUPPRESS)  # set in the child process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(measure(args.case, args.mb)))  # noqa: T201
        return 0
    lines = [
        "# Untrusted files: parse and chunk",
        "",
        f"- machine: {os.cpu_count()} cores (shared); {args.mb} MiB files; chunks of at most 200 tokens",
        "- peak: the process's peak resident memory, of which about the baseline is the interpreter and the model",
        "",
        "| file | parse s | chunk s | provisions | largest provision (chars) | chunks | largest chunk (chars) "
        "| title (chars) | baseline MiB | peak MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in CASES:
        command = [sys.executable, __file__, "--case", case, "--mb", str(args.mb)]
        run = subprocess.run(command, capture_output=True, text=True, check=True)
        r = json.loads(run.stdout.strip().splitlines()[-1])
        lines.append(
            f"| {case} | {r['parse_s']:.1f} | {r['chunk_s']:.1f} | {r['sections']} | {r['largest_section']:,} "
            f"| {r['chunks']:,} | {r['largest_chunk']:,} | {r['title']} | {r['baseline_mib']:.0f} "
            f"| {r['peak_mib']:.0f} |"
        )
    report = "\n".join(lines) + "\n"
    print(report)  # noqa: T201
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
