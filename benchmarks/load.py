"""Many streams at once: latency, throughput, CPU and memory of a real `gweta serve` per concurrency level.

Usage:
    python benchmarks/load.py                                   # sample corpus, levels 1,10,50, 20 s each
    python benchmarks/load.py --levels 1,10,50 --duration 30 --llm          # with the paced loopback model
    python benchmarks/load.py --variant before=/tmp/gweta-before --variant after=.   # two checkouts, one run
    python benchmarks/load.py --data-dir D --questions Q.jsonl --json benchmarks/results/load_x.json

Each variant is a checkout whose `api` package is served (`python -m api.cli serve`, run from that folder with this
virtualenv) on a free 127.0.0.1 port over the same data dir (sample_corpus/ ingested into a temporary one when none
is given), with the result cache and QA memory off so every question is answered afresh. For each level, each
variant's server is started, warmed with two questions (every question once with ``--warm-all``: the steady state
of a server that has run a while, its document cache filled), then ``level`` async clients each ask question after
question (every stream a fresh session) until ``--duration`` seconds have passed or ``--max-streams`` streams were
started; streams still running finish (at most ``--timeout`` s each). Variants alternate within each level, so a
busy shared machine slows them alike: compare ratios inside one run, not figures across runs.

Per level it prints P50/P95/P99 of the time to `meta`, to the first token and to `final`, answers/s (finals over
the wall time of the level), errors (HTTP failures, `error` events, streams with no `final`), 503s (admission
refusals), and the server's CPU (seconds per answer, and cores busy) and peak RSS, read with psutil on the server
process and its children (Milvus Lite runs as a child), the harness's own CPU per answer (it shares the cores with
the server, so it reads raw bytes and decodes only `final` and `warning` data) and the load average as the level
began, and the questions most often in the first-token tail (at or after its P95). Loopback only: nothing leaves
127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from first_token import SAMPLE_QUESTIONS
from report import percentile, publish

ROOT = Path(__file__).resolve().parent.parent
# Every stream answered afresh; and all clients share one address, so per-caller limits (where a checkout has
# them) must not refuse the load itself.
NO_CACHES = {
    "GWETA_RETRIEVAL__CACHE_TTL_S": "0",
    # The questions repeat in turn: kept across requests, each would be embedded only once. (Provision sentences'
    # vectors stay cached: they serve whatever question cites the provision.)
    "GWETA_EMBEDDINGS__QUERY_CACHE_ENTRIES": "0",
    "GWETA_LLM__MEMORY_TTL_S": "0",
    "GWETA_LIMITS__REQUESTS_PER_MINUTE": "0",
    "GWETA_LIMITS__STREAMS_PER_CALLER": "100000",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stream:
    question: str = ""
    meta: float | None = None
    first: float | None = None
    final: float | None = None
    status: int = 0
    error: str = ""
    started_at: float = 0.0
    warned: bool = False
    codes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class Level:
    variant: str
    level: int
    streams: int = 0
    answers: int = 0
    errors: int = 0
    rejected: int = 0
    wall_s: float = 0.0
    answers_per_s: float = 0.0
    meta_ms: dict[str, float] = field(default_factory=dict)
    first_ms: dict[str, float] = field(default_factory=dict)
    final_ms: dict[str, float] = field(default_factory=dict)
    writing_ms: dict[str, float] = field(default_factory=dict)
    """The model's writing of the answers it wrote (``llm_synthesize``), from its request to its last token."""
    beyond_writing_ms: dict[str, float] = field(default_factory=dict)
    """``final`` less that writing, over the same answers: what the service adds to the model's answer."""
    cpu_s_per_answer: float = 0.0
    cores_busy: float = 0.0
    client_cpu_s_per_answer: float = 0.0
    load_average: float = 0.0
    rss_mib_start: float = 0.0
    rss_mib_peak: float = 0.0
    error_kinds: dict[str, int] = field(default_factory=dict)
    degraded: int = 0
    node_ms: dict[str, float] = field(default_factory=dict)
    llm_calls: dict[str, float] = field(default_factory=dict)
    model_cores_busy: float = 0.0
    """CPU of the loopback model server (it shares the cores: a hosted model would not)."""
    warning_codes: dict[str, int] = field(default_factory=dict)
    windows: list[dict[str, float]] = field(default_factory=list)
    tail: dict[str, list[int]] = field(default_factory=dict)
    """The questions of the streams whose first token came at or after its P95, most often first: [streams there,
    streams asked]."""


def quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {f"p{int(q * 100)}": round(percentile(values, q) * 1000, 1) for q in (0.5, 0.95, 0.99)}


def mean_timings(runs: list[dict[str, float]]) -> dict[str, float]:
    """Mean ms per graph node over the answers (`final.timings`), slowest first."""
    totals: dict[str, float] = {}
    for timings in runs:
        for node, ms in timings.items():
            totals[node] = totals.get(node, 0.0) + ms
    means = {node: round(total / len(runs), 1) for node, total in totals.items()} if runs else {}
    return dict(sorted(means.items(), key=lambda kv: -kv[1]))


class Server:
    """`gweta serve` from a checkout, as a subprocess on a free loopback port."""

    def __init__(self, root: Path, data_dir: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "api.cli", "serve", "--port", str(self.port)],
            cwd=root,
            # A variant may name its own data dir (--variant-env NAME:GWETA_DATA_DIR=D: the corpus-size run).
            env={**os.environ, **NO_CACHES, "GWETA_DATA_DIR": str(data_dir.resolve()), **env},
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.ps = psutil.Process(self.proc.pid)

    def tree(self) -> list[psutil.Process]:
        try:
            return [self.ps, *self.ps.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def cpu_s(self) -> float:
        total = 0.0
        for p in self.tree():
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def handles(self) -> tuple[int, int]:
        """Open files and threads of the server process itself."""
        try:
            return self.ps.num_fds(), self.ps.num_threads()
        except psutil.NoSuchProcess:
            return 0, 0

    def rss_mib(self) -> float:
        total = 0
        for p in self.tree():
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total / 2**20

    async def ready(self, timeout_s: float = 300) -> None:
        start = time.perf_counter()
        async with httpx.AsyncClient(base_url=self.url, timeout=10) as client:
            while time.perf_counter() - start < timeout_s:
                if self.proc.poll() is not None:
                    break
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.2)
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace")[-3000:]
        raise SystemExit(f"gweta serve did not become ready:\n{tail}")

    def stop(self, keep_log: Path | None = None) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if keep_log is not None:
            self.log.seek(0)
            with keep_log.open("ab") as out:
                out.write(self.log.read())
        self.log.close()


async def ask(client: httpx.AsyncClient, question: str) -> Stream:
    """One stream in a fresh session; times are seconds from the request."""
    out = Stream(question=question)
    start = time.perf_counter()
    params = {"q": question, "session_id": f"load-{uuid.uuid4().hex[:12]}"}
    try:
        async with client.stream("GET", "/api/v1/query/stream", params=params) as response:
            out.status = response.status_code
            if response.status_code != 200:
                await response.aread()
                out.error = f"http_{response.status_code}"
                return out
            # Raw bytes, split on newlines, with only `final` and `warning` data decoded: the client shares the
            # server's cores, so it reads as little as it can (each chunk stamped with its arrival time).
            event, rest = b"", b""
            async for chunk in response.aiter_raw():
                now = time.perf_counter() - start
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    if line.startswith(b"event: "):
                        event = line[7:].rstrip(b"\r")
                        if event == b"token":
                            if out.first is None:
                                out.first = now
                        elif event == b"meta":
                            out.meta = now
                        elif event == b"final":
                            out.final = now
                        elif event == b"error":
                            out.error = "error_event"
                        elif event == b"warning":
                            out.warned = True
                    elif line.startswith(b"data: ") and event in (b"final", b"warning"):
                        data = json.loads(line[6:])
                        if event == b"final":
                            out.timings = data.get("timings", {})
                            out.usage = data.get("usage", {})
                        else:
                            out.codes.append(data.get("code", ""))
    except httpx.HTTPError as exc:
        out.error = type(exc).__name__
    if not out.error and out.final is None:
        out.error = "no_final"
    return out


