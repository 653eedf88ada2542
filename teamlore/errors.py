"""Teamlore's errors.

    TeamloreError                 base: every error the package raises on purpose
    +-- InvalidInput              bad input from a user or a file; the CLI exits 2
    |   +-- InvalidEvent          a message event that fails validation
    |   +-- ScopeError            a read without a workspace or a channel
    |   +-- ExportError           an export file or folder that cannot be read
    |   +-- TooLarge              a request over a size limit (HTTP 413)
    +-- ConfigurationError        a setting that is missing or inconsistent
    |   +-- MissingExtra          a feature whose optional packages are not installed (teamlore.extras)
    +-- BackendUnavailable        a store, index or embedder failed; what failed is in the message
    |   +-- EmbedderUnavailable   the embedder could not embed (the keyword path still works)
    |   +-- StoreUnreachable      a server store did not answer at all: retry the whole batch later
    |   |   +-- LeaseLost         a channel's lock passed to another worker mid-batch: nothing more written
    |   +-- ModelUnavailable      the language model endpoint failed after its retries
    +-- ModelOutputInvalid        a model answered, but not in the form asked (never stored)
    +-- NotFound                  an id that names nothing in the given scope
    +-- Unauthorized              no token, or a token that is unknown or revoked (HTTP 401)
    +-- Forbidden                 a valid token asking beyond its grant: channel or role (HTTP 403)
    +-- Replayed                  a signed request already accepted once (HTTP 409)
    +-- FileUnusable              a shared file that could not be used: recorded on the file, one line
        +-- FetchFailed           its bytes could not be fetched (``retry``: re-index tries again)
        +-- Unreadable            its bytes could not be read (broken, a bomb, over a limit, a type not read)

Vendor exceptions (sqlite3, httpx, ...) are translated at the adapter with ``raise ... from exc``.
"""

from __future__ import annotations


class TeamloreError(Exception):
    """Base class for errors raised on purpose by Teamlore."""


class InvalidInput(TeamloreError):
    """Input from a user or a file that cannot be used as given."""


class InvalidEvent(InvalidInput):
    """A message event that fails validation."""


class ScopeError(InvalidInput):
    """A read that names no workspace or no channel."""


class ExportError(InvalidInput):
    """An export file or folder that cannot be read."""


class TooLarge(InvalidInput):
    """A request over a size limit (too many events, too many bytes)."""


class ConfigurationError(TeamloreError):
    """A setting that is missing or inconsistent."""


class MissingExtra(ConfigurationError):
    """A platform, store or model client asked for whose optional packages are not installed."""


class BackendUnavailable(TeamloreError):
    """A store, index or embedder that failed while serving a request."""


class EmbedderUnavailable(BackendUnavailable):
    """The embedder could not produce vectors."""


class StoreUnreachable(BackendUnavailable):
    """A server store did not answer: no event is at fault, so none is recorded as failed."""


class LeaseLost(StoreUnreachable):
    """A channel's lock passed to another worker before this unit committed: what was not yet
    written is not written, and the events are to be tried again (they are no fault of their own)."""


class ModelUnavailable(BackendUnavailable):
    """The language model endpoint failed (unreachable, timed out, refused) after its retries."""


class ModelOutputInvalid(TeamloreError):
    """A model's answer failed validation; the caller falls back, nothing of it is stored."""


class NotFound(TeamloreError):
    """An id that names nothing visible in the given scope."""


class Unauthorized(TeamloreError):
    """No credentials, or credentials that name no live token."""


class Forbidden(TeamloreError):
    """Valid credentials asking for a channel or an action outside their grant."""


class Replayed(TeamloreError):
    """A signed request (its idempotency key or its signature) that was accepted before."""


class FileUnusable(TeamloreError):
    """A shared file that could not be used; the message is the one line recorded on it."""


class FetchFailed(FileUnusable):
    """A shared file's bytes could not be fetched; ``retry`` says whether trying later may help."""

    def __init__(self, message: str, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


class Unreadable(FileUnusable):
    """A shared file's bytes could not be read."""
