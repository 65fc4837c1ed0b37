"""Whether another process holds a Milvus Lite folder: a check cheap enough to run before anything heavy loads."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from api.errors import NotReadyError


def held_lite_store_message(uri: str) -> str:
    return (
        f"cannot open the vector store at {uri}: another gweta process (a running 'gweta serve'?) is using this data "
        "directory; stop it or use another --data-dir"
    )


def refuse_held_lite_store(uri: str) -> None:
    """Fail at once when another process holds a Milvus Lite folder: opening it regardless starts an engine that
    gives up only after its start-up timeout, and logs a traceback on the way.

    Milvus Lite holds an advisory ``flock`` on ``<folder>/LOCK`` while it is open; this takes and drops it. Call it
    only before this process opens the folder itself (its own open holds the lock too)."""
    lock = Path(uri) / "LOCK"
    if "://" in uri or not lock.is_file():
        return
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise NotReadyError(held_lite_store_message(uri)) from None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
