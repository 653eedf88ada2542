"""Prometheus metrics for one app: requests by route and status, latency, pushed events.

Each app has its own registry (several apps can live in one process, as in tests).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from teamlore.app import Teamlore


class Metrics:
    def __init__(self, lore: Teamlore) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "teamlore_http_requests",
            "HTTP requests by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "teamlore_http_request_seconds",
            "Time to answer an HTTP request, by route template.",
            ["route"],
            registry=self.registry,
        )
        self.pushed = Counter(
            "teamlore_push_events",
            "Events received on the signed push endpoint, by result.",
            ["result"],
            registry=self.registry,
        )
        dirty = Gauge("teamlore_dirty_pages", "Wiki pages waiting for a rewrite.", registry=self.registry)
        dirty.set_function(lambda: len(lore.wiki.dirty.pending()))

    def render(self) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

    def install(self, app: FastAPI) -> None:
        @app.middleware("http")
        async def measure(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            started = time.perf_counter()
            response = await call_next(request)
            route = getattr(request.scope.get("route"), "path", "unmatched")
            self.requests.labels(request.method, route, str(response.status_code)).inc()
            self.latency.labels(route).observe(time.perf_counter() - started)
            return response