async def run_level(server: Server, variant: str, level: int, questions: list[str], args: argparse.Namespace) -> Level:
    limits = httpx.Limits(max_connections=level + 4, max_keepalive_connections=level + 4)
    timeout = httpx.Timeout(args.timeout, connect=10)
    async with httpx.AsyncClient(base_url=server.url, timeout=timeout, limits=limits) as client:
        # Warm-up: lazy imports, the first model call; with --warm-all every question once (ten at a time), so the
        # level measures a server in its steady state (documents read and cached) rather than its first minute.
        warm = asyncio.Semaphore(10 if args.warm_all else 1)

        async def warm_up(question: str) -> None:
            async with warm:
                await ask(client, question)

        await asyncio.gather(*(warm_up(q) for q in (questions if args.warm_all else questions[:2])))
        results: list[Stream] = []
        started = 0
        peak_rss = start_rss = server.rss_mib()
        model = psutil.Process(args.llm_pid) if getattr(args, "llm_pid", None) else None
        model_cpu0 = sum(model.cpu_times()[:2]) if model else 0.0
        cpu0, client0, t0 = server.cpu_s(), time.process_time(), time.perf_counter()
        load_average = os.getloadavg()[0]
        deadline = t0 + args.duration

        async def client_loop(offset: int) -> None:
            nonlocal started
            n = offset
            while time.perf_counter() < deadline and started < args.max_streams:
                started += 1
                begun = time.perf_counter() - t0
                stream = await ask(client, questions[n % len(questions)])
                stream.started_at = begun
                results.append(stream)
                n += level

        windows: list[dict[str, float]] = []

        async def sample() -> None:
            nonlocal peak_rss
            next_window = args.window
            while True:
                rss = server.rss_mib()
                peak_rss = max(peak_rss, rss)
                now = time.perf_counter() - t0
                if args.window and now >= next_window:
                    # Streams that ended in this window: their latency, and the server's size at its end.
                    done = [
                        r
                        for r in results
                        if not r.error and next_window - args.window <= r.started_at + (r.final or 0) < next_window
                    ]
                    fds, threads = server.handles()
                    latency = quantiles([r.final or 0 for r in done])
                    windows.append({
                        "end_s": round(next_window), "answers": len(done), "rss_mib": round(rss, 1), "fds": fds,
                        "llm_unavailable": sum("llm_unavailable" in r.codes for r in done),
                        "sources_slow": sum("sources_slow" in r.codes for r in done),
                        "threads": threads, **{f"final_{k}": v for k, v in latency.items()},
                    })  # fmt: skip
                    next_window += args.window
                await asyncio.sleep(0.5)

        async def slow_store() -> None:
            start, end, delay = args.store_slow
            await asyncio.sleep(start)
            args.proxy.delay = delay
            await asyncio.sleep(end - start)
            args.proxy.delay = 0.0

        async def outage() -> None:
            start, end = args.llm_outage
            await asyncio.sleep(start)
            await client.post(f"{args.llm_url}/control", json={"fail": True})
            await asyncio.sleep(end - start)
            await client.post(f"{args.llm_url}/control", json={"fail": False})

        sampler = asyncio.create_task(sample())
        fault = asyncio.create_task(outage()) if args.llm_outage else None
        slowed = asyncio.create_task(slow_store()) if args.store_slow else None
        await asyncio.gather(*(client_loop(i) for i in range(level)))
        wall = time.perf_counter() - t0
        cpu = server.cpu_s() - cpu0
        client_cpu = time.process_time() - client0
        model_cpu = sum(model.cpu_times()[:2]) - model_cpu0 if model else 0.0
        sampler.cancel()
        for task in (fault, slowed):
            if task is not None:
                await task
    ok = [r for r in results if not r.error]
    written = [r for r in ok if r.final is not None and "llm_synthesize" in r.timings]
    rejected = sum(r.status == 503 for r in results)
    kinds: dict[str, int] = {}
    for r in results:
        if r.error:
            kinds[r.error] = kinds.get(r.error, 0) + 1
    return Level(
        variant=variant,
        level=level,
        streams=len(results),
        answers=len(ok),
        errors=len(results) - len(ok) - rejected,
        rejected=rejected,
        wall_s=round(wall, 2),
        answers_per_s=round(len(ok) / wall, 2),
        meta_ms=quantiles([r.meta for r in ok if r.meta is not None]),
        first_ms=quantiles([r.first for r in ok if r.first is not None]),
        final_ms=quantiles([r.final for r in ok if r.final is not None]),
        writing_ms=quantiles([r.timings["llm_synthesize"] / 1000 for r in written]),
        beyond_writing_ms=quantiles([r.final - r.timings["llm_synthesize"] / 1000 for r in written]),
        cpu_s_per_answer=round(cpu / max(1, len(ok)), 3),
        cores_busy=round(cpu / wall, 2),
        client_cpu_s_per_answer=round(client_cpu / max(1, len(ok)), 4),
        load_average=round(load_average, 1),
        rss_mib_start=round(start_rss, 1),
        rss_mib_peak=round(peak_rss, 1),
        error_kinds=kinds,
        degraded=sum(r.warned for r in ok),
        node_ms=mean_timings([r.timings for r in ok]),
        llm_calls=mean_calls([r.usage for r in ok]),
        model_cores_busy=round(model_cpu / wall, 2),
        warning_codes={c: sum(c in r.codes for r in ok) for c in sorted({c for r in ok for c in r.codes})},
        windows=windows,
        tail=tail_questions(ok),
    )


