"""The web app in a real headless Chromium (Debian's, driven by Playwright) against our app under uvicorn."""

import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from playwright.async_api import Browser, BrowserContext, Page, Request, async_playwright, expect

from api.main import create_app
from api.settings import AuthSettings, LLMSettings, RetrievalSettings, Settings, WebSettings
from tests.servers import FakeFirebaseAuth, FakeOpenAI, LiveServer, Reply

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
SECRET = "test-secret-that-is-long-enough-for-hs256"
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)  # the machine under test may be slow; waiting is not what is tested


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    assert shutil.which(CHROMIUM), "Debian's chromium is missing: make install puts it in (apt-get install chromium)"
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


@pytest.fixture(scope="module")
def demo_data_dir(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's own data: the sample corpus `make demo` ingests (its Marriage Act answers the README's question)."""
    target = tmp_path_factory.mktemp("web") / "data"
    shutil.copytree(sample_data_dir, target, ignore=shutil.ignore_patterns("LOCK"))
    return target


@pytest.fixture(scope="module")
def site(demo_data_dir: Path) -> Any:
    with LiveServer(create_app(Settings(data_dir=demo_data_dir))) as server:
        yield server


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(TIMEOUT_MS)
    yield ctx
    await ctx.close()


def stream_bodies(page: Page) -> list[dict[str, Any]]:
    """The JSON body of every query the page sends (collected as it sends them)."""
    bodies: list[dict[str, Any]] = []

    def seen(request: Request) -> None:
        if request.url.endswith("/api/v1/query/stream"):
            bodies.append({**json.loads(request.post_data or "{}"), "_auth": request.headers.get("authorization")})

    page.on("request", seen)
    return bodies


async def ask(page: Page, question: str) -> None:
    await page.locator("#question").fill(question)
    await page.locator("#question").press("Enter")


async def test_ask_cite_read_follow_up_copy_and_start_again(site: LiveServer, context: BrowserContext) -> None:
    await context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = await context.new_page()
    bodies = stream_bodies(page)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    response = await page.goto(site.url)
    assert response is not None and "script-src 'self'" in response.headers["content-security-policy"]
    await ask(page, "What is the minimum age of marriage?")
    turn = page.locator(".turn").nth(0)
    await expect(turn.locator(".answer")).to_have_attribute("data-state", "done")
    await expect(turn.locator(".status")).to_be_hidden()
    answer = await turn.locator(".answer").inner_text()
    assert "eighteen" in answer and "[1]" in answer

    # The sources panel: the cited provision with the quoted words highlighted inside its text.
    source = turn.locator(".source").first
    await expect(source.locator(".source-title")).to_contain_text("Marriage Act")
    await expect(source.locator(".source-section")).to_contain_text("section 3")
    await expect(source.locator("blockquote mark")).to_have_count(1)
    assert await source.locator("blockquote").get_attribute("data-quote-found") == "true"

    # [1] is a link that opens section 3 in the reader, with the quote highlighted and its neighbours around it.
    await turn.locator("a.cite").first.click()
    reader = page.locator("#reader")
    await expect(reader).to_be_visible()
    await expect(reader.locator("#reader-title")).to_contain_text("Marriage Act")
    current = reader.locator(".reader-section.current")
    await expect(current.locator("h3")).to_contain_text("section 3")
    await expect(current.locator("h3")).to_contain_text("Minimum age of marriage")
    mark = current.locator(".provision-text mark")
    await expect(mark).to_have_count(1)
    marked = await mark.inner_text()
    full = await current.locator(".provision-text").inner_text()
    assert len(marked.split()) >= 5 and marked in full and "eighteen" in marked
    assert await reader.locator(".reader-section.previous h3").inner_text() == "section 2 — Interpretation"
    await expect(reader.locator(".reader-section.next h3")).to_contain_text("section 4")
    await page.locator("#reader-next").click()
    await expect(current.locator("h3")).to_contain_text("section 4")
    await page.keyboard.press("Escape")
    await expect(reader).to_be_hidden()

    # Copy answer with its sources.
    await turn.locator("button.copy").click()
    await expect(turn.locator(".copied")).to_have_text("Copied")
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(answer.strip()[:40]) and "Sources\n[1] Marriage Act" in copied and "“" in copied

    # A follow-up goes to the same session; a new conversation starts another.
    await ask(page, "And what is the penalty for arranging a child marriage?")
    await expect(page.locator(".turn")).to_have_count(2)
    await expect(page.locator(".turn").nth(1).locator(".answer")).to_have_attribute("data-state", "done")
    assert bodies[0]["session_id"] == bodies[1]["session_id"] and bodies[0]["session_id"].startswith("web-")
    await page.locator("#new-conversation").click()
    await expect(page.locator(".turn")).to_have_count(0)
    await expect(page.locator("#history")).to_be_visible()
    await ask(page, "How long is maternity leave?")
    await expect(page.locator(".turn .answer")).to_have_attribute("data-state", "done")
    assert bodies[2]["session_id"] != bodies[0]["session_id"]
    # The earlier conversation can be reopened from this browser's history, and continues its session.
    await page.locator("#history summary").click()
    await page.locator("#history-list button", has_text="minimum age of marriage").click()
    await expect(page.locator(".turn")).to_have_count(2)
    await expect(page.locator(".turn").nth(0).locator("a.cite").first).to_be_visible()
    assert errors == []  # no script errors, no Content-Security-Policy violations


async def test_a_reader_link_opens_the_provision(site: LiveServer, context: BrowserContext) -> None:
    """The links WhatsApp replies carry: ?doc=<doc_key>&provision=<fragment>."""
    page = await context.new_page()
    await page.goto(f"{site.url}/?doc=sample/act/2022/9&provision=s3(1)")
    await expect(page.locator("#reader")).to_be_visible()
    await expect(page.locator("#reader .current h3")).to_have_text("section 3 — Minimum age of marriage")
    await expect(page.locator("#reader .previous h3")).to_contain_text("section 2")
    await page.goto(f"{site.url}/?doc=../../etc/passwd&provision=s1")
    await expect(page.locator("#reader .error-text")).to_have_text("This provision is not available to you.")


async def test_the_page_and_its_assets_are_served_small_and_locked_down(site: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=site.url, timeout=30) as client:
        page = await client.get("/")
        script = await client.get("/static/app.js", headers={"accept-encoding": "gzip"})
        config = (await client.get("/api/v1/web/config")).json()
        sneaky = await client.get("/static/%2e%2e/routers/web.py")
        dev = await client.post("/api/v1/web/dev-token", json={"name": "x", "passphrase": "y"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert script.headers["content-encoding"] == "gzip" and "fetch(" in script.text
    assert config == {"auth_required": False, "firebase": None, "dev_signin": False, "public_url": ""}
    assert sneaky.status_code == 404 and "WEB_ROOT" not in sneaky.text
    assert dev.status_code == 404  # no dev secret configured: the dev sign-in does not exist


def test_a_dev_sign_in_secret_without_an_hs256_secret_fails_at_boot() -> None:
    with pytest.raises(ValueError, match="GWETA_AUTH__JWT_SECRET"):
        Settings(web=WebSettings(dev_signin_secret="dev-pass"))


async def test_sentences_arrive_one_by_one_once_checked(private_data_dir: Path, context: BrowserContext) -> None:
    first = ["A landlord ", "may not ask ", "for more than ", "two months' rent ", "as a deposit [1", "]. "]
    false = ["The landlord ", "may keep ", "the deposit ", "for 12 months [1]. "]
    last = ["So the deposit ", "cannot exceed ", "two months' rent [1]."]
    upstream = FakeOpenAI([Reply(first + false + last, delay_s=0.4)])
    with LiveServer(upstream.app) as llm:
        llm_cfg = LLMSettings(backend="openai", base_url=f"{llm.url}/v1", api_key="sk-test", model="m-1")
        with LiveServer(create_app(Settings(data_dir=private_data_dir, llm=llm_cfg))) as app:
            page = await context.new_page()
            await page.goto(app.url)
            await ask(page, "How much deposit can a landlord ask for?")
            answer = page.locator(".turn .answer")
            status = page.locator(".turn .status-text")
            seen: list[str] = []
            statuses: set[str] = set()
            deadline = time.monotonic() + 30
            while await answer.get_attribute("data-state") != "done":
                assert time.monotonic() < deadline
                seen.append(await answer.inner_text())
                statuses.add(await status.inner_text())
                await page.wait_for_timeout(50)
            final = await answer.inner_text()
    # The first sentence was on screen alone, once checked, before the last was written; the false one never was.
    partial = {text for text in seen if text and text != final}
    assert final == "".join(first + last) and "".join(first).strip() in partial
    assert all(final.startswith(text) for text in partial)
    assert not any("12 months" in text for text in [*seen, final])
    assert "Checking…" in statuses  # the page says a sentence is being checked while it is held
    await expect(page.locator(".turn a.cite")).to_have_text(["[1]", "[1]"])


async def test_an_abstention_says_what_was_searched(site: LiveServer, context: BrowserContext) -> None:
    page = await context.new_page()
    await page.goto(site.url)
    await ask(page, "What is the capital of France?")
    turn = page.locator(".turn")
    await expect(turn).to_have_class("turn abstained")
    await expect(turn.locator(".searched")).to_contain_text("Not found in the sources")
    await expect(turn.locator(".searched")).to_contain_text("What I searched for")
    await expect(turn.locator(".status")).to_be_hidden()
    await expect(turn.locator(".source")).to_have_count(0)


async def test_a_server_error_mid_stream_leaves_no_spinner(private_data_dir: Path, context: BrowserContext) -> None:
    settings = Settings(data_dir=private_data_dir, retrieval=RetrievalSettings(timeout_s=1e-9))
    with LiveServer(create_app(settings)) as app:
        page = await context.new_page()
        await page.goto(app.url)
        await ask(page, "How much deposit can a landlord ask for?")
        turn = page.locator(".turn")
        await expect(turn).to_have_class("turn failed")
        await expect(turn.locator(".error-text")).to_contain_text("Something went wrong while answering")
        await expect(turn.locator(".status")).to_be_hidden()
        await expect(page.locator(".spinner:visible")).to_have_count(0)
        await expect(page.locator("#send")).to_be_enabled()
        await expect(turn.locator("button.retry")).to_be_visible()
        assert "Traceback" not in await page.content()


async def test_phone_width_dark_mode_and_keyboard_only(site: LiveServer, browser: Browser) -> None:
    ctx = await browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark", is_mobile=True)
    ctx.set_default_timeout(TIMEOUT_MS)
    page = await ctx.new_page()
    await page.goto(site.url)
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(20, 23, 26)"  # the dark palette
    await expect(page.locator("#question")).to_be_focused()
    await page.keyboard.type("How much deposit can a landlord ask for?")
    await page.keyboard.press("Enter")
    await expect(page.locator(".turn .answer")).to_have_attribute("data-state", "done")
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    await page.locator(".turn a.cite").first.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#reader")).to_be_visible()
    await expect(page.locator("#reader .current mark")).to_have_count(1)
    box = await page.locator("#reader").bounding_box()
    assert box is not None and box["width"] <= 390
    await page.keyboard.press("Escape")
    await expect(page.locator("#reader")).to_be_hidden()
    await ctx.close()


def hs256(email: str) -> str:
    claims = {"sub": email, "aud": "gweta", "exp": int(time.time()) + 600}
    return jwt.encode(claims, SECRET, algorithm="HS256")


async def test_sign_in_is_required_and_the_token_never_enters_a_url(
    private_data_dir: Path, context: BrowserContext
) -> None:
    firebase = FakeFirebaseAuth("web-api-key", {"ama@example.org": "correct horse"}, hs256)
    with LiveServer(firebase.app) as auth_server:
        web = WebSettings(firebase_api_key="web-api-key", firebase_project_id="gweta-test",
                          firebase_auth_url=auth_server.url, firebase_token_url=auth_server.url,
                          dev_signin_secret="dev-pass")  # fmt: skip
        auth = AuthSettings(enabled=True, jwt_secret=SECRET)
        with LiveServer(create_app(Settings(data_dir=private_data_dir, auth=auth, web=web))) as app:
            page = await context.new_page()
            urls: list[str] = []
            page.on("request", lambda r: urls.append(r.url))
            bodies = stream_bodies(page)
            await page.goto(app.url)
            dialog = page.locator("#signin")
            await expect(dialog).to_be_visible()  # asked at once
            await dialog.get_by_role("button", name="Not now").click()
            await ask(page, "How long is maternity leave?")
            await expect(dialog).to_be_visible()  # and again before asking
            await expect(page.locator(".turn")).to_have_count(0)

            # Firebase email sign-in (its REST API, here on loopback): a wrong password, then the right one.
            await page.locator("#fb-email").fill("ama@example.org")
            await page.locator("#fb-password").fill("wrong")
            await dialog.get_by_role("button", name="Sign in", exact=True).click()
            await expect(page.locator("#signin-error")).to_contain_text("do not match")
            await page.locator("#fb-password").fill("correct horse")
            await dialog.get_by_role("button", name="Sign in", exact=True).click()
            await expect(dialog).to_be_hidden()
            await expect(page.locator("#who")).to_have_text("Signed in as ama@example.org")
            await ask(page, "How long is maternity leave?")
            await expect(page.locator(".turn .answer")).to_have_attribute("data-state", "done")
            assert "ninety-eight days" in await page.locator(".turn .answer").inner_text()
            await expect(page.locator(".turn .source blockquote mark").first).to_be_visible()  # documents use the token

            # Signing out and in with the dev sign-in works too.
            await page.locator("#sign-out").click()
            await page.locator("#dev-name").fill("tester")
            await page.locator("#dev-passphrase").fill("dev-pass")
            await page.get_by_role("button", name="Sign in (development)").click()
            await expect(page.locator("#who")).to_have_text("Signed in as tester")
            await ask(page, "How much deposit can a landlord ask for?")
            await expect(page.locator(".turn").nth(1).locator(".answer")).to_have_attribute("data-state", "done")
    assert firebase.sign_ins == ["ama@example.org"]
    tokens = [b["_auth"] for b in bodies]
    assert len(tokens) == 2 and all(t and t.startswith("Bearer ey") for t in tokens) and tokens[0] != tokens[1]
    assert jwt.decode(tokens[1].split()[1], SECRET, algorithms=["HS256"], audience="gweta")["sub"] == "dev:tester"
    assert not any("access_token" in u or t.split()[1] in u for u in urls for t in tokens)


async def test_an_expired_token_leads_back_to_sign_in_without_a_spinner(
    private_data_dir: Path, context: BrowserContext
) -> None:
    web = WebSettings(dev_signin_secret="dev-pass", dev_token_ttl_s=60)
    auth = AuthSettings(enabled=True, jwt_secret=SECRET, leeway_s=0)
    with LiveServer(create_app(Settings(data_dir=private_data_dir, auth=auth, web=web))) as app:
        page = await context.new_page()
        await page.goto(app.url)
        expired = jwt.encode({"sub": "x", "aud": "gweta", "exp": int(time.time()) - 5}, SECRET, algorithm="HS256")
        saved = {"token": expired, "name": "x", "kind": "dev"}
        await page.evaluate("t => sessionStorage.setItem('gweta.token', JSON.stringify(t))", saved)
        await page.reload()
        await ask(page, "How long is maternity leave?")
        await expect(page.locator(".turn")).to_have_class("turn failed")
        await expect(page.locator(".turn .error-text")).to_contain_text("sign in")
        await expect(page.locator("#signin")).to_be_visible()
        await expect(page.locator(".turn .status")).to_be_hidden()
