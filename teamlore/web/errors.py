"""Teamlore's errors as HTTP answers, in one place: a status code and a one-line message.

API paths answer JSON ``{"error": ..., "status": ...}``; wiki pages answer an HTML page, and a
wiki request without a valid login goes to the login form instead of a bare 401.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response

from teamlore.errors import (
    BackendUnavailable,
    ConfigurationError,
    Forbidden,
    InvalidEvent,
    InvalidInput,
    NotFound,
    Replayed,
    TeamloreError,
    TooLarge,
    Unauthorized,
)

# First match wins: subclasses before their base.
STATUS: tuple[tuple[type[TeamloreError], int], ...] = (
    (Unauthorized, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Replayed, 409),
    (TooLarge, 413),
    (InvalidEvent, 422),
    (InvalidInput, 400),
    (ConfigurationError, 503),
    (BackendUnavailable, 503),
)


def status_of(exc: TeamloreError) -> int:
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 500)


def is_wiki(request: Request) -> bool:
    path = request.url.path
    return not (path.startswith("/api/") or path in ("/healthz", "/metrics"))


def one_line(text: str) -> str:
    return " ".join(text.split())


def install(app: FastAPI) -> None:
    @app.exception_handler(TeamloreError)
    async def teamlore_error(request: Request, exc: TeamloreError) -> Response:
        return answer(request, status_of(exc), one_line(str(exc)))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        more = len(exc.errors()) - 1
        message = f"{where}: {first['msg']}" + (f" (and {more} more)" if more > 0 else "")
        return answer(request, 422, one_line(message))


def answer(request: Request, status: int, message: str) -> Response:
    if not is_wiki(request):
        return JSONResponse({"error": message, "status": status}, status_code=status)
    if status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target)}", status_code=303)
    from teamlore.web.pages import render_error  # the templates load lazily, after the app exists

    return render_error(request, status, message)
