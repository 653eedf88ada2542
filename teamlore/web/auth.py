"""Who is asking, and for what: the one dependency every API and wiki route goes through.

A request carries a token (``Authorization: Bearer tl_...`` for the API, the HttpOnly cookie the
wiki's login sets), which ``Access.authenticate`` turns into a grant (401 when missing or bad).
The role the route needs is checked (403), and for routes that read channels the channels asked
for (path ``{channel}`` or repeated ``?channel=``) become the request's Scope through
``Access.scope``: a channel outside the grant is refused with 403, never read as empty.

Every id a request names (each path parameter, and the ``workspace``, ``channel`` and
``author`` query parameters) is checked here too, by ``domain.check_identifier``: a NUL or a
control character is bad input (400), never a store error or a "not found" that echoes it.

A state-changing request authenticated by the cookie must also carry the CSRF token (double
submit: the ``teamlore_csrf`` cookie repeated in the form field ``csrf`` or the ``X-CSRF-Token``
header). Bearer requests need none: a browser never adds that header by itself.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from teamlore.app import Teamlore
from teamlore.capabilities.access import Grant, Role
from teamlore.domain import Scope, check_identifier
from teamlore.errors import Forbidden

TOKEN_COOKIE = "teamlore_token"
CSRF_COOKIE = "teamlore_csrf"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Query parameters that name something stored; every path parameter does.
ID_QUERIES = ("workspace", "channel", "author")

_bearer = HTTPBearer(auto_error=False, description="An API token: `teamlore tokens create`.")
Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
WorkspaceQuery = Annotated[str | None, Query(description="Workspace id; default: the token's workspace.")]
ChannelQuery = Annotated[
    list[str] | None,
    Query(
        alias="channel",
        description="Channel id, repeat for several; default: every channel the token may read.",
    ),
]


@dataclass(frozen=True, slots=True)
class Caller:
    grant: Grant
    scope: Scope | None  # None on routes that read no channel

    @property
    def actor(self) -> str:
        """How the audit log names who acted: the token's name and id."""
        return f"{self.grant.name} (token {self.grant.token_id})"

    @property
    def read_scope(self) -> Scope:
        assert self.scope is not None, "route declared unscoped"
        return self.scope


def lore_of(request: Request) -> Teamlore:
    lore: Teamlore = request.app.state.lore
    return lore


def new_csrf_token() -> str:
    return secrets.token_urlsafe(24)


async def _authorize(
    request: Request,
    bearer: HTTPAuthorizationCredentials | None,
    role: Role,
    scoped: bool,
    workspace: str | None = None,
    channels: list[str] | None = None,
) -> Caller:
    lore = lore_of(request)
    from_cookie = bearer is None
    token = bearer.credentials if bearer is not None else request.cookies.get(TOKEN_COOKIE)
    grant = await run_in_threadpool(lore.access.authenticate, token)
    check_ids(request)
    if from_cookie and request.method not in SAFE_METHODS:
        await check_csrf(request)
    lore.access.require(grant, role)
    if not scoped:
        return Caller(grant, None)
    in_path = request.path_params.get("channel")
    asked = [in_path] if in_path else channels
    scope = await run_in_threadpool(lore.access.scope, grant, workspace, asked, role)
    return Caller(grant, scope)


def check_ids(request: Request) -> None:
    for name, value in request.path_params.items():
        check_identifier(str(value), name)
    for name in ID_QUERIES:
        for value in request.query_params.getlist(name):
            if value:  # empty: not given (the wiki's "all your channels")
                check_identifier(value, name)


async def check_csrf(request: Request) -> None:
    expected = request.cookies.get(CSRF_COOKIE, "")
    sent = request.headers.get(CSRF_HEADER)
    if sent is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        sent = str((await request.form()).get(CSRF_FIELD, ""))
    # Bytes, not str: compare_digest refuses a str with non-ASCII characters (a 500, not a 403).
    if not expected or not sent or not hmac.compare_digest(_raw(expected), _raw(sent)):
        raise Forbidden("the form's CSRF token is missing or stale: reload the page and try again")


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def scoped(role: Role = Role.READER) -> Any:
    """A dependency: a caller with ``role`` and the Scope of the channels asked for."""

    # ``asked`` (not ``channel``): a route's own ``{channel}`` path parameter must not clash.
    async def caller(
        request: Request, bearer: Bearer, workspace: WorkspaceQuery = None, asked: ChannelQuery = None
    ) -> Caller:
        return await _authorize(request, bearer, role, True, workspace, asked)

    return Depends(caller)


def unscoped(role: Role = Role.READER) -> Any:
    """A dependency: a caller with ``role``, for routes that read no channel."""

    async def caller(request: Request, bearer: Bearer) -> Caller:
        return await _authorize(request, bearer, role, False)

    return Depends(caller)
