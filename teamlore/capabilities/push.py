"""The signed push: a platform bridge posts a batch of normalized events.

A request carries ``X-Teamlore-Timestamp`` (Unix seconds), ``X-Teamlore-Signature``
(``sha256=`` + hex HMAC-SHA256 of ``"{timestamp}." + body`` under ``TEAMLORE_PUSH_SECRET``) and an
``Idempotency-Key``. Checks run cheapest first and nothing is stored until all pass: size, then
signature, then the five-minute window, then every event; only then are the key and the signature
remembered (for twice the window, long enough to outlive any signature that could still pass), in
the same transaction as the inline ingest. A replay, with the same key or the same signature, is
refused. The body is ``{"events": [event, ...]}``, each event as in the normalized events file.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from teamlore.domain import MessageEvent, parse_event
from teamlore.errors import (
    ConfigurationError,
    InvalidEvent,
    InvalidInput,
    Replayed,
    TooLarge,
    Unauthorized,
)
from teamlore.stores.protocols import ReplayGuard
from teamlore.untrusted import load_json

WINDOW = timedelta(minutes=5)
REMEMBER = 2 * WINDOW
SIGNATURE_PREFIX = "sha256="
_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")
# Events reported by line in a refusal; the rest are counted.
ERRORS_SHOWN = 3


@dataclass(frozen=True, slots=True)
class PushRequest:
    body: bytes
    timestamp: str | None
    signature: str | None
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class PushReceipt:
    events: int
    delivery: str  # inline | queued
    outcomes: dict[str, int] = field(default_factory=dict)
    spooled: int = 0


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value a sender computes."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


@dataclass
class PushDesk:
    """The push endpoint's rules: a signed, size-limited batch of events, each accepted once,
    ingested inline or queued for the workers (``enqueue``)."""

    secret: str
    max_events: int
    max_bytes: int
    max_chars: int
    guard: ReplayGuard
    clock: Callable[[], datetime]
    # Inline: called inside a transaction with the claim, returns outcome counts.
    ingest: Callable[[list[MessageEvent]], dict[str, int]]
    transaction: Callable[[], AbstractContextManager[object]]
    # Queued (TEAMLORE_REDIS_URL): hands the batch to the workers, returns events spooled.
    enqueue: Callable[[list[MessageEvent]], int] | None = None

    def accept(self, request: PushRequest) -> PushReceipt:
        """Verify the signature, claim the idempotency key and signature (a replay is refused), then
        ingest or queue the events."""
        if not self.secret:
            raise ConfigurationError("the push endpoint is off: set TEAMLORE_PUSH_SECRET to turn it on")
        if len(request.body) > self.max_bytes:
            raise TooLarge(f"the body is {len(request.body):,} bytes; the limit is {self.max_bytes:,}")
        now = self.clock()
        verified = self._verify(request, now)
        events = self._events(request.body)
        keys = [f"key:{request.idempotency_key}", f"sig:{verified}"]
        if self.enqueue is not None:
            self._claim(keys, now)
            spooled = self.enqueue(events)
            return PushReceipt(len(events), "queued", {}, spooled)
        with self.transaction():
            self._claim(keys, now)
            outcomes = self.ingest(events)
        return PushReceipt(len(events), "inline", outcomes)

    def _verify(self, request: PushRequest, now: datetime) -> str:
        """The signature that was verified: the replay record is keyed on it, byte for byte."""
        if not request.signature or not request.timestamp:
            raise Unauthorized("a push needs X-Teamlore-Timestamp and X-Teamlore-Signature headers")
        expected = sign(self.secret, request.timestamp, request.body)
        # The exact bytes: nothing stripped, so no two distinct headers can pass as one signature.
        given = request.signature.encode("utf-8", "surrogatepass")
        if not hmac.compare_digest(expected.encode(), given):
            raise Unauthorized("bad signature: expected sha256=HMAC-SHA256(secret, timestamp + '.' + body)")
        try:
            sent = datetime.fromtimestamp(int(request.timestamp), tz=now.tzinfo)
        except (ValueError, OverflowError, OSError):
            raise Unauthorized("X-Teamlore-Timestamp must be Unix seconds") from None
        if abs(now - sent) > WINDOW:
            raise Unauthorized(
                f"stale timestamp: {int(abs((now - sent).total_seconds()))} s from the server's clock; "
                f"the window is {int(WINDOW.total_seconds())} s"
            )
        if not request.idempotency_key or not _KEY.match(request.idempotency_key):
            raise InvalidInput("a push needs an Idempotency-Key header (1-200 printable characters)")
        return expected

    def _events(self, body: bytes) -> list[MessageEvent]:
        try:
            data = load_json(body)
        except InvalidInput as exc:
            raise InvalidInput(f'bad body: {exc}; send {{"events": [...]}}') from None
        raw = data.get("events") if isinstance(data, dict) else None
        if not isinstance(raw, list) or not raw:
            raise InvalidInput('the body must be {"events": [...]} with at least one event')
        if len(raw) > self.max_events:
            raise TooLarge(f"{len(raw):,} events in one push; the limit is {self.max_events:,}")
        events, errors = [], []
        for index, item in enumerate(raw):
            try:
                events.append(parse_event(item, self.max_chars))
            except InvalidEvent as exc:
                errors.append(f"event {index}: {exc}")
        if errors:
            more = f" (and {len(errors) - ERRORS_SHOWN} more)" if len(errors) > ERRORS_SHOWN else ""
            raise InvalidEvent("; ".join(errors[:ERRORS_SHOWN]) + more + "; nothing was stored")
        return events

    def _claim(self, keys: list[str], now: datetime) -> None:
        if not self.guard.claim(keys, now, now - REMEMBER):
            raise Replayed(
                "this push was accepted before (same Idempotency-Key or signature); not applied again"
            )
