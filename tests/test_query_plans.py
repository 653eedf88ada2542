"""The per-statement queries of the write path find their rows through an index, so their cost
does not grow with the store (issue 20): checked on the plan SQLite chooses for a real file."""

from __future__ import annotations

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
