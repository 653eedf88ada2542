"""Access control: API tokens with a role and the channels they may read.

Every request of the HTTP API, the web wiki and the MCP server resolves its token here to a
``Grant`` and then to a ``Scope``. Asking for a channel outside the grant raises ``Forbidden``
(HTTP 403): a refusal, never an empty answer that looks like "nothing known". The secret is shown
once, at creation; only its SHA-256 is stored (tokens are 256 random bits, so a fast hash is
enough: there is nothing to brute-force).
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from teamlore.domain import Scope, check_identifier
from teamlore.errors import Forbidden, InvalidInput, Unauthorized
from teamlore.stores.protocols import TokenRecord, TokenStore

PREFIX = "tl"
# A token's name says who or what uses it; it is shown in listings and in the audit log.
TOKEN_NAME_MAX = 100
_TOKEN = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{20,}})$")


class Role(IntEnum):
    """Ordered: each role may do what the ones below it may."""

    READER = 1
    REVIEWER = 2
    ADMIN = 3

    @classmethod
    def parse(cls, value: str) -> Role:
        try:
            return cls[value.strip().upper()]
        except KeyError:
            raise InvalidInput(f"unknown role {value!r}; use reader, reviewer or admin") from None

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Grant:
    """What a live token may do."""

    token_id: str
    name: str
    role: Role
    workspace: str
    channels: frozenset[str] | None  # None: every channel of the workspace

    def may_read(self, workspace: str, channel: str) -> bool:
        return workspace == self.workspace and (self.channels is None or channel in self.channels)

    def covers(self, record: TokenRecord) -> bool:
        """Whether ``record`` reaches nothing this grant does not: an admin sees, and revokes,
        only such tokens (a token for every channel only with a grant for every channel)."""
        if record.workspace != self.workspace:
            return False
        return self.channels is None or (bool(record.channels) and set(record.channels) <= self.channels)


class Access:
    """Create, check and revoke tokens; turn a grant and a request into a Scope."""

    def __init__(
        self,
        tokens: TokenStore,
        workspace_channels: Callable[[str], Iterable[str]],
        clock: Callable[[], datetime],
    ) -> None:
        self._tokens = tokens
        self._workspace_channels = workspace_channels
        self._clock = clock

    def create(
        self, name: str, role: str | Role, workspace: str, channels: Iterable[str] | None
    ) -> tuple[TokenRecord, str]:
        """A new token; returns the record and the secret token string (shown once)."""
        role = role if isinstance(role, Role) else Role.parse(role)
        name = _token_name(name)
        if not workspace.strip():
            raise InvalidInput("a token needs a workspace")
        check_identifier(workspace.strip(), "workspace")
        chosen = None if channels is None else tuple(sorted({c.strip() for c in channels if c.strip()}))
        if chosen is not None and not chosen:
            raise InvalidInput("name at least one channel, or grant every channel explicitly")
        for channel in chosen or ():
            check_identifier(channel, "channel")
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        record = TokenRecord(
            token_id=token_id,
            name=name,
            role=str(role),
            workspace=workspace.strip(),
            channels=chosen or (),
            secret_sha256=_digest(secret),
            created_at=self._clock(),
        )
        self._tokens.add(record)
        return record, f"{PREFIX}_{token_id}_{secret}"

    def authenticate(self, token: str | None) -> Grant:
        if not token:
            raise Unauthorized("an API token is required (Authorization: Bearer tl_...)")
        match = _TOKEN.match(token.strip())
        if match is None:
            raise Unauthorized("malformed API token")
        record = self._tokens.get(match.group(1))
        if record is None or not hmac.compare_digest(record.secret_sha256, _digest(match.group(2))):
            raise Unauthorized("unknown API token")
        if record.revoked_at is not None:
            raise Unauthorized("this API token was revoked")
        return Grant(
            token_id=record.token_id,
            name=record.name,
            role=Role.parse(record.role),
            workspace=record.workspace,
            channels=frozenset(record.channels) if record.channels else None,
        )

    def scope(
        self,
        grant: Grant,
        workspace: str | None,
        channels: Iterable[str] | None,
        role: Role = Role.READER,
    ) -> Scope:
        """The Scope of one request: the channels asked for, each inside the grant; none asked
        means every channel granted."""
        if grant.role < role:
            raise Forbidden(f"this needs the {role} role; the token has {grant.role}")
        workspace = workspace or grant.workspace
        if workspace != grant.workspace:
            raise Forbidden(f"the token may not read workspace {workspace}")
        asked = sorted({c for c in channels or () if c})
        if not asked:
            asked = sorted(grant.channels) if grant.channels is not None else self.readable(grant)
            if not asked:
                raise Forbidden("the token may read no channel of this workspace yet")
        refused = [c for c in asked if not grant.may_read(workspace, c)]
        if refused:
            raise Forbidden(f"the token may not read channel {', '.join(refused)}")
        return Scope(workspace, asked)

    def readable(self, grant: Grant) -> list[str]:
        """Every channel the grant may read that the store knows of."""
        known = sorted(set(self._workspace_channels(grant.workspace)))
        return [c for c in known if grant.may_read(grant.workspace, c)]

    def require(self, grant: Grant, role: Role) -> None:
        if grant.role < role:
            raise Forbidden(f"this needs the {role} role; the token has {grant.role}")

    def list(self, workspace: str | None = None) -> list[TokenRecord]:
        return self._tokens.all(workspace)

    def list_within(self, grant: Grant) -> builtins.list[TokenRecord]:
        """The tokens an admin token may see: those its grant covers."""
        return [r for r in self._tokens.all(grant.workspace) if grant.covers(r)]

    def revoke(self, token_id: str) -> None:
        if not self._tokens.revoke(token_id, self._clock()):
            raise InvalidInput(f"no live token {token_id}")


def _token_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise InvalidInput("a token needs a name (who or what uses it)")
    if len(name) > TOKEN_NAME_MAX:
        raise InvalidInput(f"a token name is at most {TOKEN_NAME_MAX} characters; this one has {len(name):,}")
    if not name.isprintable():
        raise InvalidInput("a token name may not hold control characters or line breaks")
    return name


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
