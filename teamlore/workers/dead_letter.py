"""Deliveries counted in Redis, and the dead-letter list for what the workers cannot take.

Every delivery of an ingest batch is counted under the batch's key (a hash of its events) before
any work starts, so the count survives a worker process that dies on the batch. A batch whose
deliveries keep failing is split into single events; a single event that keeps failing, or that
the worker refuses as invalid, is kept here (never dropped) until an admin replays or drops it:
``teamlore dead-letter list | replay | drop``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, cast

import redis

from teamlore.errors import InvalidInput
from teamlore.timeutil import utc_now

DEAD_LETTER = "teamlore.dead_letter"  # a Redis hash: entry id -> entry (JSON)
_DELIVERIES = "teamlore:deliveries:"
# A counter outlives any redelivery schedule; it is deleted when its batch is done.
_COUNT_TTL_S = 7 * 24 * 3600


def batch_key(events: list[Any]) -> str:
    """The same events give the same key on every delivery of the same message."""
    text = json.dumps(events, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Events the workers gave up on, with why and after how many deliveries."""

    id: str
    reason: str
    deliveries: int
    at: str  # ISO time it was put here
    events: list[Any]

    @property
    def buried_at(self) -> datetime:
        return datetime.fromisoformat(self.at)

    def describe(self) -> str:
        """One line for a listing: which message(s), when, and why."""
        first = self.events[0] if self.events else {}
        name = (
            "/".join(str(first.get(k, "?")) for k in ("platform", "workspace", "channel", "message_id"))
            if isinstance(first, dict)
            else repr(first)[:60]
        )
        more = f" (+{len(self.events) - 1} more)" if len(self.events) > 1 else ""
        return f"{self.id}  {self.at}  {name}{more}  after {self.deliveries} deliveries: {self.reason}"


class DeadLetters:
    """The dead-letter list in Redis, and the delivery counts of the batches being worked on."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    @classmethod
    def from_url(cls, url: str) -> DeadLetters:
        return cls(redis.Redis.from_url(url, decode_responses=True))

    def count_delivery(self, key: str) -> int:
        """Count one more delivery of the batch ``key``; returns the count, this one included."""
        with self._redis.pipeline() as pipe:
            pipe.incr(_DELIVERIES + key)
            pipe.expire(_DELIVERIES + key, _COUNT_TTL_S)
            count, _ = pipe.execute()
        return int(count)

    def forget(self, key: str) -> None:
        """The batch is done (or failed through no fault of its own): start its count afresh."""
        self._redis.delete(_DELIVERIES + key)

    def carry(self, key: str, deliveries: int) -> None:
        """Events handed back to the queue untried (their channel was held elsewhere) keep the
        failed deliveries of the batch they came from under their own key: a worker that keeps
        dying on them still ends on the dead-letter list."""
        if deliveries > 0:
            self._redis.set(_DELIVERIES + key, deliveries, ex=_COUNT_TTL_S)

    def bury(self, events: list[Any], reason: str, deliveries: int) -> DeadLetter:
        """Keep ``events`` for an admin. The entry's id is the events' key, so burying the same
        events again (a redelivered batch refusing the same event) keeps the first entry."""
        letter = DeadLetter(batch_key(events)[:16], " ".join(reason.split()), deliveries, _now(), events)
        self._redis.hsetnx(DEAD_LETTER, letter.id, json.dumps(asdict(letter)))
        return letter

    def entries(self) -> list[DeadLetter]:
        """Oldest first."""
        return [letter for _, letter in self._chosen(None)]

    def summary(self) -> tuple[int, DeadLetter | None]:
        """How many wait, and the oldest of them."""
        entries = self.entries()
        return len(entries), (entries[0] if entries else None)

    def replay(self, send: Callable[[list[Any]], None], ids: Iterable[str] | None = None) -> list[DeadLetter]:
        """Hand each chosen entry's events to ``send`` (back onto the ingest queue) and remove it.
        An entry whose send fails stays on the list, and the failure is raised."""
        replayed = []
        for raw, letter in self._chosen(ids):
            if not self._redis.hdel(DEAD_LETTER, letter.id):
                continue  # another replay or drop took it meanwhile
            try:
                send(letter.events)
            except BaseException:
                self._redis.hsetnx(DEAD_LETTER, letter.id, raw)
                raise
            replayed.append(letter)
        return replayed

    def drop(self, ids: Iterable[str] | None = None) -> list[DeadLetter]:
        """Delete the chosen entries (every one when ``ids`` is None); returns those deleted."""
        return [letter for _, letter in self._chosen(ids) if self._redis.hdel(DEAD_LETTER, letter.id)]

    def _chosen(self, ids: Iterable[str] | None) -> list[tuple[str, DeadLetter]]:
        wanted = None if ids is None else set(ids)
        # The client decodes responses (``from_url``), which the stub's bytes-or-str cannot tell.
        stored = cast(list[str], self._redis.hvals(DEAD_LETTER))
        rows = sorted(((raw, _parse(raw)) for raw in stored), key=lambda row: row[1].at)
        if wanted is not None:
            unknown = wanted - {letter.id for _, letter in rows}
            if unknown:
                raise InvalidInput(f"no dead letter with id {', '.join(sorted(unknown))}")
        return [(raw, letter) for raw, letter in rows if wanted is None or letter.id in wanted]


def _parse(raw: str) -> DeadLetter:
    return DeadLetter(**json.loads(raw))


def _now() -> str:
    return utc_now().isoformat().replace("+00:00", "Z")
