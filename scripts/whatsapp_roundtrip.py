"""One WhatsApp round trip on this machine: a signed webhook POST shaped like Meta's, answered through the query
graph, and the reply as a loopback Graph API receives it.

Usage: .venv/bin/python scripts/whatsapp_roundtrip.py ["question"] [--data-dir .gweta-data] [--public-url URL]

The data dir must hold an ingested corpus and not be open in another process (stop ``gweta serve`` first).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from api.main import create_app  # noqa: E402
from api.settings import Settings, WebSettings, WhatsAppSettings  # noqa: E402
from tests.servers import FakeGraphAPI, LiveServer  # noqa: E402

APP_SECRET = "roundtrip-app-secret"
PHONE_ID = "100000000000001"
SENDER = "263771234567"


async def roundtrip(question: str, data_dir: Path, public_url: str) -> int:
    graph = FakeGraphAPI(access_token="roundtrip-token", phone_number_id=PHONE_ID)
    with LiveServer(graph.app) as graph_server:
        whatsapp = WhatsAppSettings(
            verify_token="roundtrip-verify", app_secret=APP_SECRET, access_token="roundtrip-token",
            phone_number_id=PHONE_ID, graph_url=graph_server.url,
        )  # fmt: skip
        settings = Settings(data_dir=data_dir, whatsapp=whatsapp, web=WebSettings(public_url=public_url))
        with LiveServer(create_app(settings)) as app:
            message = {"from": SENDER, "id": f"wamid.roundtrip.{int(time.time())}", "timestamp": str(int(time.time())),
                       "type": "text", "text": {"body": question}}  # fmt: skip
            value = {"messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550001111",
                     "phone_number_id": PHONE_ID}, "contacts": [{"profile": {"name": "You"}, "wa_id": SENDER}],
                     "messages": [message]}  # fmt: skip
            change = {"field": "messages", "value": value}
            body = json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [change]}]})
            signature = "sha256=" + hmac.new(APP_SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()
            headers = {"content-type": "application/json", "x-hub-signature-256": signature}
            async with httpx.AsyncClient(base_url=app.url, timeout=30) as client:
                started = time.perf_counter()
                ack = await client.post("/api/v1/whatsapp/webhook", content=body, headers=headers)
                print(f"webhook POST (signed) -> HTTP {ack.status_code} {ack.text} in "
                      f"{(time.perf_counter() - started) * 1000:.0f} ms")  # fmt: skip
                for _ in range(1200):  # up to two minutes for the answer
                    if graph.texts():
                        break
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.5)
    print(f"Graph API received {len(graph.sent)} request(s) after {time.perf_counter() - started:.1f} s:")
    for sent in graph.sent:
        if sent.get("status") == "read":
            print(f"  read receipt + typing indicator for {sent['message_id']}")
        else:
            print(f"  text to {sent['to']} ({len(sent['text']['body'])} chars):")
            print("    " + sent["text"]["body"].replace("\n", "\n    "))
    return 0 if graph.texts() else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default="How much deposit can a landlord ask for?")
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".gweta-data")
    parser.add_argument("--public-url", default="http://127.0.0.1:8000", help="where reader links point ('' for none)")
    args = parser.parse_args()
    return asyncio.run(roundtrip(args.question, args.data_dir, args.public_url))


if __name__ == "__main__":
    sys.exit(main())
