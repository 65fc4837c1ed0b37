"""Build .venv-studio: LangGraph's local server (``langgraph dev``) beside the project's own virtual environment.

langgraph-api pins grpcio, protobuf and jsonschema-rs below the versions the service locks (google-cloud-firestore
and schemathesis need the newer ones), so it cannot share one lock with them. It gets an environment of its own,
installed from ``tools/studio/requirements.txt`` (every package pinned, resolved against the lock's versions), which
reaches everything else through the project's environment: a ``.pth`` file adds the project root and ``.venv``'s
site-packages after its own, so its few pinned-down packages win and the rest (Milvus Lite, ONNX Runtime, …) come
from ``.venv`` unchanged. ``.venv`` itself is never modified.

Usage: python scripts/studio_env.py [--venv .venv] [--studio .venv-studio]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "tools" / "studio" / "requirements.txt"


def site_packages(env: Path) -> Path:
    """The site-packages folder of the virtual environment ``env`` (same Python as this one)."""
    relative = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    return env / relative


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=str(ROOT / ".venv"), help="the project's environment (make install)")
    parser.add_argument("--studio", default=str(ROOT / ".venv-studio"))
    args = parser.parse_args()
    project, studio = Path(args.venv).resolve(), Path(args.studio).resolve()
    if not (project / "bin" / "python").exists():
        print(f"{project} does not exist: run make install first", file=sys.stderr)
        return 2
    stamp = studio / ".gweta-studio"
    digest = hashlib.sha256(REQUIREMENTS.read_bytes() + str(project).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        print(f"{studio} already matches {REQUIREMENTS.relative_to(ROOT)}")
        return 0
    python = project / "bin" / "python"
    if not (studio / "bin" / "python").exists():
        # The same interpreter as the project's environment, so the packages it reaches there are built for it.
        base = subprocess.run([str(python), "-c", "import sys; print(sys._base_executable)"], check=True,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip
        subprocess.run([base, "-m", "venv", str(studio)], check=True)
    pip = [str(studio / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "--no-deps", "-r", str(REQUIREMENTS)], check=True)
    own = site_packages(studio)
    reached = site_packages(project)
    (own / "zz-gweta-project.pth").write_text(f"{ROOT}\nimport site; site.addsitedir({str(reached)!r})\n")
    stamp.write_text(digest)
    print(f"{studio} ready: {studio / 'bin' / 'langgraph'} dev")
    return 0


if __name__ == "__main__":
    sys.exit(main())
