"""Hashes of text that outlive an erasure are keyed with a secret (HMAC-SHA256).

The audit log is append-only: the content hashes it holds stay after a person's text is
erased. A plain hash of a statement would let anyone holding the log confirm a guessed
sentence; a keyed one cannot be computed without the secret. The secret comes from
TEAMLORE_HASH_SECRET or, when that is empty, from a file generated once in the data folder
(kept apart from the SQLite file, so a copy of the database alone confirms nothing).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from teamlore.errors import ConfigurationError
from teamlore.stores.protocols import AuditEvent, AuditLog

SECRET_FILE = "hash-secret"


class TextKey:
    """Keyed digests of text hashes."""

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("a hash secret cannot be empty")
        self._secret = secret.encode()

    def digest(self, value: str) -> str:
        return hmac.new(self._secret, value.encode(), hashlib.sha256).hexdigest()[:32]

    def seal(self, event: AuditEvent) -> AuditEvent:
        """The event with every content hash it carries keyed."""
        details = dict(event.details)
        state = details.get("state")
        if isinstance(state, dict) and state.get("content_hash"):
            details["state"] = {**state, "content_hash": self.digest(str(state["content_hash"]))}
        return dataclasses.replace(
            event, content_hashes=tuple(self.digest(h) for h in event.content_hashes), details=details
        )


def text_key(secret: str, data_dir: Path) -> TextKey:
    """The configured secret, else the one stored in ``data_dir`` (generated on first use)."""
    if secret:
        return TextKey(secret)
    path = data_dir / SECRET_FILE
    if not path.exists():
        try:
            _generate(data_dir, path)
        except OSError as exc:
            raise ConfigurationError(
                f"no hash secret: set TEAMLORE_HASH_SECRET (every process of a server stack needs"
                f" the same one), or let Teamlore write {path} ({exc.strerror})"
            ) from None
    return TextKey(path.read_text().strip())


def _generate(data_dir: Path, path: Path) -> None:
    # Written aside and linked into place: two processes starting together agree on one.
    data_dir.mkdir(parents=True, exist_ok=True)
    aside = data_dir / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
    try:
        os.link(aside, path)
    except FileExistsError:
        pass
    finally:
        aside.unlink()


class KeyedAuditLog:
    """An audit log that keys the content hashes of every event before storing it."""

    def __init__(self, inner: AuditLog, key: TextKey) -> None:
        self._inner, self._key = inner, key

    def append(self, event: AuditEvent) -> int:
        return self._inner.append(self._key.seal(event))

    def events_for_fact(self, fact_id: str) -> list[AuditEvent]:
        return self._inner.events_for_fact(fact_id)

    def recent(
        self,
        workspace: str,
        channels: Iterable[str],
        since: datetime,
        limit: int,
        before: int | None = None,
        after: int | None = None,
    ) -> list[AuditEvent]:
        return self._inner.recent(workspace, channels, since, limit, before, after)
