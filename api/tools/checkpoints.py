"""Graph checkpoints per session: SQLite inside the data directory by default, Firestore in production."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from langgraph.checkpoint.base import BaseCheckpointSaver

from api.errors import ConfigError
from api.settings import Settings

if TYPE_CHECKING:
    from google.cloud.firestore import AsyncClient


@asynccontextmanager
async def open_checkpointer(
    settings: Settings, firestore: AsyncClient | None = None
) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The configured checkpointer; the Firestore one uses ``firestore``, the service's one client."""
    match settings.checkpointer.backend:
        case "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            settings.data_dir.mkdir(parents=True, exist_ok=True)
            async with AsyncSqliteSaver.from_conn_string(str(settings.data_dir / "checkpoints.sqlite")) as saver:
                # The tables and WAL mode are made now, not at the first question: the serving process opens this
                # before its graph workers start, and workers that each made them at the same first moment had one
                # fail with "database is locked" (a fresh file, two answers at once).
                await saver.setup()
                yield saver
        case "firestore":
            from api.tools.firestore_checkpoints import FirestoreSaver

            if firestore is None:
                raise ConfigError("checkpointer.backend=firestore needs the service's Firestore client")
            cfg = settings.firestore_settings
            yield FirestoreSaver(firestore, cfg.collection_prefix, cfg.timeout_s)
