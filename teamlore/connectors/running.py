"""What every platform's runner shares: required settings, an ASGI server (uvicorn), durations."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from teamlore.connectors.backfill import BackfillReport
from teamlore.errors import ConfigurationError

log = logging.getLogger(__name__)

Say = Callable[[str], None]  # one line for the person running the command


def require(value: str, variable: str, what: str) -> str:
    if not value.strip():
        raise ConfigurationError(f"set {variable} ({what}); see .env.example")
    return value.strip()


class AsgiServer:
    """uvicorn serving an ASGI app (port 0: a free port); put a TLS proxy in front of it."""

    def __init__(self, app: Callable[..., Any], host: str, port: int) -> None:
        config = uvicorn.Config(
            app, host=host, port=port, lifespan="off", ws="none", access_log=False, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C, SIGTERM)."""
        self._server.run()

    def start(self, timeout_s: float = 10.0) -> AsgiServer:
        """Serve in a background thread; returns once the port is bound."""
        self._thread = threading.Thread(target=self._server.run, name="teamlore-asgi", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise OSError("the HTTP server did not start (is the port in use?)")
            time.sleep(0.01)
        return self

    @property
    def port(self) -> int:
        return int(self._server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)


def duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if minutes < 120:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {rest:02d} min"
    return f"{hours / 24:.1f} days"


def say_backfill_end(say: Say, channel_name: str, report: BackfillReport, noun: str) -> None:
    """The last line of a backfill, the same for every platform."""
    state = "done" if report.done else "stopped; run it again to resume"
    say(
        f"#{channel_name}: {state}: {report.fetched} {noun}(s) this run, {report.total_fetched} in all, "
        f"{report.rate_limited} rate-limit wait(s)"
    )
