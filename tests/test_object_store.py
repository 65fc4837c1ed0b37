"""One contract for every ObjectStore backend: the local folder and a real S3-compatible server on loopback."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from api.errors import BadRequestError
from api.tools.object_store import LocalObjectStore, ObjectStore, S3ObjectStore, get_json, put_json
from tests.servers import moto_s3, s3_bucket


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture(params=["local", "s3"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "local":
        yield LocalObjectStore(tmp_path / "objects")
        return
    endpoint = request.getfixturevalue("s3_endpoint")
    bucket = f"b-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    yield S3ObjectStore(s3_bucket(endpoint, bucket, prefix="gweta/"))


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
