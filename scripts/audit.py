"""Scan the locked dependencies for known vulnerabilities: pip-audit over exactly what poetry.lock pins.

The requirements are the ones ``scripts/install.py`` installs (every group, with torch at its locked version), so
what is scanned is what is deployed; nothing is installed or resolved. pip-audit asks its vulnerability service
(``--service pypi``, the default: PyPI's JSON API, which carries each release's OSV advisories; or ``osv``:
api.osv.dev) about each pinned version.

Exit status: 0 when every package was checked and none has a known vulnerability; 1 when some do (each is listed
with its advisory and the versions that fix it); 2 when the scan could not be made (the service unreachable, or
pip-audit failing, or any package left unchecked), which is never reported as a clean result.

Usage: python scripts/audit.py [--groups main,ml,dev,ocr,bench] [--service pypi|osv] [--timeout 15]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from install import locked_requirements  # scripts/install.py, beside this file

UNREACHABLE = 2


def requirements(groups: set[str]) -> str:
    """The locked pins of ``groups`` as pip-audit reads them: name==version (markers kept), torch included."""
    text, torch = locked_requirements(groups)
    pins = [line.split(" --hash=")[0] for line in text.splitlines() if line.strip()]
    if torch:
        pins.append(f"torch=={torch}")
    return "\n".join(pins) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="main,ml,dev,ocr,bench")
    parser.add_argument("--service", default="pypi", choices=["pypi", "osv"])
    parser.add_argument("--timeout", type=int, default=15, help="seconds per request to the service")
    args = parser.parse_args()
    where = (
        "PyPI's JSON API (https://pypi.org/pypi/<name>/<version>/json)"
        if args.service == "pypi"
        else ("the OSV API (https://api.osv.dev)")
    )
    with tempfile.TemporaryDirectory() as tmp:
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text(requirements(set(args.groups.split(","))))
        report = Path(tmp) / "report.json"
        cmd = [
            sys.executable, "-m", "pip_audit", "--requirement", str(reqs), "--no-deps", "--disable-pip",
            "--vulnerability-service", args.service, "--timeout", str(args.timeout), "--progress-spinner", "off",
            "--format", "json", "--output", str(report),
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if not report.exists() or not report.read_text().strip():
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            print(
                f"audit NOT done: pip-audit could not check the locked versions against {where}.\n"
                f"  pip-audit said: {last}\n"
                "  This scan needs that service reachable over HTTPS; no result is not a clean result.",
                file=sys.stderr,
            )
            return UNREACHABLE
        found = json.loads(report.read_text())
    deps = found.get("dependencies", [])
    skipped = [d for d in deps if d.get("skip_reason")]
    vulnerable = [d for d in deps if d.get("vulns")]
    for dep in vulnerable:
        for vuln in dep["vulns"]:
            fixed = ", ".join(vuln.get("fix_versions") or []) or "no fixed version yet"
            print(f"{dep['name']} {dep['version']}: {vuln['id']} (fixed in: {fixed})")
    checked = len(deps) - len(skipped)
    print(f"{checked} of {len(deps)} locked packages checked against {where}: {len(vulnerable)} vulnerable")
    if skipped:
        names = ", ".join(d["name"] for d in skipped[:5]) + (" …" if len(skipped) > 5 else "")
        reason = skipped[0]["skip_reason"]
        print(
            f"audit NOT complete: {len(skipped)} locked packages could not be checked ({names}).\n"
            f"  pip-audit said, e.g.: {reason}\n"
            f"  This scan needs {where} reachable over HTTPS; an unchecked package is not a clean result.",
            file=sys.stderr,
        )
    if vulnerable:
        return 1
    return UNREACHABLE if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
