"""Two replicas sharing Redis against one process in memory: the same streams at once, answers/s and first-token P95
side by side in one run, and what each shared thing costs in Redis.

Usage:
    python benchmarks/replicas.py                        # sample corpus, 50 streams at once, 20 s per round, 2 rounds
    python benchmarks/replicas.py --streams 50 --duration 20 --rounds 2 --out benchmarks/results/replicas_redis.md

Three `gweta serve` processes on loopback over copies of one data dir (sample_corpus/ ingested once; Milvus Lite
allows one opener per folder): ``memory`` alone (state.backend=memory), and ``redis-a`` and ``redis-b`` sharing
one `redis-server` (Debian's, on a free port, no persistence). In each round ``memory`` serves ``--streams``
clients, then the two replicas serve half each; rounds alternate so a busy shared machine slows both alike. Each
client asks question after question (a fresh session each, the result cache and QA memory off) until the round's
``--duration`` has passed; answers/s is finals over the round's wall time. Afterwards Redis is read: its memory,
the keys each answer left (its replay Stream and meta hash, with ``MEMORY USAGE``) and each caller's (rate bucket).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis
from first_token import SAMPLE_QUESTIONS
from load import Server, Stream, ask, quantiles
from report import publish

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def run_round(urls: list[str], streams: int, duration_s: float) -> tuple[list[Stream], float]:
    """``streams`` clients spread evenly over ``urls``, each asking until ``duration_s`` has passed."""
    clients = [
        httpx.AsyncClient(
            base_url=url, timeout=httpx.Timeout(120, connect=10), limits=httpx.Limits(max_connections=100)
        )
        for url in urls
    ]
    try:
        for client in clients:  # warm: lazy imports, first model call
            await ask(client, SAMPLE_QUESTIONS[0])
        results: list[Stream] = []
        t0 = time.perf_counter()
        deadline = t0 + duration_s

        async def loop(n: int) -> None:
            client = clients[n % len(clients)]
            while time.perf_counter() < deadline:
                results.append(await ask(client, SAMPLE_QUESTIONS[n % len(SAMPLE_QUESTIONS)]))
                n += streams

        await asyncio.gather(*(loop(n) for n in range(streams)))
        return results, time.perf_counter() - t0
    finally:
        for client in clients:
            await client.aclose()


def summary(name: str, results: list[Stream], wall_s: float) -> dict[str, object]:
    answers = [r for r in results if r.final is not None and not r.error]
    return {
        "variant": name, "streams": len(results), "answers": len(answers), "answers_per_s": len(answers) / wall_s,
        "first_ms": quantiles([r.first for r in answers if r.first is not None]),
        "final_ms": quantiles([r.final for r in answers if r.final is not None]),
        "errors": len(results) - len(answers),
    }  # fmt: skip


def redis_costs(url: str, prefix: str = "gweta:") -> list[str]:
    """What the shared things hold in Redis now: memory, and bytes per answer kept and per caller."""
    client = redis.Redis.from_url(url, decode_responses=True)
    used = int(client.info("memory")["used_memory"])
    streams = [k for k in client.scan_iter(f"{prefix}stream:*", count=1000) if k.count(":") == 2]
    sample = streams[:200]
    per_answer = [
        (client.memory_usage(k, samples=0) or 0) + (client.memory_usage(f"{k}:meta", samples=0) or 0) for k in sample
    ]
    events = [client.xlen(k) for k in sample]
    rates = list(client.scan_iter(f"{prefix}rate:*", count=1000))
    slots = list(client.scan_iter(f"{prefix}slots:*", count=1000))
    lines = [
        f"- Redis after the run: used_memory {used / 2**20:.1f} MiB, {len(streams)} answers kept for replay, "
        f"{len(rates)} rate buckets, {len(slots)} slot sets",
    ]
    if per_answer:
        mean = sum(per_answer) / len(per_answer)
        lines.append(
            f"- per answer kept (replay Stream + meta hash, MEMORY USAGE over {len(sample)}): mean {mean / 1024:.1f} "
            f"KiB, max {max(per_answer) / 1024:.1f} KiB, {sum(events) / len(events):.0f} events each"
        )
    client.close()
    return lines


async def caller_costs(url: str) -> list[str]:
    """One caller's keys, made by the service's own code: a rate bucket, a slot set with one answer in progress, a
    WhatsApp message id and a sender's window with one question."""
    from api.settings import StateSettings
    from api.tools.shared_state import RedisSeenIds, RedisSenderLimits, RedisSlots, RedisState, RedisTokenBuckets

    state = RedisState(StateSettings(backend="redis", url=url))  # type: ignore[arg-type]
    try:
        await RedisTokenBuckets(state, 60, 20).take("ip:203.0.113.7")
        await RedisSlots(state, 30).acquire("ip:203.0.113.7", "0" * 32, 4)
        await RedisSeenIds(state, 7 * 86400).first_time("wamid.HBgLMjYzNzcxMjM0NTY3FQIAEhggQkVBRjk5")
        await RedisSenderLimits(state, 6, 60).check("263771234567")
        sizes = {}
        for name, key in (("rate bucket", "gweta:rate:ip:203.0.113.7"), ("slot set", "gweta:slots:ip:203.0.113.7"),
                          ("WhatsApp id seen", "gweta:wa:seen:wamid.HBgLMjYzNzcxMjM0NTY3FQIAEhggQkVBRjk5"),
                          ("WhatsApp sender window", "gweta:wa:rate:263771234567")):  # fmt: skip
            sizes[name] = await state.client.memory_usage(key, samples=0)
    finally:
        await state.close()
    return ["- per caller (MEMORY USAGE): " + ", ".join(f"{k} {v} bytes" for k, v in sizes.items())]


