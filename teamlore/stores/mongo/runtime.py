"""One ``AsyncMongoClient`` on one event loop, for synchronous callers.

The store Protocols are synchronous, PyMongo's async client is not: a daemon thread runs an
event loop that owns the client, and each call submits a coroutine to it. A client belongs to
the loop (and the process) that made it, so after a fork (Celery's prefork workers) the child
starts its own thread, loop and client on first use. Connection failures become one-line
``BackendUnavailable`` errors that say what to check; nothing waits longer than the configured
server selection timeout for an unreachable server.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import traceback
import warnings
from collections.abc import Awaitable, Callable
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC
from typing import Any, TypeVar
from urllib.parse import urlsplit

from bson.codec_options import CodecOptions
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConnectionFailure, PyMongoError

from teamlore.errors import BackendUnavailable, StoreUnreachable

T = TypeVar("T")
# A document as the driver hands it over, and as every store builds it.
Document = dict[str, Any]
Db = AsyncDatabase[Document]
Work = Callable[[Db], Awaitable[T]]


def redact(url: str) -> str:
    """The URL without its credentials, for error messages."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}"


class MongoRuntime:
    """Runs work on one ``AsyncMongoClient`` for synchronous callers (see the module)."""

    def __init__(self, url: str, database: str, timeout_s: float, setup: Work[None] | None = None) -> None:
        self.url, self.database, self.timeout_s = url, database, timeout_s
        self._setup = setup
        self._pid = -1
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: AsyncMongoClient[Document] | None = None
        self._db: Db | None = None

    def run(self, work: Work[T]) -> T:
        """Run ``work(db)`` on the client's loop and wait for its result."""
        loop, db = self._ready()
        return self._submit(loop, work(db))

    def _submit(self, loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
        future = asyncio.run_coroutine_threadsafe(self._translated(coro), loop)
        try:
            # A backstop only: the driver's own timeouts end a call to a dead server first.
            return future.result(timeout=self.timeout_s * 4 + 30)
        except FutureTimeout:
            future.cancel()
            raise StoreUnreachable(self._down("no answer")) from None

    async def _translated(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        except ConnectionFailure as exc:
            raise StoreUnreachable(self._down(type(exc).__name__)) from exc
        except PyMongoError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise BackendUnavailable(
                f"MongoDB {redact(self.url)} refused the request: {first[:300]}"
            ) from exc

    def _down(self, what: str) -> str:
        return (
            f"MongoDB at {redact(self.url)} is unreachable ({what} after {self.timeout_s:g}s): check"
            " TEAMLORE_MONGO_URL and that the server is running"
        )

    def _ready(self) -> tuple[asyncio.AbstractEventLoop, Db]:
        with self._lock:
            if self._pid != os.getpid() or self._loop is None or self._db is None:
                # After a fork the parent's loop thread does not exist here: start afresh and
                # leave the inherited objects alone (closing them would touch the parent's sockets).
                self._start()
            assert self._loop is not None and self._db is not None
            return self._loop, self._db

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="teamlore-mongo", daemon=True)
        thread.start()
        millis = int(self.timeout_s * 1000)

        async def connect() -> tuple[AsyncMongoClient[Document], Db]:
            client: AsyncMongoClient[Document] = AsyncMongoClient(
                self.url,
                serverSelectionTimeoutMS=millis,
                connectTimeoutMS=millis,
                socketTimeoutMS=max(millis * 4, 10_000),
                tz_aware=True,
                tzinfo=UTC,
                appname="teamlore",
            )
            db = client.get_database(self.database, codec_options=CodecOptions(tz_aware=True, tzinfo=UTC))
            return client, db

        client, db = self._submit(loop, connect())
        try:
            if self._setup is not None:
                self._submit(loop, self._setup(db))
        except BaseException as exc:
            self._stop(loop, thread, client)
            del client, db
            # The error's traceback holds the setup's frames and, through their locals, the
            # client: clear them (the lines stay) so the collector finds its sockets now, not
            # whenever the error is dropped.
            _clear_locals(exc)
            _collect_leaked_sockets()
            raise
        self._client, self._db = client, db
        self._loop, self._thread, self._pid = loop, thread, os.getpid()

    def _stop(
        self,
        loop: asyncio.AbstractEventLoop,
        thread: threading.Thread | None,
        client: AsyncMongoClient[Document] | None,
    ) -> None:
        future = asyncio.run_coroutine_threadsafe(_shutdown(client), loop)
        future.result(timeout=self.timeout_s + 5)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        loop.close()

    def close(self) -> None:
        with self._lock:
            loop, client, thread = self._loop, self._client, self._thread
            self._loop = self._client = self._db = self._thread = None
            if loop is None or self._pid != os.getpid():
                return
        self._stop(loop, thread, client)
        del client, loop, thread
        _collect_leaked_sockets()


async def _shutdown(client: AsyncMongoClient[Document] | None) -> None:
    """Close the client, then end what it left running (server monitors mid-check), so no
    socket is left for the garbage collector to find."""
    if client is not None:
        await client.close()
    current = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not current]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


def _clear_locals(exc: BaseException) -> None:
    """Clear the locals of the finished frames in ``exc``'s tracebacks (and its causes')."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        current = current.__cause__ or current.__context__


def _collect_leaked_sockets() -> None:
    """PyMongo's async connect leaks its socket when a server monitor is cancelled mid-connect
    (``pool_shared._async_create_connection`` closes it on OSError only), which closing a client
    can do. Collect such sockets now, quietly, rather than let a ResourceWarning surface later in
    unrelated code; the collector closes them either way."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
