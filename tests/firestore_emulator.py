"""The Firestore emulator the tests talk to: npm's ``@firestore-emulator/server`` on 127.0.0.1, one per session.

It speaks Firestore's real gRPC API for get/set/query/commit; ``list_documents``, ``collections`` and bulk writes
are not implemented there (and our code does not use them). Installed by ``make install`` (``npm ci`` in
``tools/firestore-emulator``). Each test gets its own collection prefix, so tests never see each other's documents.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from api.settings import FirestoreSettings

ROOT = Path(__file__).resolve().parent.parent
EMULATOR = ROOT / "tools" / "firestore-emulator"


@contextmanager
def firestore_emulator() -> Iterator[str]:
    """Start the emulator on a free loopback port; yield its ``host:port``; stop it afterwards."""
    node = shutil.which("node")
    assert node, "the Firestore tests need Node.js (node) on PATH"
    assert (EMULATOR / "node_modules" / "@firestore-emulator" / "server").is_dir(), (
        "the Firestore emulator is not installed: run `make install` (npm ci in tools/firestore-emulator)"
    )
    proc = subprocess.Popen([node, str(EMULATOR / "serve.js"), "0"], cwd=EMULATOR, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening "), f"the Firestore emulator did not start: {line!r}"
        yield f"127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def emulator_settings(host: str) -> FirestoreSettings:
    """Settings for one test: the emulator, with a collection prefix no other test uses."""
    return FirestoreSettings(project="gweta-test", emulator_host=host, collection_prefix=f"t{uuid.uuid4().hex[:10]}_")
