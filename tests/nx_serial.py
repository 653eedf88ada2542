"""nx-27017 with its transactions isolated, for tests where several processes commit at once.

nx-27017 keeps one SQLite connection per database for all its clients, so a transaction is not
isolated: two sessions' transactions nest as savepoints of one another (one's commit takes the
other's half-written writes with it, the other's commit then fails), another client reads what an
open transaction wrote before it commits, and its abort takes with it what other clients wrote
meanwhile; and a client that dies with a transaction open leaves it open for good. MongoDB
isolates transactions and aborts one that outlives ``transactionLifetimeLimitSeconds``.

Here, while a session's transaction is open, every command of any other session waits until it
ends (serializable: stricter than MongoDB's snapshot isolation, never looser), and a transaction
open longer than ``LIFETIME_S`` while others wait (its client died) is aborted, so its client's
later commit is refused. Run as ``python -m tests.nx_serial`` with nx-27017's own arguments.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from nx_27017 import server
from nx_27017.handler import NeoSQLiteHandler
from nx_27017.nx_27017 import main
from nx_27017.wire_protocol import _extract_session_id

LIFETIME_S = 15.0

_turn = threading.Condition()
_open: list[tuple[str, float]] = []  # the session whose transaction is open, and since when


def _command(msg: dict[str, Any]) -> dict[str, Any]:
    bodies = (doc for kind, doc in msg.get("sections", []) if kind == "body" and isinstance(doc, dict))
    return next(bodies, {})


def _in_turn(handle: Any) -> Any:
    def handled(self: NeoSQLiteHandler, msg: dict[str, Any]) -> Any:
        command = _command(msg)
        lsid = _extract_session_id(command.get("lsid") or {}) or ""
        with _turn:
            while _open and _open[0][0] != lsid:
                holder, since = _open[0]
                if time.monotonic() - since > LIFETIME_S:  # its client died mid-transaction
                    for session in self._tx_sessions(holder):
                        with contextlib.suppress(Exception):
                            session.abort_transaction()
                    _open.clear()
                    break
                _turn.wait(0.1)
            if command.get("startTransaction") and lsid and not _open:
                _open[:] = [(lsid, time.monotonic())]
        ending = {lsid} if "commitTransaction" in command or "abortTransaction" in command else set()
        for ended in command.get("endSessions") or []:
            ending.add(_extract_session_id(ended) or "" if isinstance(ended, dict) else str(ended))
        try:
            return handle(self, msg)
        finally:
            if ending:
                with _turn:
                    if _open and _open[0][0] in ending:
                        _open.clear()
                    _turn.notify_all()

    return handled


NeoSQLiteHandler.handle_command = _in_turn(NeoSQLiteHandler.handle_command)  # type: ignore[method-assign]
NeoSQLiteHandler.handle_insert = _in_turn(NeoSQLiteHandler.handle_insert)  # type: ignore[method-assign]

_run_server = server.run_server


async def _with_threads(*args: Any) -> Any:
    # Commands that wait hold a thread each: enough threads that the open transaction's own
    # commands always find one.
    import asyncio

    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(64))
    return await _run_server(*args)


server.run_server = _with_threads  # type: ignore[assignment]

if __name__ == "__main__":
    sys.argv[0] = "nx-27017"
    sys.exit(main())