def tail_questions(streams: list[Stream], shown: int = 5) -> dict[str, list[int]]:
    """Which questions the first-token tail is made of: for the ``shown`` questions most often at or after the P95,
    how many of their streams were there and how many were asked."""
    firsts = [r.first for r in streams if r.first is not None]
    if not firsts:
        return {}
    bar = percentile(firsts, 0.95)
    asked = Counter(r.question for r in streams)
    there = Counter(r.question for r in streams if r.first is not None and r.first >= bar)
    return {q: [n, asked[q]] for q, n in there.most_common(shown)}


def mean_calls(usages: list[dict[str, int]]) -> dict[str, float]:
    """Mean model calls per answer by skill (`final.usage`: calls_<skill>, and timeouts_<skill> among them)."""
    totals: dict[str, float] = {}
    for usage in usages:
        for key, count in usage.items():
            if key.startswith(("calls_", "timeouts_")):
                totals[key] = totals.get(key, 0.0) + count
    return {key: round(total / len(usages), 2) for key, total in sorted(totals.items())} if usages else {}


def q(d: dict[str, float]) -> str:
    """P50 / P95 / P99 of ``quantiles``, in ms."""
    return " / ".join(f"{d[k]:.0f}" for k in ("p50", "p95", "p99")) if d else "-"


def row(r: Level) -> str:
    return (
        f"| {r.variant} | {r.level} | {r.streams} | {r.answers_per_s:.2f} | {q(r.meta_ms)} | {q(r.first_ms)} | "
        f"{q(r.final_ms)} | {r.errors} | {r.rejected} | {r.cpu_s_per_answer * 1000:.0f} | {r.cores_busy:.2f} | "
        f"{r.client_cpu_s_per_answer * 1000:.1f} | {r.rss_mib_start:.0f} → {r.rss_mib_peak:.0f} | "
        f"{r.load_average:.1f} |"
    )


HEADER = [
    "| variant | streams at once | streams | answers/s | meta P50/P95/P99 ms | first token P50/P95/P99 ms | "
    "final P50/P95/P99 ms | errors | 503s | server CPU ms/answer | cores busy | client CPU ms/answer | "
    "RSS MiB start → peak | load average |",
    "| --- | ---: | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
]


def start_llm(args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks/paced_llm.py"), "--port", str(port), "--ttft-ms", str(args.ttft_ms),
         "--tokens-per-s", str(args.tokens_per_s), "--answer-tokens", str(args.answer_tokens),
         *(["--at-most"] if args.at_most else [])],
    )  # fmt: skip
    for _ in range(300):
        try:
            httpx.get(f"http://127.0.0.1:{port}/stats", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.2)
    args.llm_url = f"http://127.0.0.1:{port}"
    args.llm_pid = proc.pid
    env = {
        "GWETA_LLM__BACKEND": "openai",
        "GWETA_LLM__BASE_URL": f"http://127.0.0.1:{port}/v1",
        "GWETA_LLM__MODEL": "paced",
    }
    return proc, env


