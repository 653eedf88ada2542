"""What every response carries, and whose forwarded headers are believed: in one place.

Headers: a Content-Security-Policy that runs no inline script (the wiki needs no JavaScript; the
API docs load Swagger UI from its CDN and start it from ``/static/swagger-init.js``), no framing
(``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``), ``nosniff`` and a Referrer-Policy
that sends no referrer (a wiki URL names channels and facts; a source message's permalink is on
another site).

Proxies: ``X-Forwarded-Proto`` (the cookie's ``Secure`` flag) and ``X-Forwarded-For`` (the
client's address) are believed only from the addresses in ``TEAMLORE_TRUSTED_PROXIES``. The app
applies this itself, so it holds under any ASGI server; ``teamlore serve`` turns uvicorn's own
proxy handling off.
"""

from __future__ import annotations

import ipaddress

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from teamlore.errors import ConfigurationError

# The API docs page (Swagger UI), and where its script and styles come from.
DOCS_PATH = "/docs"
SWAGGER_CDN = "https://cdn.jsdelivr.net"

_COMMON = "base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    f"connect-src 'self'; {_COMMON}"
)
# Swagger UI sets style attributes from its script; still no inline or foreign script but its own.
DOCS_CSP = (
    f"default-src 'none'; script-src 'self' {SWAGGER_CDN}; style-src 'self' 'unsafe-inline' {SWAGGER_CDN}; "
    f"img-src 'self' data:; connect-src 'self'; {_COMMON}"
)


def security_headers(path: str) -> dict[str, str]:
    """The headers every response to ``path`` carries."""
    return {
        "Content-Security-Policy": DOCS_CSP if path == DOCS_PATH else CSP,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


class SecurityHeaders:
    """Adds ``security_headers`` to every HTTP response, streamed ones included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = [(k.lower().encode(), v.encode()) for k, v in security_headers(scope["path"]).items()]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in extra}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": kept + extra}
            await send(message)

        await self.app(scope, receive, sending)


def trusted_hosts(setting: str) -> list[str]:
    """``TEAMLORE_TRUSTED_PROXIES``: comma-separated addresses or networks, ``*`` for any; empty: none."""
    hosts = [part.strip() for part in setting.split(",") if part.strip()]
    for host in hosts:
        try:
            if host != "*":
                ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise ConfigurationError(
                f"TEAMLORE_TRUSTED_PROXIES: {host!r} is not an IP address or network (e.g. 10.0.0.0/8)"
            ) from None
    return hosts


def install(app: FastAPI, trusted_proxies: str) -> None:
    app.add_middleware(SecurityHeaders)
    # Added last, so it runs first: everything after it sees the client and scheme it decided.
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=trusted_hosts(trusted_proxies))
