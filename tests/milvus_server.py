"""A real Milvus server (PyPI's ``milvus`` 2.3.5) for tests and benchmarks, only ever inside a private network
namespace: its components bind every interface, so it runs where the only interface is loopback.

    unshare -n sh -c 'ip link set lo up && exec .venv/bin/python -m tests.milvus_server contract'

``contract`` starts the server, runs every check of ``tests/vector_store_contract.py`` against ``MilvusVectorStore``
at its URI (one fresh collection per check), prints ``ok <check>`` or ``FAILED <check>: <error>``, and exits 0
only if all passed. ``test_vector_store.py`` runs that command and reads its output.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NAMESPACE_COMMAND = "ip link set lo up && exec {python} -m tests.milvus_server {args}"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def in_private_network() -> bool:
    """True when loopback is the only network interface this process can see."""
    return {name for _, name in socket.if_nameindex()} <= {"lo"}


@contextmanager
def milvus_server(base_dir: Path) -> Iterator[str]:
    """Start a Milvus server with its data under ``base_dir``; yield its URI; stop it afterwards."""
    if not in_private_network():
        raise RuntimeError("start the Milvus server only inside `unshare -n` (it binds every interface)")
    from milvus import MilvusServer

    server = MilvusServer()
    server.set_base_dir(str(base_dir))
    started = time.perf_counter()
    server.start()
    say(f"milvus server on port {server.listen_port}, up in {time.perf_counter() - started:.1f} s")
    try:
        yield f"http://127.0.0.1:{server.listen_port}"
    finally:
        server.stop()


async def run_contract(uri: str) -> int:
    from api.tools.vector_store import MilvusVectorStore
    from tests.vector_store_contract import CONTRACT, DIM

    failures = 0
    for i, check in enumerate(CONTRACT):
        store = await asyncio.to_thread(MilvusVectorStore, uri, f"contract_{i}", DIM, embedder=f"contract:{DIM}")
        try:
            await check(store)
            say(f"ok {check.__name__}")
        except Exception:
            failures += 1
            say(f"FAILED {check.__name__}: {traceback.format_exc()}")
        finally:
            await store.close()
    return failures


def main(argv: list[str]) -> int:
    if argv[:1] != ["contract"]:
        say(__doc__ or "")
        return 2
    with tempfile.TemporaryDirectory(prefix="milvus-server-") as base, milvus_server(Path(base)) as uri:
        return 1 if asyncio.run(run_contract(uri)) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