async def main_async(args: argparse.Namespace, data_dir: Path) -> list[Level]:
    questions = list(SAMPLE_QUESTIONS)
    if args.questions:
        lines = args.questions.read_text().splitlines()
        questions = [json.loads(line)["question"] for line in lines if line.strip()]
    variants = [v.split("=", 1) for v in args.variant] or [["current", str(ROOT)]]
    env = dict(kv.split("=", 1) for kv in args.env)
    own_env: dict[str, dict[str, str]] = {}
    for spec in args.variant_env:
        name, _, kv = spec.partition(":")
        own_env.setdefault(name, {}).update([kv.split("=", 1)])
    llm = None
    if args.llm:
        llm, llm_env = start_llm(args)
        env |= llm_env
    levels = [int(x) for x in args.levels.split(",")]
    results: list[Level] = []
    s3 = contextlib.ExitStack()
    try:
        if args.s3:
            args.proxy, s3_env = await start_s3(data_dir, s3)
            env |= s3_env
        for level in levels:
            for name, root in variants:
                server = Server(Path(root), data_dir, env | own_env.get(name, {}))
                try:
                    await server.ready()
                    result = await run_level(server, name, level, questions, args)
                finally:
                    server.stop(args.server_log)
                results.append(result)
                print(row(result), flush=True)
    finally:
        if llm is not None:
            llm.terminate()
            llm.wait(timeout=10)
        s3.close()
    return results


