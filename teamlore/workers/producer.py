"""What connectors and imports call to hand events to the workers: ``Producer.enqueue``.

When Redis cannot be reached it retries with backoff for ``TEAMLORE_PRODUCER_RETRY_S``, then
spools the batch to a local file; the spool is replayed, oldest first, on the next enqueue (or
``replay_spool``), so a Redis restart loses no message. Appending and draining hold an exclusive
``fcntl.flock`` on ``spool.lock`` beside it: connectors, the API and imports share the file.
The producer never imports the worker: tasks are sent by name.

Each batch is numbered in each of its channels before it is first sent (``ChannelOrder.number``),
once: a retry or the spool keeps its numbers, so the workers apply a channel's batches in the
order they were queued. A batch spooled because Redis could not number it is numbered when the
spool is sent.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from celery import Celery
from kombu.exceptions import OperationalError

from teamlore.config import Settings
from teamlore.domain import MessageEvent
from teamlore.errors import BackendUnavailable
from teamlore.stores.redis.channel_order import ChannelOrder, to_wire
from teamlore.workers.celery_app import ADMIN, INGEST, make_celery

_DOWN = (OperationalError, redis.ConnectionError, redis.TimeoutError, ConnectionError, OSError)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What ``enqueue`` did: events sent, events spooled (Redis down), and spooled events sent
    first."""

    sent: int
    spooled: int
    replayed: int


class Producer:
    """Hands events to the workers through Redis; while Redis is down they wait in a spool file in
    the data directory and go first once it is back."""

    def __init__(
        self, settings: Settings, app: Celery | None = None, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.app = app or make_celery(settings)
        # kombu retries a first connection to the broker without end, so a producer started while
        # Redis is down would hang instead of spooling; it has its own retry and the spool.
        options = self.app.conf.broker_transport_options or {}
        self.app.conf.broker_transport_options = {**options, "max_retries": 0}
        self.spool = settings.data_dir / "spool.jsonl"
        self.retry_s = settings.producer_retry_s
        self._sleep = sleep
        self._order = ChannelOrder.from_url(settings.redis_url) if settings.redis_url else None

    def enqueue(self, events: Sequence[MessageEvent]) -> Delivery:
        """Queue the events behind anything spooled; spool them when Redis does not take them within
        ``producer_retry_s``."""
        payload = [event.model_dump(mode="json") for event in events]
        with self._spool_lock():
            replayed = self._replay_locked()
            if self.spool.exists():  # still down: keep the order, queue behind what waits
                self._append(payload, None)
                return Delivery(0, len(payload), replayed)
        order = self._number(payload)
        if self._send_with_retry(payload, order):
            return Delivery(len(payload), 0, replayed)
        with self._spool_lock():
            self._append(payload, order)
        return Delivery(0, len(payload), replayed)

    def send(self, payload: list[dict[str, Any]]) -> None:
        """Queue raw events now, or raise ``BackendUnavailable`` (no spool: the caller, an admin
        replaying the dead-letter list, sees the failure and asks again)."""
        try:
            self.app.send_task("teamlore.ingest", args=[payload], queue=INGEST, retry=False)
        except _DOWN as exc:
            raise BackendUnavailable(f"cannot queue events: Redis is unreachable ({exc})") from exc

    def admin(self, task: str, *args: str) -> str:
        """Queue an admin job (re-index, erasure) on the admin queue, so it never delays live
        messages; returns the task id. Not spooled: the admin sees the failure and asks again."""
        try:
            task_id: str = self.app.send_task(task, args=list(args), queue=ADMIN, retry=False).id
            return task_id
        except _DOWN as exc:
            raise BackendUnavailable(f"cannot queue {task}: Redis is unreachable ({exc})") from exc

    def replay_spool(self) -> int:
        """Send what the spool holds, oldest first; stop at the first failure. Returns events sent."""
        with self._spool_lock():
            return self._replay_locked()

    @contextmanager
    def _spool_lock(self) -> Iterator[None]:
        """Every process that appends to or drains the spool (connectors, the API, imports) holds
        this lock for the whole read-send-rewrite, so no batch is lost or sent twice."""
        self.spool.parent.mkdir(parents=True, exist_ok=True)
        with self.spool.with_suffix(".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _replay_locked(self) -> int:
        if not self.spool.exists():
            return 0
        batches = [_spooled(json.loads(line)) for line in self.spool.read_text().splitlines() if line.strip()]
        sent = 0
        for index, (batch, order) in enumerate(batches):
            if order is None:  # spooled before it could be numbered: numbered now, once
                order = batches[index][1] = self._number(batch)
            if order is None or not self._send(batch, order):
                self._rewrite(batches[index:])
                return sent
            sent += len(batch)
        self.spool.unlink()
        return sent

    def _number(self, payload: list[dict[str, Any]]) -> list[list[str | int]] | None:
        """The batch's number in each of its channels; None while Redis cannot give them."""
        if self._order is None:
            return []
        try:
            return to_wire(self._order.number((str(e["workspace"]), str(e["channel"])) for e in payload))
        except _DOWN:
            return None

    def _send_with_retry(self, payload: list[dict[str, Any]], order: list[list[str | int]] | None) -> bool:
        deadline = time.monotonic() + self.retry_s
        delay = 0.2
        while True:
            if order is None:
                order = self._number(payload)
            if order is not None and self._send(payload, order):
                return True
            if time.monotonic() + delay > deadline:
                return False
            self._sleep(delay)
            delay = min(delay * 2, 5.0)

    def _send(self, payload: list[dict[str, Any]], order: list[list[str | int]]) -> bool:
        try:
            self.app.send_task("teamlore.ingest", args=[payload, 0, order], queue=INGEST, retry=False)
        except _DOWN:
            return False
        return True

    def _append(self, payload: list[dict[str, Any]], order: list[list[str | int]] | None) -> None:
        with self.spool.open("a") as handle:
            handle.write(json.dumps(_spool_line(payload, order)) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _rewrite(self, batches: list[list[Any]]) -> None:
        spare = self.spool.with_suffix(".tmp")
        with spare.open("w") as handle:
            handle.write("".join(json.dumps(_spool_line(*b)) + "\n" for b in batches))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(spare, self.spool)


def _spool_line(payload: list[dict[str, Any]], order: list[list[str | int]] | None) -> object:
    """A spooled batch: its events, with its numbers once it has them (a bare list, as older
    spools hold, has none yet)."""
    return payload if order is None else {"events": payload, "order": order}


def _spooled(line: object) -> list[Any]:
    """``[events, order or None]`` of a spool line."""
    if isinstance(line, dict):
        return [line["events"], line["order"]]
    return [line, None]
