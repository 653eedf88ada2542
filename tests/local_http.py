"""A real HTTP server on localhost for platform APIs (Discord REST and CDN, Microsoft Graph) in tests.

The test supplies a handler ``(request) -> Response``; the server records every request, so a test
can assert what the connector asked for (paths, query strings, headers) as well as what it did.
A ``bytes`` body is served as it is (a file), any other body as JSON.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


class LocalServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._request_handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(
                    self.command,
                    parts.path,
                    {k: v[-1] for k, v in parse_qs(parts.query).items()},
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                server.requests.append(request)
                response = server.handler(request)
                raw_bytes = isinstance(response.body, bytes)  # a file, served as it is
                if raw_bytes:
                    payload = response.body
                else:
                    payload = b"" if response.body is None else json.dumps(response.body).encode()
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                if "Content-Type" not in response.headers:
                    self.send_header(
                        "Content-Type", "application/octet-stream" if raw_bytes else "application/json"
                    )
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        return _Handler

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@contextmanager
def local_server(handler: Handler) -> Iterator[LocalServer]:
    with LocalServer(handler) as server:
        yield server
