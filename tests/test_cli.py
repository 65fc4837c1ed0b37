"""The gweta command as a newcomer runs it: real subprocesses on a temporary data dir."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import SAMPLE_CORPUS

GWETA = [sys.executable, "-m", "api.cli"]


def gweta(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GWETA_DATA_DIR": str(data_dir), "COLUMNS": "200"}
    return subprocess.run([*GWETA, *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def test_ingest_then_ask_prints_a_cited_answer(tmp_path: Path) -> None:
    ingest = gweta("ingest", str(SAMPLE_CORPUS), data_dir=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    assert re.search(r"ingested\s*│\s*4\s*│", ingest.stdout), ingest.stdout
    assert "Files" in ingest.stderr and "4/4" in ingest.stderr  # the progress bar
    asked = gweta("ask", "How much notice must a tenant give to end a lease?", data_dir=tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert "one month" in asked.stdout and "sample/act/2024/3#s5" in asked.stdout
    as_json = gweta("ask", "How much notice must a tenant give to end a lease?", "--json", data_dir=tmp_path)
    final = json.loads(as_json.stdout)
    assert final["event"] == "final" and final["citations"][0]["section_id"] == "sample/act/2024/3#s5"
    assert final["citations"][0]["quote"] in (SAMPLE_CORPUS / "residential-tenancies-act.md").read_text()


def test_clear_errors_instead_of_tracebacks(tmp_path: Path) -> None:
    missing = gweta("ingest", str(tmp_path / "nowhere"), data_dir=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    empty = gweta("ask", "What is a deposit?", data_dir=tmp_path / "fresh")
    assert empty.returncode == 1 and "gweta ingest" in empty.stderr
    blank = gweta("ask", "   ", data_dir=tmp_path)
    assert blank.returncode == 2 and "Invalid question" in blank.stderr
    for result in (missing, empty, blank):
        assert "Traceback" not in result.stderr + result.stdout
