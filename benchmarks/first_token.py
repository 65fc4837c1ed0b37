"""Time to first token and to the final event over a set of questions, against a real `gweta serve` process.

Usage:
    python benchmarks/first_token.py                        # sample corpus, its 20 built-in questions
    python benchmarks/first_token.py --data-dir D --questions Q.jsonl [--limit 20] [--out results/x.md]

Starts `gweta serve` on a free loopback port over the data dir (ingesting sample_corpus/ into a temporary one when
none is given), waits for /readyz, asks each question once over GET /api/v1/query/stream, and prints P50/P95/max.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from report import percentile, publish

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_QUESTIONS = [
    "How much deposit can a landlord ask for?",
    "When must my landlord give back my deposit?",
    "How often can the rent be increased?",
    "How much notice does a landlord need to give to end a lease?",
    "Can my landlord cut off the water to make me leave?",
    "What is a lease?",
    "How many hours a week can my employer make me work?",
    "How is overtime paid?",
    "How much annual leave am I entitled to?",
    "How long is maternity leave?",
    "Can I be fired for being pregnant?",
    "How much notice must be given to end a job after six years?",
    "How long do I have to report an unfair dismissal?",
    "Can I return defective goods to the shop?",
    "Can I cancel a contract I signed after a sales call?",
    "Do shops have to show prices?",
    "Where do I complain about a supplier?",
    "Can a company use my personal information without consent?",
    "How fast must a data breach be reported?",
    "What is the penalty for processing personal information unlawfully?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ask(client: httpx.Client, question: str) -> tuple[float, float, int]:
    start = time.perf_counter()
    first = final = 0.0
    citations = 0
    with client.stream("GET", "/api/v1/query/stream", params={"q": question, "session_id": "bench"}) as response:
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
                if event == "token" and not first:
                    first = time.perf_counter() - start
            elif line.startswith("data: ") and event == "final":
                final = time.perf_counter() - start
                citations = len(json.loads(line[6:])["citations"])
    return first * 1000, final * 1000, citations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--questions", type=Path, help="JSONL with a 'question' field per line")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    gweta = [sys.executable, "-m", "api.cli"]
    tmp = tempfile.TemporaryDirectory()
    data_dir = args.data_dir
    if data_dir is None:
        data_dir = Path(tmp.name)
        subprocess.run(
            [*gweta, "ingest", str(ROOT / "sample_corpus"), "--data-dir", str(data_dir)],
            check=True,
            capture_output=True,
        )
    # (label, question): shared question sets are reported by id, so their text never lands in committed results.
    questions = [(q, q) for q in SAMPLE_QUESTIONS]
    if args.questions:
        records = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
        questions = [(r.get("id", r["question"]), r["question"]) for r in records]
    questions = questions[: args.limit]

    port = free_port()
    # One client asking back to back is what the per-caller rate limit exists to stop: off for the measurement.
    env = {**os.environ, "GWETA_DATA_DIR": str(data_dir), "GWETA_LIMITS__REQUESTS_PER_MINUTE": "0"}
    started = time.perf_counter()
    server = subprocess.Popen(
        [*gweta, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            while True:
                try:
                    if client.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None or time.perf_counter() - started > 120:
                    raise SystemExit("gweta serve did not become ready")
                time.sleep(0.1)
            ready_s = time.perf_counter() - started
            rows = [(label, *ask(client, q)) for label, q in questions]
    finally:
        server.terminate()
        server.wait(timeout=30)
        tmp.cleanup()

    firsts = [r[1] for r in rows]
    finals = [r[2] for r in rows]
    lines = [
        f"# First-token latency ({len(rows)} questions, {data_dir if args.data_dir else 'sample corpus'})",
        "",
        f"- machine: {os.cpu_count()} cores; extractive answers (no LLM); one question at a time",
        f"- `gweta serve` start to /readyz 200: {ready_s:.1f} s",
        f"- first token: P50 {percentile(firsts, 0.5):.0f} ms, P95 {percentile(firsts, 0.95):.0f} ms, "
        f"max {max(firsts):.0f} ms, mean {statistics.mean(firsts):.0f} ms",
        f"- final event: P50 {percentile(finals, 0.5):.0f} ms, P95 {percentile(finals, 0.95):.0f} ms",
        f"- answers with at least one citation: {sum(r[3] > 0 for r in rows)}/{len(rows)}",
        "",
        "| question | first token ms | final ms | citations |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {q} | {f:.0f} | {t:.0f} | {c} |" for q, f, t, c in rows),
    ]
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
