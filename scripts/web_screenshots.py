"""Screenshots of the web app's main states, desktop and phone width, into docs/screenshots/.

Usage: .venv/bin/python scripts/web_screenshots.py [--data-dir .gweta-data]

Runs the app on the data dir (which should hold the sample corpus and the Marriages Act) under uvicorn on loopback
and drives Debian's headless chromium through Playwright. The data dir must not be open in another process.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.async_api import Browser, Page, async_playwright, expect  # noqa: E402

from api.main import create_app  # noqa: E402
from api.settings import AuthSettings, Settings, WebSettings  # noqa: E402
from tests.servers import LiveServer  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
QUESTION = "What is the minimum age of marriage?"
expect.set_options(timeout=60_000)


async def asked(page: Page, url: str, question: str) -> None:
    await page.goto(url)
    await page.locator("#question").fill(question)
    await page.locator("#question").press("Enter")
    await expect(page.locator(".turn .answer").last).to_have_attribute("data-state", "done")
    await expect(page.locator(".turn .source blockquote mark").first).to_be_visible()


async def shoot(browser: Browser, url: str, name: str, width: int, height: int, dark: bool = False) -> None:
    context = await browser.new_context(viewport={"width": width, "height": height},
                                        color_scheme="dark" if dark else "light", device_scale_factor=1)  # fmt: skip
    page = await context.new_page()
    await asked(page, url, QUESTION)
    await page.screenshot(path=str(OUT / f"{name}-answer.png"))
    await page.locator(".turn a.cite").first.click()
    await expect(page.locator("#reader .current mark")).to_be_visible()
    await page.screenshot(path=str(OUT / f"{name}-reader.png"))
    await page.keyboard.press("Escape")
    await page.locator("#question").fill("What is the capital of France?")
    await page.locator("#question").press("Enter")
    await expect(page.locator(".turn.abstained .searched")).to_be_visible()
    await page.locator(".turn.abstained").scroll_into_view_if_needed()
    await page.screenshot(path=str(OUT / f"{name}-abstention.png"))
    await context.close()


async def main(data_dir: Path) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        # A fresh app for each, so the second is answered afresh rather than from the first one's QA memory.
        with LiveServer(create_app(Settings(data_dir=data_dir))) as app:
            await shoot(browser, app.url, "desktop", 1280, 900)
        with LiveServer(create_app(Settings(data_dir=data_dir))) as app:
            await shoot(browser, app.url, "phone-dark", 390, 844, dark=True)
        secret = "screenshot-secret-long-enough-for-hs256"
        locked = Settings(data_dir=data_dir, auth=AuthSettings(enabled=True, jwt_secret=secret),
                          web=WebSettings(dev_signin_secret="d" * 32, firebase_api_key="demo-key"))  # fmt: skip
        with LiveServer(create_app(locked)) as app:
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
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
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".gweta-data")
    sys.exit(asyncio.run(main(parser.parse_args().data_dir)))
