"""Kill a real `gweta ingest` process in the middle of a document, run it again, and find a consistent index."""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from api.settings import Settings
from api.tools.corpus import Corpus
from api.tools.object_store import LocalObjectStore
from api.tools.token_arrays import artifact_chunk_ids
from tests.conftest import SAMPLE_CORPUS, ingest_into
from tests.test_ingestion import snapshot

BIG = "cyber-and-data-protection-act-2021.md"  # ~250 chunks: seconds of embedding to be killed in


def children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we looked
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def ingest_and_kill(corpus_dir: Path, data_dir: Path) -> dict[str, object]:
    """Run `gweta ingest` and SIGKILL it in the middle of the big document; return the manifest it left.

    Its parser worker processes must not outlive it."""
    manifest = data_dir / "objects" / "indexes" / "manifest.json"
    env = {**os.environ, "GWETA_DATA_DIR": str(data_dir)}
    process = subprocess.Popen([sys.executable, "-m", "api.cli", "ingest", str(corpus_dir)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        # consumer-protection comes first, then the big Act: kill once the first is recorded and the big one runs.
        while time.monotonic() < deadline and not (manifest.exists() and json.loads(manifest.read_text())["documents"]):
            time.sleep(0.05)
        time.sleep(2.0)
        assert process.poll() is None, "ingestion finished before it could be killed"
        workers = children(process.pid)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert workers, "the parser worker processes were expected to be running"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers), "parser workers outlived a killed ingestion"
    return dict(json.loads(manifest.read_text())["documents"])


async def test_killed_ingestion_leaves_a_consistent_index_after_a_rerun(shared_data: Path, tmp_path: Path) -> None:
    corpus_dir, data_dir = tmp_path / "src", tmp_path / "data"
    shutil.copytree(SAMPLE_CORPUS, corpus_dir)
    shutil.copy(shared_data / "corpus/zimbabwe_legislation/markdown" / BIG, corpus_dir)  # sorts between samples
    partial = await asyncio.to_thread(ingest_and_kill, corpus_dir, data_dir)
    assert 1 <= len(partial) < 6

    report = await ingest_into(Settings(data_dir=data_dir), corpus_dir)
    assert report.failures == 0 and report.count("unchanged") == len(partial)
    assert "reconcile" in report.stage_seconds  # the killed run left its marker, so strays were looked for
    ids, count, bm25, final_manifest = await snapshot(data_dir)
    owned = [cid for entry in final_manifest["documents"].values() for cid in entry["chunk_ids"]]  # type: ignore[attr-defined]
    assert len(final_manifest["documents"]) == 6  # type: ignore[arg-type]
    assert len(owned) == len(set(owned)) == count == len(ids)  # no duplicates
    assert set(owned) == ids == set(artifact_chunk_ids(bm25))  # nothing missing anywhere
    corpus = await Corpus.load(LocalObjectStore(data_dir / "objects"))
    assert set(corpus.chunks) == ids
