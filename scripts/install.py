"""Install exactly the versions in poetry.lock into a virtual environment, with a CPU build of torch.

Poetry resolves and locks; this script only installs what the lock says, so CI and laptops get the same versions
without Poetry itself. Torch is the one exception: the lock records the PyPI release (a CUDA build with ~17 nvidia
packages), but a service that runs on CPU wants the CPU build of the same version. So torch is installed first, on
its own, from ``--torch-index`` (or the machine's local wheels), and the CUDA-only packages are left out.

The ``ocr`` group's Python wrapper drives the tesseract program, which comes from the system's packages: when that
group is picked and tesseract is missing, the script installs Debian's ``tesseract-ocr`` with apt-get (as root, or
through sudo) and otherwise says what to install. The ``dev`` group's browser tests drive Debian's ``chromium``
through Playwright (no browser is downloaded by Playwright), which is installed the same way.

Two folders of npm packages are installed from their locks with ``npm ci`` when npm is present: the API docs' Swagger
UI and ReDoc (``tools/api-docs``, which the service serves at ``/docs`` and ``/redoc`` without a CDN), and, for the
``dev`` group's integration tests, a Firestore emulator (``tools/firestore-emulator``).

Usage: python scripts/install.py [--venv .venv] [--groups main,ml,dev,ocr] [--torch-index URL] [--no-system-packages]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "poetry.lock"
# Packages that only a CUDA build of torch needs; the CPU build requires none of them.
CUDA_ONLY_PREFIXES = ("nvidia-", "cuda-", "triton")


def locked_requirements(groups: set[str]) -> tuple[str, str | None]:
    """Return a hash-pinned requirements text for ``groups`` and the locked torch version, if any."""
    lock = tomllib.loads(LOCK.read_text())
    lines: list[str] = []
    torch_version: str | None = None
    for pkg in lock["package"]:
        name, version = pkg["name"], pkg["version"]
        picked = groups.intersection(pkg.get("groups", ["main"]))
        if not picked:
            continue
        if name == "torch":
            torch_version = version
            continue
        if name.startswith(CUDA_ONLY_PREFIXES):
            continue
        markers = pkg.get("markers")
        if isinstance(markers, dict):
            # A package needed by several groups is needed when any picked group's marker holds.
            parts = [markers.get(g) for g in sorted(picked)]
            marker = None if any(p is None for p in parts) else " or ".join(f"({p})" for p in parts)
        else:
            marker = markers
        spec = f"{name}=={version}" + (f" ; {marker}" if marker else "")
        hashes = " ".join(f"--hash={f['hash']}" for f in pkg.get("files", []))
        lines.append(f"{spec} {hashes}".rstrip())
    return "\n".join(lines) + "\n", torch_version


def run(*cmd: str) -> None:
    print("+", " ".join(cmd[:6]), "..." if len(cmd) > 6 else "", flush=True)
    subprocess.run(cmd, check=True)


def ensure_debian_package(program: str, package: str, why: str) -> None:
    """Install Debian's ``package`` with apt-get (as root, or through sudo) when ``program`` is missing."""
    if shutil.which(program):
        return
    apt = shutil.which("apt-get")
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"] if shutil.which("sudo") else None
    if apt and prefix is not None:
        try:
            run(*prefix, apt, "install", "-y", "--no-install-recommends", package)
        except subprocess.CalledProcessError:
            # The package lists may be empty on a fresh machine or image.
            try:
                run(*prefix, apt, "update")
                run(*prefix, apt, "install", "-y", "--no-install-recommends", package)
            except subprocess.CalledProcessError:
                pass
    if not shutil.which(program):
        print(f"warning: {program} is not installed, so {why}; install Debian's {package}")


def ensure_tesseract() -> None:
    ensure_debian_package("tesseract", "tesseract-ocr", "scanned PDFs cannot be OCRed")


def ensure_chromium() -> None:
    ensure_debian_package("chromium", "chromium", "the web app's browser tests cannot run")


def ensure_redis() -> None:
    ensure_debian_package("redis-server", "redis-server", "the shared-state (Redis) tests cannot run")


def ensure_npm_folder(name: str, without: str) -> None:
    """Install ``tools/<name>`` from its npm lock (skipped when node_modules already matches the lock)."""
    folder = ROOT / "tools" / name
    lock = folder / "package-lock.json"
    npm = shutil.which("npm")
    if not lock.exists():
        return
    if not npm:
        print(f"warning: npm is not installed, so {without}; install Node.js 20+")
        return
    stamp = folder / "node_modules" / ".gweta-lock-sha256"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    run(npm, "ci", "--prefix", str(folder), "--ignore-scripts", "--no-audit", "--no-fund")
    stamp.write_text(digest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=str(ROOT / ".venv"))
    parser.add_argument("--groups", default="main,ml,dev,ocr")
    parser.add_argument("--torch-index", default="", help="index for the CPU torch build, e.g. the PyTorch CPU index")
    parser.add_argument(
        "--no-system-packages", action="store_true", help="leave tesseract-ocr, chromium and redis-server to the caller"
    )
    args = parser.parse_args()

    groups = set(args.groups.split(","))
    if "ocr" in groups and not args.no_system_packages:
        ensure_tesseract()
    if "dev" in groups and not args.no_system_packages:
        ensure_chromium()
        ensure_redis()
    if "main" in groups:
        ensure_npm_folder("api-docs", "/docs and /redoc have no Swagger UI or ReDoc to serve")
    if "dev" in groups:
        ensure_npm_folder("firestore-emulator", "the Firestore emulator the tests use is missing")
    env_dir = Path(args.venv)
    py = env_dir / "bin" / "python"
    reqs, torch_version = locked_requirements(groups)
    stamp_key = hashlib.sha256((reqs + args.torch_index).encode()).hexdigest()
    stamp = env_dir / ".gweta-installed"
    if py.exists() and stamp.exists() and stamp.read_text() == stamp_key:
        print(f"{env_dir} already matches poetry.lock ({args.groups})")
        return 0

    if not py.exists():
        venv.create(env_dir, with_pip=True)
    pip = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if torch_version:
        torch_cmd = [*pip, f"torch=={torch_version}"]
        if args.torch_index:
            torch_cmd += ["--index-url", args.torch_index]
        run(*torch_cmd)
    req_file = env_dir / "requirements.lock.txt"
    req_file.write_text(reqs)
    run(*pip, "--no-deps", "--require-hashes", "-r", str(req_file))
    run(*pip, "--no-deps", "-e", str(ROOT))
    run(str(py), "-m", "pip", "check")
    stamp.write_text(stamp_key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
