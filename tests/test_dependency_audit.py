"""``make audit``: pip-audit over exactly the locked versions, and never a clean result for a scan that did not run."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AUDIT = ROOT / "scripts" / "audit.py"


def test_the_scanned_requirements_are_the_locked_versions() -> None:
    sys.path.insert(0, str(AUDIT.parent))
    try:
        from audit import requirements  # scripts/audit.py
    finally:
        sys.path.remove(str(AUDIT.parent))
    pins = requirements({"main"}).splitlines()
    lock = {p["name"]: p["version"] for p in tomllib.loads((ROOT / "poetry.lock").read_text())["package"]}
    assert pins and all("--hash" not in pin for pin in pins)
    for pin in pins:
        name, version = pin.split(" ;")[0].split("==")
        assert lock[name] == version, pin
    assert any(pin.startswith("fastapi==") for pin in pins)


def test_an_unreachable_vulnerability_service_fails_the_audit_plainly(tmp_path: Path) -> None:
    # A proxy on a port nothing listens on: every request to the service fails to connect, wherever this runs.
    closed = "http://127.0.0.1:9"
    env = {**os.environ, "HTTPS_PROXY": closed, "https_proxy": closed, "NO_PROXY": "", "no_proxy": ""}
    done = subprocess.run(
        [sys.executable, str(AUDIT), "--groups", "main", "--timeout", "5"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "audit NOT done" in done.stderr and "pypi.org" in done.stderr
    assert "Traceback" not in done.stderr and "0 vulnerable" not in done.stdout
