"""Teamlore's errors as HTTP answers, in one place: a status code and a one-line message.

API paths answer JSON ``{"error": ..., "status": ...}`` on every status: Teamlore's errors, bad
parameters (422), unknown routes (404), a method a route does not take (405, with ``Allow``) and
an unexpected failure (500, logged). Wiki pages answer an HTML page, and a wiki request without a
valid login goes to the login form instead of a bare 401.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

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
from teamlore.web.security import security_headers

log = logging.getLogger(__name__)

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
    """A page a person reads (the wiki and its sign-in); everything else answers JSON."""
    path = request.url.path
    return path in ("/", "/login", "/logout") or path == "/wiki" or path.startswith("/wiki/")


def one_line(text: str) -> str:
    return " ".join(text.split())


def install(app: FastAPI) -> None:
    @app.exception_handler(TeamloreError)
    async def teamlore_error(request: Request, exc: TeamloreError) -> Response:
        return await answer_async(request, status_of(exc), one_line(str(exc)))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        more = len(exc.errors()) - 1
        message = f"{where}: {first['msg']}" + (f" (and {more} more)" if more > 0 else "")
        if is_wiki(request):  # a person, not a program: name the part, not the validator's words
            part = first["loc"][-1] if first["loc"] else "request"
            message = f"The address has a value the wiki cannot read: {part}."
        return await answer_async(request, 422, one_line(message))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """Routing's own errors (no such route, method not allowed): a page for the wiki, the
        error shape (with the route's headers, e.g. ``Allow``) for everything else."""
        if is_wiki(request):
            plain = {404: "There is no page at this address.", 405: "This address cannot be used that way."}
            return await answer_async(request, exc.status_code, plain.get(exc.status_code, str(exc.detail)))
        response = await answer_async(request, exc.status_code, _reason(exc))
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        # Outside every middleware (Starlette's error middleware), so the headers are added here.
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        if is_wiki(request):
            response: Response = PlainTextResponse("Internal Server Error", status_code=500)
        else:
            response = JSONResponse({"error": "internal error; see the server log", "status": 500}, 500)
        response.headers.update(security_headers(request.url.path))
        return response


def _reason(exc: StarletteHTTPException) -> str:
    """A one-line message: the route's own detail, else what the status means and what to do."""
    if exc.status_code == 404 and exc.detail == "Not Found":
        return "no such route; the routes are listed at /docs"
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return f"this route does not take that method; it takes {allowed or 'another one'}"
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    return one_line(detail)


async def answer_async(request: Request, status: int, message: str) -> Response:
    if not is_wiki(request):
        return JSONResponse({"error": message, "status": status}, status_code=status)
    if status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target)}", status_code=303)
    from teamlore.web.pages import render_error, signed_in  # templates load lazily, after the app

    # A signed-in reader keeps the navigation on an error page.
    who = await run_in_threadpool(signed_in, request)
    return render_error(request, status, message, who)
