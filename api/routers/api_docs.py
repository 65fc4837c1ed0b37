"""The interactive API docs, Swagger UI at ``/docs`` and ReDoc at ``/redoc``, served from this app, not a CDN.

Their scripts come from the npm packages ``swagger-ui-dist`` and ``redoc``, locked in ``tools/api-docs`` and
installed there by ``scripts/install.py`` and the Dockerfile, so the docs work off-line and on a closed network.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

log = logging.getLogger(__name__)
ASSETS = Path(__file__).resolve().parents[2] / "tools" / "api-docs" / "node_modules"
SWAGGER_DIR = ASSETS / "swagger-ui-dist"
REDOC_DIR = ASSETS / "redoc" / "bundles"
PREFIX = "/api-docs"
# ReDoc's bundle loads its maker's logo from a CDN for its attribution line; an empty image instead keeps the page
# to this server (the attribution's words stay).
CDN = re.compile(r"https://cdn\.redoc\.ly/[^\"'\s]+")
EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"
MISSING = (
    "<!doctype html><title>API docs not installed</title><p>The API docs' scripts are not installed on this server. "
    "Run <code>python scripts/install.py</code> (it runs <code>npm ci</code> in <code>tools/api-docs</code>). "
    'The schema itself is at <a href="{openapi_url}">{openapi_url}</a>.</p>'
)


def install_api_docs(app: FastAPI, openapi_url: str) -> None:
    """Serve Swagger UI at ``/docs`` and ReDoc at ``/redoc`` with their assets under ``/api-docs``."""
    installed = (SWAGGER_DIR / "swagger-ui-bundle.js").is_file() and (REDOC_DIR / "redoc.standalone.js").is_file()
    if installed:
        redoc_js = CDN.sub(EMPTY_IMAGE, (REDOC_DIR / "redoc.standalone.js").read_text(encoding="utf-8"))

        @app.get(f"{PREFIX}/redoc/redoc.standalone.js", include_in_schema=False)
        async def redoc_script() -> Response:
            return Response(redoc_js, media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})

        app.mount(f"{PREFIX}/swagger-ui", StaticFiles(directory=SWAGGER_DIR), name="swagger-ui")
    else:
        log.warning("the API docs' assets are missing from %s: /docs and /redoc say how to install them", ASSETS)
    title = f"{app.title} API"
    missing = HTMLResponse(MISSING.format(openapi_url=openapi_url), status_code=503)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        if not installed:
            return missing
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=title, oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{PREFIX}/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/swagger-ui/favicon-32x32.png",
        )  # fmt: skip

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        if not installed:
            return missing
        return get_redoc_html(
            openapi_url=openapi_url, title=title, redoc_js_url=f"{PREFIX}/redoc/redoc.standalone.js",
            redoc_favicon_url=f"{PREFIX}/swagger-ui/favicon-32x32.png", with_google_fonts=False,
        )  # fmt: skip