async def start_s3(data_dir: Path, stack: contextlib.ExitStack) -> tuple[Any, dict[str, str]]:
    """A real S3 server (moto) on 127.0.0.1 holding the data dir's objects, behind a proxy that can hold every
    request (``--store-slow``); the servers read their corpus through the proxy (Milvus Lite stays in the data dir).
    Both stop when ``stack`` closes. Returns the proxy and the servers' environment."""
    sys.path.insert(0, str(ROOT))
    from api.tools.object_store import S3ObjectStore
    from tests.servers import SlowProxy, moto_s3, s3_bucket

    endpoint = stack.enter_context(moto_s3())
    cfg = await asyncio.to_thread(s3_bucket, endpoint, "load")
    store, objects = S3ObjectStore(cfg), data_dir / "objects"
    paths = [p for p in objects.rglob("*") if p.is_file()]
    await asyncio.gather(*(store.put_bytes(p.relative_to(objects).as_posix(), p.read_bytes()) for p in paths))
    host, port = endpoint.removeprefix("http://").split(":")
    proxy = stack.enter_context(SlowProxy((host, int(port))))
    env = {
        "GWETA_OBJECT_STORE__BACKEND": "s3", "GWETA_OBJECT_STORE__ENDPOINT_URL": proxy.url,
        "GWETA_OBJECT_STORE__BUCKET": cfg.bucket, "GWETA_OBJECT_STORE__REGION": cfg.region,
        "GWETA_OBJECT_STORE__ACCESS_KEY_ID": "test", "GWETA_OBJECT_STORE__SECRET_ACCESS_KEY": "test",
    }  # fmt: skip
    return proxy, env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--questions", type=Path, help="JSONL with a 'question' field per line")
    parser.add_argument("--levels", default="1,10,50")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of new streams per level")
    parser.add_argument("--warm-all", action="store_true", help="ask every question once before each level")
    parser.add_argument("--max-streams", type=int, default=2000, help="streams started per level, at most")
    parser.add_argument("--timeout", type=float, default=120.0, help="longest a stream may take")
    parser.add_argument("--variant", action="append", default=[], help="NAME=CHECKOUT (repeatable)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)")
    parser.add_argument("--variant-env", action="append", default=[], help="NAME:KEY=VALUE for one variant's server")
    parser.add_argument("--llm", action="store_true", help="answer with the paced loopback model")
    parser.add_argument("--ttft-ms", type=float, default=300)
    parser.add_argument("--tokens-per-s", type=float, default=50)
    parser.add_argument("--answer-tokens", type=int, default=200)
    parser.add_argument("--at-most", action="store_true", help="the paced answers no longer than --answer-tokens")
    parser.add_argument("--window", type=float, default=0, help="also report every WINDOW s (the soak run)")
    parser.add_argument(
        "--llm-outage", type=lambda v: tuple(float(x) for x in v.split(",")), help="START,END s into each level: "
        "the paced model answers 503 in between (the fault run; needs --llm)"
    )  # fmt: skip
    parser.add_argument("--s3", action="store_true", help="read the corpus from a loopback S3 server (moto)")
    parser.add_argument(
        "--store-slow", type=lambda v: tuple(float(x) for x in v.split(",")), help="START,END,DELAY: between START "
        "and END s into each level, every request to the S3 server is held DELAY s (the fault run; needs --s3)"
    )  # fmt: skip
    parser.add_argument("--server-log", type=Path, help="append each server's log here")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", type=Path, help="Markdown report")
    parser.add_argument("--json", type=Path, help="the figures, for benchmarks/load_plot.py")
    args = parser.parse_args()
    if args.store_slow and not args.s3:
        parser.error("--store-slow needs --s3")

    # A terminated harness still stops the servers it started (the finally blocks run on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(tmp)
            subprocess.run(
                [sys.executable, "-m", "api.cli", "ingest", str(ROOT / "sample_corpus"), "--data-dir", str(data_dir)],
                check=True,
                capture_output=True,
                cwd=ROOT,
            )
        results = asyncio.run(main_async(args, data_dir))
    mode = "paced loopback LLM" if args.llm else "no LLM (extractive)"
    lines = [
        f"# Load: {args.title or 'concurrent streams'}",
        "",
        f"- machine: {os.cpu_count()} cores, shared (load average {load[0]:.1f} at the start); {mode}; result cache "
        f"and QA memory off; every stream a fresh session; {args.duration:.0f} s of new streams per level"
        + ("; each server warmed with every question once first" if args.warm_all else ""),
        f"- data: {args.data_dir or 'sample corpus'}; {len(SAMPLE_QUESTIONS) if not args.questions else args.questions}"
        " questions in turn",
        "",
        *HEADER,
        *(row(r) for r in results),
    ]
    for r in results:
        top = ", ".join(f"{k} {v:.0f}" for k, v in list(r.node_ms.items())[:6])
        lines.append(f"- {r.variant} at {r.level}: mean ms per node: {top}")
        if r.llm_calls:
            calls = ", ".join(f"{k.replace('_', ' ', 1)} {v:.2f}" for k, v in r.llm_calls.items())
            lines.append(
                f"- {r.variant} at {r.level}: model calls per answer: {calls}; the loopback model's server "
                f"kept {r.model_cores_busy:.2f} cores busy"
            )
        if r.writing_ms:
            lines.append(
                f"- {r.variant} at {r.level}: the model writing its answer (llm_synthesize) P50/P95/P99 "
                f"{q(r.writing_ms)} ms; final less that writing, same answers, {q(r.beyond_writing_ms)} ms"
            )
        if r.tail:
            there = ", ".join(f"{q[:70]!r} {n} of {m}" for q, (n, m) in r.tail.items())
            lines.append(f"- {r.variant} at {r.level}: at or after first token P95, most often: {there}")
        if r.degraded or r.error_kinds:
            lines.append(
                f"- {r.variant} at {r.level}: {r.degraded} answers with a warning ({r.warning_codes}); "
                f"errors {r.error_kinds}"
            )
        if r.windows:
            lines += ["", f"{r.variant} at {r.level}, per {args.window:.0f} s window:", "",
                      "| until s | answers | without LLM | store slow | final P50 / P95 ms | RSS MiB | open files | "
                      "threads |", "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]  # fmt: skip
            lines += [
                f"| {w['end_s']:.0f} | {w['answers']:.0f} | {w['llm_unavailable']:.0f} | {w['sources_slow']:.0f} | "
                f"{w.get('final_p50', 0):.0f} / "
                f"{w.get('final_p95', 0):.0f} | {w['rss_mib']:.0f} | {w['fds']:.0f} | {w['threads']:.0f} |"
                for w in r.windows
            ]
    publish(lines, args.out)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
