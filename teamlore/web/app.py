"""The web app: the JSON API, the signed push, the wiki, health and metrics, over one Teamlore."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from teamlore import __version__
from teamlore.app import Teamlore
from teamlore.errors import BackendUnavailable
from teamlore.web import api, errors, pages, push, security, timelines
from teamlore.web.metrics import Metrics

log = logging.getLogger(__name__)


def create_app(lore: Teamlore, flush_pages: bool | None = None) -> FastAPI:
    """``flush_pages``: rewrite due wiki pages in a background thread every TEAMLORE_FLUSH_EVERY_S
    (default: when no Redis is configured; with Redis, ``teamlore beat`` asks the workers)."""
    background = (not lore.settings.redis_url) if flush_pages is None else flush_pages

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = threading.Event()
        flusher = None
        if background:
            flusher = threading.Thread(target=_flush_loop, args=(app, stop), name="wiki-flush", daemon=True)
            flusher.start()
        yield
        stop.set()
        if flusher is not None:
            flusher.join(timeout=10)

    app = FastAPI(
        title="Teamlore",
        version=__version__,
        summary="Cited, time-aware facts and a self-maintaining wiki from a team's chat.",
        lifespan=lifespan,
        # Our own docs page: FastAPI's starts Swagger UI with an inline script, which the CSP refuses.
        docs_url=None,
        redoc_url=None,
    )
    app.state.lore = lore
    app.state.write_lock = threading.RLock()
    app.state.metrics = metrics = Metrics(lore)
    metrics.install(app)
    errors.install(app)
    security.install(app, lore.settings.trusted_proxies)
    app.include_router(push.router)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(timelines.router)
    app.mount("/static", StaticFiles(directory=str(Path(__file__).parent / "static")), name="static")

    @app.get("/healthz", tags=["ops"], summary="Liveness and the store's health")
    async def healthz() -> Response:
        try:
            await run_in_threadpool(lore.stores.ping)
        except sqlite3.Error as exc:  # the error shape, as every other 503: {"error", "status"}
            raise BackendUnavailable(f"the store does not answer: {exc}") from exc
        return JSONResponse({"status": "ok"})

    @app.get(security.DOCS_PATH, include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(_DOCS_PAGE)

    @app.get("/metrics", tags=["ops"], summary="Prometheus metrics")
    async def prometheus(request: Request) -> Response:
        return await run_in_threadpool(metrics.render)

    return app


_SWAGGER = f"{security.SWAGGER_CDN}/npm/swagger-ui-dist@5"
_DOCS_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Teamlore API</title>
<link rel="stylesheet" href="{_SWAGGER}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{_SWAGGER}/swagger-ui-bundle.js"></script>
<script src="/static/swagger-init.js"></script>
</body>
</html>
"""


def _flush_loop(app: FastAPI, stop: threading.Event) -> None:
    lore: Teamlore = app.state.lore
    while not stop.wait(lore.settings.flush_every_s):
        try:
            with app.state.write_lock:
                lore.wiki.flush()
        except Exception:  # the loop must outlive one failed flush; the next tick retries
            log.exception("wiki flush failed")
