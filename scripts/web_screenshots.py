"""Screenshots of the web app's main states, desktop (1280×800) and phone (390×844), light and dark, into
docs/screenshots/: ``desktop-*``, ``desktop-dark-*``, ``phone-*`` and ``phone-dark-*``.

Usage: .venv/bin/python scripts/web_screenshots.py [--data-dir DIR]

Runs the app under uvicorn on loopback and drives Debian's headless chromium through Playwright. Without
``--data-dir`` it ingests the sample corpus (``make demo``'s) into a temporary data dir first; a data dir given must
not be open in another process.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.async_api import Browser, Page, async_playwright, expect  # noqa: E402

from api.main import create_app  # noqa: E402
from api.settings import AuthSettings, Settings, WebSettings  # noqa: E402
from ingestion.pipeline import Ingestor, build_ingestion_tools  # noqa: E402
from tests.servers import LiveServer  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
QUESTION = "What is the minimum age of marriage?"
FOLLOW_UP = "How much deposit can a landlord ask for?"
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
expect.set_options(timeout=60_000)


async def asked(page: Page, question: str) -> None:
    await page.locator("#question").fill(question)
    await page.locator("#question").press("Enter")
    await expect(page.locator(".turn").last).to_have_attribute("aria-busy", "false")


async def settled(page: Page) -> None:
    """Wait for a smooth scroll to end and the sources to load."""
    await expect(page.locator(".source blockquote .muted")).to_have_count(0)
    last = -1.0
    for _ in range(50):
        now = float(await page.evaluate("window.scrollY"))
        if now == last:
            return
        last = now
        await page.wait_for_timeout(100)


async def shoot(browser: Browser, url: str, name: str, width: int, height: int, dark: bool = False) -> None:
    context = await browser.new_context(viewport={"width": width, "height": height},
                                        color_scheme="dark" if dark else "light", device_scale_factor=1)  # fmt: skip
    page = await context.new_page()
    await page.goto(url)
    await asked(page, QUESTION)
    await settled(page)
    await page.screenshot(path=str(OUT / f"{name}-answer.png"))
    await page.locator(".turn a.cite").first.click()
    await expect(page.locator("#reader .current mark").first).to_be_visible()
    await page.screenshot(path=str(OUT / f"{name}-reader.png"))
    await page.keyboard.press("Escape")
    await asked(page, FOLLOW_UP)  # the page scrolls to the new turn
    await settled(page)
    await page.screenshot(path=str(OUT / f"{name}-follow-up.png"))
    await asked(page, "What is the capital of France?")
    await expect(page.locator(".turn.abstained .searched")).to_be_visible()
    await settled(page)
    await page.screenshot(path=str(OUT / f"{name}-abstention.png"))
    await page.locator("#question").fill("Why? " * 420)
    await page.locator("#question").press("Enter")
    await expect(page.locator("#question-note")).not_to_be_empty()
    await page.screenshot(path=str(OUT / f"{name}-too-long.png"))
    await context.close()


async def ingested(data_dir: Path) -> Path:
    """``data_dir``, with the sample corpus ingested into it when it holds nothing yet."""
    settings = Settings(data_dir=data_dir)
    if not (data_dir / "milvus.db").exists():
        with ThreadPoolExecutor(settings.model_threads) as pool:
            tools = build_ingestion_tools(settings, pool)
            try:
                await Ingestor(tools).ingest(ROOT / "sample_corpus")
            finally:
                await tools.vectors.close()
    return data_dir


async def main(data_dir: Path) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        # A fresh app for each, so each is answered afresh rather than from the one before's QA memory.
        for device, (width, height) in SIZES.items():
            for dark in (False, True):
                with LiveServer(create_app(Settings(data_dir=data_dir))) as app:
                    await shoot(browser, app.url, f"{device}-dark" if dark else device, width, height, dark)
        secret = "screenshot-secret-long-enough-for-hs256"
        locked = Settings(data_dir=data_dir, auth=AuthSettings(enabled=True, jwt_secret=secret),
                          web=WebSettings(dev_signin_secret="d" * 32, firebase_api_key="demo-key"))  # fmt: skip
        with LiveServer(create_app(locked)) as app:
            context = await browser.new_context(viewport={"width": 1280, "height": 800})
            page = await context.new_page()
            await page.goto(app.url)
            await expect(page.locator("#signin")).to_be_visible()
            await page.screenshot(path=str(OUT / "desktop-sign-in.png"))
            await context.close()
        await browser.close()
    for path in sorted(OUT.glob("*.png")):
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="a data dir to use (default: the sample corpus, ingested anew)")
    given = parser.parse_args().data_dir
    with tempfile.TemporaryDirectory(prefix="gweta-screenshots-") as scratch:
        sys.exit(asyncio.run(main(asyncio.run(ingested(given or Path(scratch) / "data")))))
