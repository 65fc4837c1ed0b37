"""The vector-store contract (tests/vector_store_contract.py) on Milvus Lite, and on a real Milvus server started
inside a private network namespace together with its client."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from api.tools.vector_store import MilvusVectorStore
from tests.milvus_server import NAMESPACE_COMMAND
from tests.vector_store_contract import CONTRACT, DIM, Check

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
async def lite(tmp_path: Path) -> AsyncIterator[MilvusVectorStore]:
    store = MilvusVectorStore(str(tmp_path / "milvus.db"), "contract", DIM)
    yield store
    await store.close()


@pytest.mark.parametrize("check", CONTRACT, ids=lambda c: c.__name__)
async def test_contract_on_milvus_lite(lite: MilvusVectorStore, check: Check) -> None:
    await check(lite)


def test_contract_on_a_milvus_server() -> None:
    """Milvus 2.3.5 from PyPI, by URI, in `unshare -n` with loopback up (it binds every interface)."""
    assert shutil.which("unshare"), "this test needs util-linux's unshare (and the right to make a network namespace)"
    command = NAMESPACE_COMMAND.format(python=sys.executable, args="contract")
    run = subprocess.run(["unshare", "-n", "sh", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = run.stdout + run.stderr[-3000:]
    assert run.returncode == 0, report
    for check in CONTRACT:
        assert f"ok {check.__name__}" in run.stdout, report
