"""Screenshots of the documentation site: its home and configuration pages, into docs/screenshots/site-*.png.

Usage: .venv/bin/python scripts/docs_screenshots.py

Builds the site (``mkdocs build --strict`` into a temporary folder), serves it on loopback and drives Debian's
headless chromium through Playwright.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
PAGES = {
    "site-home.png": "index.html",
    "site-configuration.png": "configuration.html",
    "site-configuration-reference.png": "configuration.html#every-setting",
}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


async def shoot(base: str) -> None:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            for name, path in PAGES.items():
                await page.goto(f"{base}/{path}")
                await page.wait_for_load_state("networkidle")
                await page.wait_for_timeout(800)  # the header's title settles after a jump to an anchor
                await page.screenshot(path=str(OUT / name))
                print(OUT / name)
        finally:
            await browser.close()


def main() -> int:
    with tempfile.TemporaryDirectory() as site:
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", site]
        subprocess.run(mkdocs, cwd=ROOT, env=env, check=True)
        handler = functools.partial(SimpleHTTPRequestHandler, directory=site)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            asyncio.run(shoot(f"http://127.0.0.1:{server.server_address[1]}"))
        finally:
            server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
