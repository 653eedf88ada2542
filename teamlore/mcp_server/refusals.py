"""Teamlore's errors as MCP answers, with the HTTP status the HTTP API gives for the same error.

A tool's refusal is a tool error (``is_error`` with the message, so the model can ask again with
a channel it may read); a resource's refusal is a JSON-RPC error (resources have no error
result). Either way the text starts with the status, e.g. "403 Forbidden: ...": a refusal never
reads as an empty answer. Anything not raised on purpose is left to the SDK, which reports it as
a crash without its text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp import MCPError
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from teamlore.errors import (
    BackendUnavailable,
    Forbidden,
    InvalidInput,
    NotFound,
    TeamloreError,
    Unauthorized,
)

# JSON-RPC leaves -32000..-32099 to the implementation; MCP itself uses -32000..-32001 and
# -32020..-32042. These two carry the access refusals of resource reads.
FORBIDDEN_CODE = -32003
UNAUTHORIZED_CODE = -32004

# Most specific first: the first class the error is an instance of decides.
_STATUS: tuple[tuple[type[TeamloreError], int, str, int], ...] = (
    (Unauthorized, 401, "Unauthorized", UNAUTHORIZED_CODE),
    (Forbidden, 403, "Forbidden", FORBIDDEN_CODE),
    (NotFound, 404, "Not Found", INVALID_PARAMS),
    (InvalidInput, 400, "Bad Request", INVALID_PARAMS),
    (BackendUnavailable, 503, "Service Unavailable", INTERNAL_ERROR),
    (TeamloreError, 500, "Internal Server Error", INTERNAL_ERROR),
)


def describe(exc: TeamloreError) -> tuple[int, str, int]:
    """(HTTP status, the status line's words, JSON-RPC code) for one of our errors."""
    for kind, status, words, code in _STATUS:
        if isinstance(exc, kind):
            return status, f"{status} {words}: {exc}", code
    raise AssertionError("TeamloreError is the last row")  # pragma: no cover


@contextmanager
def tool_refusals() -> Iterator[None]:
    try:
        yield
    except TeamloreError as exc:
        raise ToolError(describe(exc)[1]) from exc


@contextmanager
def resource_refusals(uri: str) -> Iterator[None]:
    try:
        yield
    except NotFound as exc:
        raise ResourceNotFoundError(describe(exc)[1]) from exc
    except TeamloreError as exc:
        status, message, code = describe(exc)
        raise MCPError(code=code, message=message, data={"status": status, "uri": uri}) from exc
