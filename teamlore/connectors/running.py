"""What every platform's runner shares: required settings, a threaded HTTP server, durations."""

from __future__ import annotations

import logging
from collections.abc import Callable
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from teamlore.connectors.backfill import BackfillReport
from teamlore.errors import ConfigurationError

log = logging.getLogger(__name__)

Say = Callable[[str], None]  # one line for the person running the command


def require(value: str, variable: str, what: str) -> str:
    if not value.strip():
        raise ConfigurationError(f"set {variable} ({what}); see .env.example")
    return value.strip()


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the stdlib's name)
        log.debug("%s %s", self.address_string(), format % args)


def http_server(app: Callable, host: str, port: int) -> WSGIServer:
    """A threaded WSGI server (port 0: a free port); put a TLS proxy in front of it."""
    return make_server(host, port, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)


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
