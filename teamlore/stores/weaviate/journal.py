"""Undo for writes Weaviate cannot roll back.

The pipeline runs each event in a SQLite savepoint: when the event fails, its messages, audit
events and dirty marks are undone. Weaviate has no transactions, so each fact write records how
to undo itself here (delete the version it inserted, reopen the version it closed), and the
stores' transaction runs those undos when the SQLite side rolls back. Frames nest exactly as the
SQLite transaction and savepoints do.

Those undos live in the process. A process killed between its Weaviate writes and its commit
(the server stack's MongoDB transaction) runs none of them; so in the server stack each write
first describes its undo as data (``Step``) to a write-ahead log outside the process (``ahead``,
Redis's: ``stores.redis.undo_log``), and whoever next takes the channel applies what a dead
holder left there (``apply_step``) before it writes anything itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from teamlore.errors import LeaseLost

log = logging.getLogger(__name__)

Undo = Callable[[], None]
# An undo as data: {"collection": "facts" | "messages", "uuid": str, "kind": "delete" | "update" |
# "replace", "properties": {...}, "vector": {...} | None}: delete the object, set these properties
# on it, or write it again whole.
Step = dict[str, Any]


class AheadLog(Protocol):
    """Where a write's undo goes before the write (kept if the process dies before its commit)."""

    def append(self, channel: tuple[str, str], what: str, step: Step) -> None: ...


def apply_step(collection: Any, step: Step) -> None:
    """Carry out one undo ``Step`` on ``collection`` (its own: the step names which)."""
    kind, object_id = step["kind"], step["uuid"]
    if kind == "delete":
        collection.data.delete_by_id(object_id)
    elif kind == "update":
        collection.data.update(uuid=object_id, properties=step["properties"])
    elif kind == "replace":
        collection.data.delete_by_id(object_id)
        collection.data.insert(properties=step["properties"], uuid=object_id, vector=step.get("vector"))
    else:
        raise ValueError(f"unknown undo step {kind!r}")


class UndoJournal:
    """Each thread's frames of undos, nested as the SQLite transaction and its savepoints are."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.ahead: AheadLog | None = None  # set by the worker in the server stack

    def intend(self, channel: tuple[str, str], what: str, step: Step) -> None:
        """Before a write: log its undo ahead of it, when a write-ahead log is set."""
        if self.ahead is not None:
            self.ahead.append(channel, what, step)

    def _stack(self) -> list[list[tuple[str, Undo]]]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    @contextmanager
    def frame(self, savepoint: bool = False) -> Iterator[None]:
        """A unit of work: its writes are undone if the block raises. Inside an open frame and
        without ``savepoint`` it simply joins the enclosing one (as SQLite does)."""
        stack = self._stack()
        if stack and not savepoint:
            yield
            return
        stack.append([])
        try:
            yield
        except LeaseLost:
            # The channel passed to another worker, which undoes these writes from the log ahead
            # before it writes; undoing them here, later, could undo what it wrote since.
            undos = stack.pop()
            if self.ahead is None:
                run_undos(undos)
            raise
        except BaseException:
            run_undos(stack.pop())
            raise
        done = stack.pop()
        if stack:
            stack[-1].extend(done)  # the enclosing frame may still roll back

    def record(self, what: str, undo: Undo) -> None:
        """Remember how to undo a write that succeeded (nothing to remember outside a frame)."""
        stack = self._stack()
        if stack:
            stack[-1].append((what, undo))


def run_undos(undos: list[tuple[str, Undo]]) -> None:
    """Newest first; an undo that fails is logged with what it was, and the rest still run."""
    for what, undo in reversed(undos):
        try:
            undo()
        except Exception as exc:  # the store may be the reason we are rolling back at all
            log.error("could not undo %s in Weaviate (fix by hand or re-run the event): %s", what, exc)
