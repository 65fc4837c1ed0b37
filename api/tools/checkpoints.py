"""Graph checkpoints per session: SQLite inside the data directory by default, Firestore in production."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver

from api.errors import ConfigError
from api.settings import Settings


@asynccontextmanager
async def open_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver[str]]:
    match settings.checkpointer.backend:
        case "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            settings.data_dir.mkdir(parents=True, exist_ok=True)
            async with AsyncSqliteSaver.from_conn_string(str(settings.data_dir / "checkpoints.sqlite")) as saver:
                yield saver
        case "firestore":
            raise ConfigError("checkpointer.backend=firestore is not available in this version yet; use sqlite")
