"""CPU of reading one streamed answer: LangChain's ChatOpenAI.astream against Gweta's own ChatStream, in one run.

Both read the same answers from the loopback paced model (`benchmarks/paced_llm.py`, run here as a subprocess with
no pacing, so its own CPU is not counted): the synthesize skill's prompt over two sources, about ``--answer-tokens``
chunks each. Each round asks ``--concurrency`` answers at once through one client, then the other; the figure is the
process CPU (all threads) per answer, per round, so a busy machine slows both alike.

    python benchmarks/stream_client.py [--rounds 5 --concurrency 20 --answer-tokens 200] [--out F.md]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from langchain_core.messages import HumanMessage, SystemMessage

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from api.composer.skills import load_skills  # noqa: E402
from api.settings import LLMSettings  # noqa: E402
from api.tools.llm import build_chat_stream, build_llm  # noqa: E402

SOURCES = (
    "[1] Labour Act, section 12B (Dismissal)\nEvery employee has the right not to be unfairly dismissed by the "
    "employer at any time. An employee is unfairly dismissed if the employer fails to show that he dismissed the "
    "employee in terms of an employment code.\n\n[2] Labour Act, section 13 (Wages)\nAn employer shall pay wages to "
    "the employee on the agreed day of each month, and no deduction shall be made except as this Act allows."
)
Reader = Callable[[httpx.AsyncClient, LLMSettings, str, str], Awaitable[int]]


async def via_chatopenai(http: httpx.AsyncClient, cfg: LLMSettings, system: str, user: str) -> int:
    llm = build_llm(cfg, http)
    assert llm is not None
    pieces = 0
    async for chunk in llm.astream([SystemMessage(system), HumanMessage(user)]):
        pieces += bool(chunk.content)
    return pieces


async def via_chatstream(http: httpx.AsyncClient, cfg: LLMSettings, system: str, user: str) -> int:
    chat = build_chat_stream(cfg, http)
    assert chat is not None
    pieces = 0
    async for piece in chat.pieces(system, user):
        pieces += isinstance(piece, str)
    return pieces


async def measure(port: int, rounds: int, concurrency: int) -> dict[str, list[float]]:
    cfg = LLMSettings(backend="openai", base_url=f"http://127.0.0.1:{port}/v1", model="paced", timeout_s=60)
    system, user = load_skills()["synthesize"].render(
        question="Can my employer dismiss me without a hearing?", sources=SOURCES, history="(none)"
    )
    readers: dict[str, Reader] = {"ChatOpenAI.astream": via_chatopenai, "ChatStream": via_chatstream}
    cpu: dict[str, list[float]] = {name: [] for name in readers}
    chunks: dict[str, int] = {}
    async with httpx.AsyncClient(timeout=60) as http:
        for read in readers.values():  # warm: imports, connections
            await read(http, cfg, system, user)
        for _ in range(rounds):
            for name, read in readers.items():
                start = time.process_time()
                counts = await asyncio.gather(*(read(http, cfg, system, user) for _ in range(concurrency)))
                cpu[name].append((time.process_time() - start) / concurrency * 1000)
                chunks[name] = counts[0]
    print(f"text chunks per answer: {chunks}")
    return cpu


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--answer-tokens", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "paced_llm.py"), "--port", str(port), "--ttft-ms", "0",
         "--tokens-per-s", "100000", "--answer-tokens", str(args.answer_tokens)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={}, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        cpu = asyncio.run(measure(port, args.rounds, args.concurrency))
    finally:
        server.terminate()
        server.wait()
    lines = [
        "# CPU of reading one streamed answer: ChatOpenAI.astream vs ChatStream",
        "",
        f"- {args.rounds} rounds of {args.concurrency} answers at once per client, alternating; about "
        f"{args.answer_tokens} chunks per answer from the loopback model (unpaced, its CPU not counted)",
        "",
        "| client | CPU ms per answer, median | per round |",
        "| --- | ---: | --- |",
    ]
    for name, figures in cpu.items():
        lines.append(f"| {name} | {statistics.median(figures):.1f} | {', '.join(f'{f:.1f}' for f in figures)} |")
    ratio = statistics.median(cpu["ChatOpenAI.astream"]) / statistics.median(cpu["ChatStream"])
    lines += ["", f"ChatStream needs 1/{ratio:.1f} of ChatOpenAI.astream's CPU per streamed answer."]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
