"""Time at the edges: parse and print UTC, and the integer microseconds the stores compare."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# Open bounds are a far-future sentinel, never null, so every store can push the whole time
# predicate into its query as plain range filters.
SENTINEL = datetime(9999, 12, 31, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_micros(moment: datetime) -> int:
    """Microseconds since the epoch; the unit every store compares times in."""
    if moment.tzinfo is None:
        raise ValueError(f"time {moment.isoformat()} has no time zone; give UTC, e.g. ...Z")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    # The open bound is most of what a read converts: it needs no arithmetic.
    if micros == SENTINEL_MICROS:
        return SENTINEL
    return _EPOCH + timedelta(microseconds=micros)


SENTINEL_MICROS = to_micros(SENTINEL)


def parse_time(text: str) -> datetime:
    """Parse an ISO 8601 time with a zone ('Z' or an offset); a date alone means midnight UTC.

    Every surface (API, wiki, CLI, MCP) reads the times of a read (as of, known at, since) here,
    so one rule holds for all: a time at or after the open bound (``SENTINEL``, 9999-12-31) is
    refused, since "still open" and "true then" cannot be told apart there; search and a fact
    by id would otherwise disagree about it.
    """
    raw = text.strip()
    shown = repr(text[:40] + ("..." if len(text) > 40 else ""))
    try:
        if len(raw) == 10:
            moment = datetime.fromisoformat(raw).replace(tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 time: {shown} (expected e.g. 2026-01-05T10:00:00Z)") from exc
    if moment.tzinfo is None:
        raise ValueError(f"time {shown} has no time zone; add Z for UTC")
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"time {shown} is outside the years 1-9999 once in UTC") from None
    if moment >= SENTINEL:
        raise ValueError(f"time {shown} is at or after {SENTINEL.date()}, the open bound; give one before it")
    return moment


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a Z, seconds precision unless the time has microseconds."""
    moment = moment.astimezone(UTC)
    spec = "microseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")
