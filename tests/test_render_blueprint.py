"""render.yaml selects every production backend by environment alone: the settings it sets validate at boot."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from api.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SECRETS = {
    "GWETA_VECTOR_STORE__URI": "https://in03-0123.serverless.gcp-us-west1.cloud.zilliz.com",
    "GWETA_OBJECT_STORE__ENDPOINT_URL": "https://0123.r2.cloudflarestorage.com",
    "GWETA_FIRESTORE__PROJECT": "gweta-prod",
    "GWETA_IDENTITY__PROJECT_ID": "gweta-prod",
    "GWETA_WHATSAPP__PHONE_NUMBER_ID": "106540352242922",
    "GWETA_AUTH__JWT_SECRET": "a-dashboard-secret-of-at-least-32-bytes",
    "GWETA_AUTH__JWT_PUBLIC_KEY": "",  # Firebase's published keys verify sign-in; no key of our own
    "GWETA_WEB__PUBLIC_URL": "https://gweta.example.org",
    "GWETA_STATE__URL": "redis://red-0123:6379",  # from the Key Value service's connectionString
}


def test_the_blueprint_selects_firestore_firebase_r2_and_a_milvus_server(monkeypatch: pytest.MonkeyPatch) -> None:
    blueprint = yaml.safe_load((ROOT / "render.yaml").read_text())
    (service,) = [s for s in blueprint["services"] if s["type"] == "web"]
    (keyvalue,) = [s for s in blueprint["services"] if s["type"] == "keyvalue"]
    (state_url,) = [v for v in service["envVars"] if v["key"] == "GWETA_STATE__URL"]
    assert state_url["fromService"] == {"type": "keyvalue", "name": keyvalue["name"], "property": "connectionString"}
    assert keyvalue["ipAllowList"] == []  # reachable on the private network only
    for var in service["envVars"]:
        value = var.get("value", SECRETS.get(var["key"], "set-in-the-dashboard"))
        monkeypatch.setenv(var["key"], str(value))
    settings = Settings()
    assert settings.milvus_uri == SECRETS["GWETA_VECTOR_STORE__URI"]
    assert (settings.object_store.backend, settings.object_store.endpoint_url) == ("s3", SECRETS[
        "GWETA_OBJECT_STORE__ENDPOINT_URL"])  # fmt: skip
    assert (settings.checkpointer.backend, settings.audit.backend, settings.memory.backend) == ("firestore",) * 3
    assert settings.firestore_settings.project == "gweta-prod" and not settings.firestore_settings.emulator_host
    assert settings.auth.enabled and settings.identity.provider == "firebase"
    assert settings.identity.expected_issuer == "https://securetoken.google.com/gweta-prod"
    assert settings.audit.store_question == "hash"
    assert settings.state.backend == "redis" and settings.state.url.get_secret_value() == SECRETS["GWETA_STATE__URL"]
