"""Keys of accepted signed pushes in SQLite, so a replayed request is refused."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime

from teamlore.stores.database import Database
from teamlore.timeutil import to_micros


class EmbeddedReplayGuard:
    def __init__(self, db: Database) -> None:
        self._db = db

    def claim(self, keys: Iterable[str], at: datetime, forget_before: datetime) -> bool:
        rows = [(key, to_micros(at)) for key in dict.fromkeys(keys)]
        try:
            # A savepoint: inside the caller's transaction a duplicate undoes only these inserts.
            with self._db.transaction(savepoint=True) as conn:
                conn.execute("DELETE FROM push_seen WHERE at < ?", (to_micros(forget_before),))
                conn.executemany("INSERT INTO push_seen VALUES (?, ?)", rows)
        except sqlite3.IntegrityError:
            return False
        return True