async def main_async(args: argparse.Namespace, data_dir: Path, redis_url: str) -> list[str]:
    base = {"GWETA_CORPUS_POLL_S": "0", "GWETA_ADMISSION__MAX_STREAMS": "200"}
    servers: dict[str, Server] = {}
    for name in ("memory", "redis-a", "redis-b"):
        folder = data_dir.parent / name
        shutil.copytree(data_dir, folder, ignore=shutil.ignore_patterns("LOCK"))
        env = dict(base)
        if name != "memory":
            env |= {"GWETA_STATE__BACKEND": "redis", "GWETA_STATE__URL": redis_url}
        servers[name] = Server(ROOT, folder, env)
    try:
        for server in servers.values():
            await server.ready()
        rows: list[dict[str, object]] = []
        for _ in range(args.rounds):
            for name, urls in (
                ("one process, memory", [servers["memory"].url]),
                ("one process, Redis", [servers["redis-a"].url]),
                ("two replicas, Redis", [servers["redis-a"].url, servers["redis-b"].url]),
            ):
                results, wall = await run_round(urls, args.streams, args.duration)
                rows.append(summary(name, results, wall))
                print(rows[-1], flush=True)
    finally:
        for server in servers.values():
            server.stop()
    lines = [
        "| variant | round | streams | answers | answers/s | first token P50/P95/P99 ms | final P50/P95/P99 ms "
        "| errors |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |",
    ]
    for n, row in enumerate(rows):
        first, final = row["first_ms"], row["final_ms"]
        assert isinstance(first, dict) and isinstance(final, dict)
        lines.append(
            f"| {row['variant']} | {n // 3 + 1} | {row['streams']} | {row['answers']} | {row['answers_per_s']:.2f} | "
            f"{' / '.join(f'{v:.0f}' for v in first.values())} | {' / '.join(f'{v:.0f}' for v in final.values())} | "
            f"{row['errors']} |"
        )
    totals: dict[str, list[float]] = {}
    for row in rows:
        totals.setdefault(str(row["variant"]), []).append(float(row["answers_per_s"]))  # type: ignore[arg-type]
    mean = {k: sum(v) / len(v) for k, v in totals.items()}
    one = mean["one process, Redis"] / mean["one process, memory"]
    two = mean["two replicas, Redis"] / mean["one process, memory"]
    means = ", ".join(f"{k} {v:.2f}" for k, v in mean.items())
    lines += ["", f"- mean answers/s: {means}; against one process in memory: one process with Redis {one:.2f}, "
              f"two replicas with Redis {two:.2f}"]  # fmt: skip
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()[0]
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is missing: install Debian's redis-server (scripts/install.py does)")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        subprocess.run(
            [sys.executable, "-m", "api.cli", "ingest", str(ROOT / "sample_corpus"), "--data-dir", str(data_dir)],
            check=True, capture_output=True, cwd=ROOT,
        )  # fmt: skip
        port = free_port()
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"redis://127.0.0.1:{port}/0"
        try:
            time.sleep(0.5)
            table = asyncio.run(main_async(args, data_dir, url))
            costs = redis_costs(url) + asyncio.run(caller_costs(url))
        finally:
            server.kill()
            server.wait()
    lines = [
        "# Two replicas sharing Redis against one process in memory",
        "",
        f"- machine: {os.cpu_count()} cores, shared (load average {load:.1f} at the start); no LLM (extractive); "
        f"sample corpus; result cache and QA memory off; {args.streams} streams at once, {args.duration:.0f} s per "
        f"round, {args.rounds} rounds alternating",
        "- the two replicas share the same cores as the one process: this measures what Redis costs, not what a "
        "second machine adds",
        "",
        *table,
        *costs,
    ]
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
