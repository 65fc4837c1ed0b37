"""The web app: the page and its assets at ``/``, its public configuration, and the dev sign-in."""

from __future__ import annotations

import hmac
import logging
import time
from pathlib import Path

import jwt
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp

from api.auth import FailedAttempts
from api.deps import SettingsDep
from api.errors import ForbiddenError, NotFoundError
from api.schemas.errors import error_responses
from api.schemas.web import DevSignIn, FirebaseConfig, TokenGrant, WebConfig
from api.settings import Settings

log = logging.getLogger(__name__)
WEB_ROOT = Path(__file__).resolve().parent.parent / "web"
router = APIRouter(tags=["web"])


def content_security_policy(settings: Settings) -> str:
    """Scripts and styles from this origin only; fetches to this origin and, when set up, Firebase's REST API."""
    connect = ["'self'"]
    if settings.web.firebase_api_key:
        connect += [settings.web.firebase_auth_url.rstrip("/"), settings.web.firebase_token_url.rstrip("/")]
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {' '.join(connect)}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )


def static_files() -> ASGIApp:
    """The page's assets, gzipped for slow links (only here: the event streams stay uncompressed and unbuffered)."""
    return GZipMiddleware(StaticFiles(directory=WEB_ROOT, check_dir=True), minimum_size=500)


@router.get("/", include_in_schema=False)
async def index(settings: SettingsDep) -> Response:
    if not settings.web.enabled:
        raise NotFoundError("the web app is switched off (GWETA_WEB__ENABLED=false)")
    headers = {
        "Content-Security-Policy": content_security_policy(settings),
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-cache",
    }
    return FileResponse(WEB_ROOT / "index.html", media_type="text/html; charset=utf-8", headers=headers)


@router.get("/api/v1/web/config")
async def web_config(settings: SettingsDep) -> WebConfig:
    web = settings.web
    firebase = None
    if web.firebase_api_key:
        firebase = FirebaseConfig(
            api_key=web.firebase_api_key, auth_domain=web.firebase_auth_domain, project_id=web.firebase_project_id,
            auth_url=web.firebase_auth_url.rstrip("/"), token_url=web.firebase_token_url.rstrip("/"),
        )  # fmt: skip
    return WebConfig(
        auth_required=settings.auth.enabled, firebase=firebase,
        dev_signin=bool(web.dev_signin_secret.get_secret_value()), public_url=web.public_url,
    )  # fmt: skip


@router.post("/api/v1/web/dev-token", responses=error_responses(400, 403, 404, 413, 422, 429))
async def dev_token(request: Request, settings: SettingsDep, body: DevSignIn) -> TokenGrant:
    """A short-lived HS256 token for development sign-in; exists only while a dev secret is configured. A client
    that sent ``web.dev_signin_failures`` wrong passphrases lately is refused (429), right or wrong, for a while."""
    secret = settings.web.dev_signin_secret.get_secret_value()
    if not secret:
        raise NotFoundError("Not Found")
    failures: FailedAttempts = request.app.state.dev_signin_failures
    client = request.client.host if request.client else "unknown"
    failures.check(client)
    if not hmac.compare_digest(body.passphrase.encode(), secret.encode()):
        failures.failed(client)
        log.warning("dev sign-in refused for %r", body.name)
        raise ForbiddenError("that passphrase is not right")
    now = int(time.time())
    ttl = settings.web.dev_token_ttl_s
    claims: dict[str, object] = {"sub": f"dev:{body.name}", "aud": settings.auth.audience, "iat": now,
                                 "exp": now + ttl, "roles": []}  # fmt: skip
    if settings.auth.issuer:
        claims["iss"] = settings.auth.issuer
    token = jwt.encode(claims, settings.auth.jwt_secret.get_secret_value(), algorithm="HS256")
    log.info("dev sign-in for %r (%d s)", body.name, ttl)
    return TokenGrant(access_token=token, expires_in=ttl)
