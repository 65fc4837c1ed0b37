"""Blob storage for sources, parsed documents, chunks and index artifacts.

The embedded default is a folder; production is any S3-compatible store (Cloudflare R2) through boto3. Both take
keys like ``docs/sample-act-2024-3.json`` and write atomically, so a reader never sees half an object.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import tempfile
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from api.errors import BackendError, BadRequestError
from api.settings import ObjectStoreSettings

T = TypeVar("T")


class ObjectStore(Protocol):
    async def put_bytes(self, key: str, data: bytes) -> None: ...
    async def get_bytes(self, key: str) -> bytes | None: ...
    async def delete(self, key: str) -> None: ...
    async def list_keys(self, prefix: str) -> list[str]: ...


def _check_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise BadRequestError(f"invalid object key {key!r}")
    return key


class LocalObjectStore:
    """A folder on disk with the same semantics as a bucket."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / _check_key(key)

    def _put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def _list(self, prefix: str) -> list[str]:
        base = self.root
        keys = (p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
        return sorted(k for k in keys if k.startswith(prefix) and not k.rsplit("/", 1)[-1].startswith(".tmp-"))

    async def put_bytes(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._put, key, data)

    async def get_bytes(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._get, key)

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, True)

    async def list_keys(self, prefix: str) -> list[str]:
        return await asyncio.to_thread(self._list, prefix)


class S3ObjectStore:
    """Any S3-compatible bucket (Cloudflare R2 in production). boto3 is sync, so every call runs in a thread of the
    store's own pool: a slow store then holds only these threads, not the event loop's default executor that BM25,
    Milvus and the audit log share (on 2 cores that one has 6 threads, and 3-second reads once queued every search
    behind them: `benchmarks/results/load_fault_store.md`)."""

    def __init__(self, cfg: ObjectStoreSettings) -> None:
        import boto3
        from botocore.config import Config

        self._pool = ThreadPoolExecutor(max_workers=cfg.threads, thread_name_prefix="object-store")
        weakref.finalize(self, self._pool.shutdown, wait=False)
        self.bucket = cfg.bucket
        self.prefix = cfg.prefix
        self.client = boto3.client(
            "s3",
            endpoint_url=cfg.endpoint_url or None,
            region_name=cfg.region,
            aws_access_key_id=cfg.access_key_id.get_secret_value() or None,
            aws_secret_access_key=cfg.secret_access_key.get_secret_value() or None,
            config=Config(
                retries={"max_attempts": cfg.attempts, "mode": "standard"},
                connect_timeout=cfg.connect_timeout_s,
                read_timeout=cfg.read_timeout_s,
                max_pool_connections=cfg.threads,
            ),
        )

    def _key(self, key: str) -> str:
        return self.prefix + _check_key(key)

    def _call(self, method: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise BackendError(f"object store {method} failed: {exc.response.get('Error', {}).get('Code')}") from exc
        except BotoCoreError as exc:
            raise BackendError(f"object store {method} failed: {type(exc).__name__}") from exc

    async def _in_pool(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    async def put_bytes(self, key: str, data: bytes) -> None:
        await self._in_pool(self._call, "put_object", Key=self._key(key), Body=data)

    async def get_bytes(self, key: str) -> bytes | None:
        def get() -> bytes | None:
            resp = self._call("get_object", Key=self._key(key))
            return None if resp is None else bytes(resp["Body"].read())

        return await self._in_pool(get)

    async def delete(self, key: str) -> None:
        await self._in_pool(self._call, "delete_object", Key=self._key(key))

    async def list_keys(self, prefix: str) -> list[str]:
        def list_all() -> list[str]:
            keys: list[str] = []
            token: dict[str, str] = {}
            while True:
                resp = self._call("list_objects_v2", Prefix=self.prefix + prefix, **token)
                keys += [o["Key"][len(self.prefix) :] for o in resp.get("Contents", [])]
                if not resp.get("IsTruncated"):
                    return sorted(keys)
                token = {"ContinuationToken": resp["NextContinuationToken"]}

        return await self._in_pool(list_all)


async def put_json(store: ObjectStore, key: str, value: Any) -> None:
    await store.put_bytes(key, json.dumps(value, ensure_ascii=False, sort_keys=True).encode())


async def get_json(store: ObjectStore, key: str) -> Any:
    data = await store.get_bytes(key)
    return None if data is None else json.loads(data)


async def get_many_json(store: ObjectStore, keys: Sequence[str], concurrency: int = 16) -> list[Any]:
    sem = asyncio.Semaphore(concurrency)

    async def one(key: str) -> Any:
        async with sem:
            return await get_json(store, key)

    return list(await asyncio.gather(*(one(k) for k in keys)))


def local_path(store: ObjectStore, key: str) -> Path | None:
    """Where ``key``'s object lies on this machine when the store is a folder here (so it can be memory-mapped in
    place rather than read into memory); None for a remote store."""
    return store._path(key) if isinstance(store, LocalObjectStore) else None


def build_object_store(cfg: ObjectStoreSettings, data_dir: Path) -> ObjectStore:
    match cfg.backend:
        case "local":
            return LocalObjectStore(data_dir / "objects")
        case "s3":
            return S3ObjectStore(cfg)
