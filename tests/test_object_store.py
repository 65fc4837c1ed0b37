"""One contract for every ObjectStore backend: the local folder and a real S3-compatible server on loopback."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer
from pydantic import SecretStr

from api.errors import BadRequestError
from api.settings import ObjectStoreSettings
from api.tools.object_store import LocalObjectStore, ObjectStore, S3ObjectStore, get_json, put_json


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(params=["local", "s3"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "local":
        yield LocalObjectStore(tmp_path / "objects")
        return
    endpoint = request.getfixturevalue("s3_endpoint")
    bucket = f"b-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    creds = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds).create_bucket(Bucket=bucket)
    cfg = ObjectStoreSettings(
        backend="s3", bucket=bucket, endpoint_url=endpoint, region="us-east-1", prefix="gweta/",
        access_key_id=SecretStr("test"), secret_access_key=SecretStr("test"),
    )  # fmt: skip
    yield S3ObjectStore(cfg)


async def test_put_get_overwrite_delete(store: ObjectStore) -> None:
    assert await store.get_bytes("docs/a.json") is None
    await store.put_bytes("docs/a.json", b"one")
    await store.put_bytes("docs/a.json", b"two")
    assert await store.get_bytes("docs/a.json") == b"two"
    await store.delete("docs/a.json")
    assert await store.get_bytes("docs/a.json") is None
    await store.delete("docs/a.json")  # deleting what is gone is not an error


async def test_list_keys_by_prefix_in_order(store: ObjectStore) -> None:
    for key in ("chunks/b.json", "chunks/a.json", "docs/a.json", "chunks-other/x.json"):
        await store.put_bytes(key, b"{}")
    assert await store.list_keys("chunks/") == ["chunks/a.json", "chunks/b.json"]
    assert len(await store.list_keys("")) == 4


async def test_json_round_trip_keeps_unicode(store: ObjectStore) -> None:
    await put_json(store, "indexes/m.json", {"title": "Zimbabwe’s Act — s. 12(3)(a)"})
    assert await get_json(store, "indexes/m.json") == {"title": "Zimbabwe’s Act — s. 12(3)(a)"}


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "a//b", "./a"])
async def test_unsafe_keys_are_refused(store: ObjectStore, key: str) -> None:
    with pytest.raises(BadRequestError):
        await store.put_bytes(key, b"x")
