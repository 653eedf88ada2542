"""Running live listeners: blocking work off the event loop, one job at a time, in arrival order.

Platform clients (discord.py, the Agents SDK's aiohttp host) call handlers on an asyncio loop that
must keep answering heartbeats, while ingesting a message (embedding) and answering a question
are blocking. ``SerialWorker`` runs those jobs in a thread, strictly in the order the handlers
queued them, so an edit never overtakes the message it edits and an answer sees every message
posted before the question. A backfill running in its own thread shares the same lock through
``locked_sink``, so two ingests never interleave.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from teamlore.connectors.delivery import Delivered, EventSink
from teamlore.domain import Channel, MessageEvent

log = logging.getLogger(__name__)
T = TypeVar("T")


class SerialWorker:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._queue: asyncio.Queue[tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future[Any]]] | None
        self._queue = None
        self._task: asyncio.Task[None] | None = None

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` in the worker thread after every job queued before it."""
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._consume(), name="teamlore worker")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((fn, args, future))
        return await future

    async def drain(self) -> None:
        """Wait until every queued job has run (tests and shutdown)."""
        if self._queue is not None:
            await self._queue.join()

    async def close(self) -> None:
        await self.drain()
        if self._task is not None:
            self._task.cancel()
            self._task = self._queue = None

    async def _consume(self) -> None:
        assert self._queue is not None
        while True:
            fn, args, future = await self._queue.get()
            try:
                result = await asyncio.to_thread(self._locked, fn, *args)
            except Exception as exc:  # the caller decides; the worker keeps going
                if not future.cancelled():
                    future.set_exception(exc)
            else:
                if not future.cancelled():
                    future.set_result(result)
            finally:
                self._queue.task_done()

    def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        with self.lock:
            return fn(*args)


class LockedSink(EventSink):
    """An ``EventSink`` for a backfill thread: each delivery takes the live worker's lock."""

    def __init__(self, sink: EventSink, lock: threading.Lock) -> None:  # wraps; no super().__init__
        self._sink = sink
        self._lock = lock

    @property
    def queued(self) -> bool:
        return self._sink.queued

    def deliver(self, events: Sequence[MessageEvent]) -> Delivered:
        with self._lock:
            return self._sink.deliver(events)

    def update_channel(self, channel: Channel) -> None:
        with self._lock:
            self._sink.update_channel(channel)
