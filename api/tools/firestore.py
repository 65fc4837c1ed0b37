"""The one Firestore client the service opens, and what every Firestore-backed tool shares.

The checkpointer, the audit log and QA memory each keep their documents under their own top-level collection
(``<prefix>sessions``, ``<prefix>audit``, ``<prefix>qa_memory``). They read only documents whose ids they know or
that a query on their own fields finds: never ``list_documents``, ``collections`` or a bulk writer, which neither
the tests' emulator nor a least-privilege service account needs to offer.

Firestore refuses a document over 1 MiB, so values that may be larger (a session's checkpoint, a long answer) go
through :func:`pack_blob`: kept inline when small, otherwise split into chunk documents the head document names,
written before the head so a reader never meets a head whose chunks are missing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from google.cloud.firestore import AsyncClient, AsyncCollectionReference, AsyncDocumentReference

from api.errors import BackendError, ConfigError
from api.settings import FirestoreSettings

T = TypeVar("T")

INLINE_BYTES = 512 * 1024
"""A value up to this size stays inside its head document (the rest of the head is small)."""
CHUNK_BYTES = 900 * 1024
"""One chunk document's payload: under the 1 MiB document limit with room for its id and fields."""
BATCH_BYTES = 8 * 1024 * 1024
"""Payload per commit: Firestore takes up to 10 MiB and 500 writes in one."""


def open_firestore(cfg: FirestoreSettings) -> AsyncClient:
    """Build the async client for the configured project, service account or emulator."""
    from google.auth.credentials import AnonymousCredentials, Credentials

    credentials: Credentials | None = None
    if cfg.emulator_host:
        credentials = AnonymousCredentials()  # type: ignore[no-untyped-call]
    elif key := cfg.credentials_json.get_secret_value():
        import json

        from google.oauth2 import service_account

        try:
            credentials = service_account.Credentials.from_service_account_info(json.loads(key))  # type: ignore[no-untyped-call]
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"firestore.credentials_json is not a service account key ({exc})") from None
    client = AsyncClient(project=cfg.project or "gweta-emulator", credentials=credentials, database=cfg.database)
    if cfg.emulator_host:
        # The client only learns of an emulator from FIRESTORE_EMULATOR_HOST; setting the attribute it reads from
        # that variable keeps the host an explicit setting instead of a process-wide environment write.
        client._emulator_host = cfg.emulator_host
    return client


async def close_firestore(client: AsyncClient) -> None:
    """Close the client's gRPC channel, if it ever opened one (``AsyncClient.close`` leaves it open)."""
    if client._firestore_api_internal is not None:
        await client._transport.close()


def doc_id(*parts: str) -> str:
    """A document id made of ``parts``: readable, and free of the ``/`` Firestore reads as a path separator."""
    text = "|".join(quote(p, safe="") for p in parts)
    return f"~{text}" if not text or text.startswith("__") or text in (".", "..") else text


async def call(op: Awaitable[T], what: str, timeout_s: float) -> T:
    """Await one Firestore operation, turning a failure or timeout into a BackendError that names it."""
    try:
        return await asyncio.wait_for(op, timeout_s)
    except TimeoutError:
        raise BackendError(f"Firestore did not answer in time ({what})") from None
    except BackendError:
        raise
    except Exception as exc:  # the client raises google.api_core and grpc errors of many kinds
        raise BackendError(f"Firestore failed ({what}: {type(exc).__name__})") from exc


@dataclass(frozen=True, slots=True)
class Packed:
    """A value ready to store: ``fields`` go into the head document, ``chunks`` (id, bytes) beside it."""

    fields: dict[str, Any]
    chunks: list[tuple[str, bytes]]


def pack_blob(name: str, data: bytes) -> Packed:
    """Keep ``data`` inline under ``name`` when small, else split it into chunks with fresh, unique ids."""
    if len(data) <= INLINE_BYTES:
        return Packed({name: data}, [])
    write = uuid.uuid4().hex[:12]
    chunks = [
        (f"{name}-{write}-{i:05d}", data[at : at + CHUNK_BYTES])
        for i, at in enumerate(range(0, len(data), CHUNK_BYTES))
    ]
    return Packed({f"{name}_chunks": [cid for cid, _ in chunks], f"{name}_size": len(data)}, chunks)


def blob_chunk_ids(head: dict[str, Any], name: str) -> list[str]:
    return list(head.get(f"{name}_chunks") or [])


async def read_blob(head: dict[str, Any], name: str, chunks: AsyncCollectionReference, timeout_s: float) -> bytes:
    """The bytes :func:`pack_blob` stored under ``name``, reading its chunk documents by id when it was split."""
    if name in head:
        return bytes(head[name])
    ids = blob_chunk_ids(head, name)
    if not ids:
        raise BackendError(f"a stored document lacks its '{name}' value")
    refs = [chunks.document(cid) for cid in ids]
    client = chunks._client
    found: dict[str, bytes] = {}

    async def fetch() -> None:
        async for snap in client.get_all(refs):
            if snap.exists:
                found[snap.id] = bytes(snap.get("data"))

    await call(fetch(), f"read {name}", timeout_s)
    if len(found) != len(ids):
        raise BackendError(f"a stored value is missing {len(ids) - len(found)} of its {len(ids)} chunks")
    data = b"".join(found[cid] for cid in ids)
    if len(data) != int(head.get(f"{name}_size", len(data))):
        raise BackendError(f"a stored value's chunks do not add up to its size ({name})")
    return data


async def commit_all(
    client: AsyncClient,
    writes: Sequence[tuple[AsyncDocumentReference, dict[str, Any] | None]],
    timeout_s: float,
    what: str,
) -> None:
    """Set (or, with ``None``, delete) documents in as few commits as Firestore's limits allow, in order."""
    batch = client.batch()
    size = count = 0
    for ref, data in writes:
        weight = 1024 + sum(len(v) for v in (data or {}).values() if isinstance(v, bytes | str))
        if count and (count >= 450 or size + weight > BATCH_BYTES):
            await call(batch.commit(), what, timeout_s)
            batch, size, count = client.batch(), 0, 0
        if data is None:
            batch.delete(ref)
        else:
            batch.set(ref, data)
        size, count = size + weight, count + 1
    if count:
        await call(batch.commit(), what, timeout_s)


def chunk_writes(
    chunks: AsyncCollectionReference, packed: Iterable[Packed]
) -> list[tuple[AsyncDocumentReference, dict[str, Any] | None]]:
    return [(chunks.document(cid), {"data": data}) for p in packed for cid, data in p.chunks]
