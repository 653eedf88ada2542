"""The per-statement queries of the write path find their rows through an index, so their cost
does not grow with the store (issue 20): checked on the plan SQLite chooses for a real file."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from teamlore.stores.embedded import EmbeddedStores


@pytest.fixture
def conn(tmp_path):
    stores = EmbeddedStores(tmp_path / "t.sqlite3")
    yield stores.db.conn
    stores.close()


def _plan(conn, sql: str) -> str:
    return " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ("x",) * sql.count("?")))


def test_rewriting_a_facts_evidence_searches_by_fact_id(conn):
    plan = _plan(conn, "DELETE FROM fact_evidence WHERE fact_id = ?")
    assert "USING COVERING INDEX fact_evidence_fact" in plan or "USING INDEX fact_evidence_fact" in plan, plan
    # Control: a lookup by a column no index leads with is a scan, so the check above can fail.
    assert "SCAN fact_evidence" in _plan(conn, "SELECT * FROM fact_evidence WHERE channel = ?")


def _traced_plans(stores: EmbeddedStores, call) -> list[str]:
    """The plan of every statement ``call`` runs, as SQLite chooses it for the bound values."""
    seen: list[str] = []
    stores.db.conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        stores.db.conn.set_trace_callback(None)
    return [_plan(stores.db.conn, sql) for sql in seen if sql.lstrip().upper().startswith("SELECT")]


def test_a_replys_previous_reply_is_found_through_the_thread_index(tmp_path):
    stores = EmbeddedStores(tmp_path / "t.sqlite3")
    try:
        posted = datetime(2026, 1, 5, 10, tzinfo=UTC)
        plans = _traced_plans(stores, lambda: stores.message_index.before("T1", "C1", "m2", "m1", posted))
        assert any("USING INDEX message_versions_thread" in p for p in plans), plans
        # Control: a top-level message's neighbour is found by time, not through the thread index.
        plans = _traced_plans(stores, lambda: stores.message_index.before("T1", "C1", "m2", None, posted))
        assert plans and not any("message_versions_thread" in p for p in plans), plans
    finally:
        stores.close()
