"""Times in documents, and the write operations the journal stores and replays.

BSON datetimes hold milliseconds; Teamlore's times (Slack ts, the clock) carry microseconds, and
the pipeline compares them (an edit older than the stored text is ignored), so the rest below a
millisecond sits in ``<name>_us`` beside each time and a time reads back exactly as written.

A document holding times is written whole (inserted, or replaced), never patched with ``$set``:
nx-27017 (the wire-protocol server the tests run) stores a datetime given to ``$set`` on an
existing document as a string. Whole-document writes are safe here because one worker at a time
applies a channel's events (the channel lock), each unit's writes in order in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import bson
from bson.codec_options import CodecOptions

_DECODE: CodecOptions[dict[str, Any]] = CodecOptions(tz_aware=True, tzinfo=UTC)


def times(**values: datetime | None) -> dict[str, Any]:
    """Document fields for times: ``ts=...`` gives ``{"ts": <BSON datetime>, "ts_us": <rest>}``."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            out[name], out[f"{name}_us"] = None, None
            continue
        if value.tzinfo is None:
            raise ValueError(f"time {value.isoformat()} has no time zone; give UTC")
        value = value.astimezone(UTC)
        out[name] = value.replace(microsecond=value.microsecond // 1000 * 1000)
        out[f"{name}_us"] = value.microsecond % 1000
    return out


def time_of(doc: dict[str, Any], name: str) -> datetime | None:
    value: datetime | None = doc.get(name)
    if value is None:
        return None
    return value.astimezone(UTC) + timedelta(microseconds=doc.get(f"{name}_us") or 0)


@dataclass(frozen=True, slots=True)
class Op:
    """One write, replayable: every kind is idempotent when applied again in the same order
    (updates set values, never increment; an insert that meets its own earlier copy is done)."""

    collection: str
    kind: str  # insert_one | replace_one | update_one | update_many | delete_many
    filter: dict[str, Any] = field(default_factory=dict)
    update: dict[str, Any] = field(default_factory=dict)  # the update, or the document to insert
    upsert: bool = False

    def encode(self) -> bytes:
        return bson.encode(
            {"c": self.collection, "k": self.kind, "f": self.filter, "u": self.update, "up": self.upsert}
        )

    @classmethod
    def decode(cls, blob: bytes) -> Op:
        raw = bson.decode(blob, codec_options=_DECODE)
        return cls(raw["c"], raw["k"], raw["f"], raw["u"], raw["up"])
