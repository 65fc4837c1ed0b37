"""Ingest whole corpora and report throughput, where the time goes, peak memory, and an unchanged re-run.

Usage: python benchmarks/ingest_corpus.py [SOURCE ...] [--data-dir D] [--out results/x.md]
Defaults to ../shared/data/corpus/zimbabwe_legislation/acts.jsonl and ../shared/data/corpus/zimbabwe_pdfs, into a
fresh temporary data dir. Each source is ingested once, then all of them again unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from api.settings import Settings
from ingestion.pipeline import Ingestor, IngestReport, build_ingestion_tools

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus"


def rss_mib() -> float:
    """Current resident memory of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


MEMORY: dict[str, float] = {}


async def run(sources: list[Path], settings: Settings) -> list[tuple[str, IngestReport]]:
    results = []
    MEMORY["interpreter and imports"] = rss_mib()
    with ThreadPoolExecutor(settings.model_threads) as pool:
        tools = build_ingestion_tools(settings, pool)
        MEMORY["+ embedding model, Milvus Lite, object store"] = rss_mib()
        try:
            for label in ("first run", "unchanged re-run"):
                for source in sources:
                    report = await Ingestor(tools).ingest(source)
                    results.append((f"{label}: {source.name}", report))
                    MEMORY[f"after {label}: {source.name}"] = rss_mib()
        finally:
            await tools.vectors.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sources = args.sources or [SHARED / "zimbabwe_legislation" / "acts.jsonl", SHARED / "zimbabwe_pdfs"]
    tmp = tempfile.TemporaryDirectory()
    settings = Settings(data_dir=args.data_dir or Path(tmp.name))
    start = time.perf_counter()
    results = asyncio.run(run(sources, settings))
    total = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        "# Ingestion benchmark",
        "",
        f"- machine: {os.cpu_count()} cores; embedder: packaged all-MiniLM-L6-v2 on CPU (torch), "
        f"{settings.model_threads} model threads; chunks of at most {settings.ingestion.max_chunk_tokens} tokens; "
        "nothing else running",
        f"- total wall time {total:.0f} s; peak resident memory {peak_mib:.0f} MiB",
        "",
        "| run | documents | ingested | unchanged | failed | chunks | seconds | documents/s | chunks/s | stages (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, r in results:
        new_chunks = sum(d.chunks for d in r.documents if d.status == "ingested")
        stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r.stage_seconds.items(), key=lambda kv: -kv[1]))
        lines.append(
            f"| {label} | {len(r.documents)} | {r.count('ingested')} | {r.count('unchanged')} | {r.failures} | "
            f"{new_chunks} | {r.seconds:.1f} | {len(r.documents) / r.seconds:.1f} | {new_chunks / r.seconds:.1f} | "
            f"{stages} |"
        )
    lines += ["", "Resident memory of the ingesting process (parser workers are separate processes):", ""]
    lines += [f"- {stage}: {mib:.0f} MiB" for stage, mib in MEMORY.items()]
    lines += [f"- peak: {peak_mib:.0f} MiB"]
    warned = [(d.doc_key, w) for _, r in results[:2] for d in r.documents for w in d.warnings]
    lines += ["", f"Documents with parser warnings: {len({k for k, _ in warned})} ({len(warned)} warnings)."]
    failed = [(d.source, d.message) for _, r in results[:2] for d in r.documents if d.status == "failed"]
    lines += [f"- failed: {Path(s).name}: {m}" for s, m in failed]
    report = "\n".join(lines) + "\n"
    print(report)  # noqa: T201
    if args.out:
        args.out.write_text(report)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
