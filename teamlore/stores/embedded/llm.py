"""The model spend ledger and the cache of validated model output, in the SQLite file."""

from __future__ import annotations

from teamlore.stores.database import Database
from teamlore.stores.protocols import BreakerRow, SpendRow
from teamlore.timeutil import from_micros, to_micros

_COUNTS = ("calls", "failures", "fallbacks", "rejected", "cache_hits", "prompt_tokens", "completion_tokens")


class EmbeddedSpendLedger:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, row: SpendRow) -> None:
        # Joins an open transaction if there is one (a judge call inside an ingest): an event that
        # is undone then undoes its ledger line too, which under-counts rather than double-counts.
        values = [getattr(row, name) for name in _COUNTS]
        with self._db.transaction() as conn:
            conn.execute(
                f"INSERT INTO llm_spend (role, model, {', '.join(_COUNTS)}) VALUES (?,?,?,?,?,?,?,?,?)"
                f" ON CONFLICT (role, model) DO UPDATE SET "
                + ", ".join(f"{name} = {name} + excluded.{name}" for name in _COUNTS),
                (row.role, row.model, *values),
            )

    def totals(self) -> list[SpendRow]:
        rows = self._db.conn.execute(
            f"SELECT role, model, {', '.join(_COUNTS)} FROM llm_spend ORDER BY role, model"
        ).fetchall()
        return [SpendRow(*tuple(r)) for r in rows]

    def set_breaker(self, row: BreakerRow) -> None:
        # Like ``record``, joins an open transaction: a rolled-back batch loses the line (status
        # then shows the change before), never the breaker itself, which lives in the process.
        retry_at = None if row.retry_at is None else to_micros(row.retry_at)
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO llm_breakers VALUES (?,?,?,?,?)",
                (row.role, row.state, row.failures, to_micros(row.changed_at), retry_at),
            )

    def breakers(self) -> list[BreakerRow]:
        rows = self._db.conn.execute(
            "SELECT role, state, failures, changed_at, retry_at FROM llm_breakers ORDER BY role"
        ).fetchall()
        return [
            BreakerRow(r[0], r[1], r[2], from_micros(r[3]), None if r[4] is None else from_micros(r[4]))
            for r in rows
        ]


class EmbeddedModelCache:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        row = self._db.conn.execute("SELECT value FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, role: str, model: str, value: str) -> None:
        with self._db.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO llm_cache VALUES (?,?,?,?)", (key, role, model, value))

    def clear(self) -> int:
        with self._db.transaction() as conn:
            return conn.execute("DELETE FROM llm_cache").rowcount
