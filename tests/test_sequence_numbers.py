"""Sequence numbers (``Database.next_seq``) are counted in memory inside a transaction and
written back as it commits: every connection sees them as if each had been written at once."""

from __future__ import annotations

import threading

import pytest

from teamlore.stores.database import Database


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "t.sqlite3")
    yield database
    database.close()


def _in_another_thread(db: Database, name: str) -> int:
    """The next number as another connection (another thread) counts it, outside a transaction."""
    got: list[int] = []
    worker = threading.Thread(target=lambda: got.append(db.next_seq(name)))
    worker.start()
    worker.join()
    return got[0]


def test_numbers_counted_in_a_transaction_are_stored_when_it_commits(db):
    with db.transaction():
        assert [db.next_seq("fact_seq") for _ in range(3)] == [1, 2, 3]
        assert db.next_seq("dirty_seq") == 1
        assert db.counter("fact_seq") == 3
    # Another connection continues after them: no number is handed out twice.
    assert _in_another_thread(db, "fact_seq") == 4
    assert _in_another_thread(db, "dirty_seq") == 2
    with db.transaction():
        assert db.next_seq("fact_seq") == 5
    assert db.next_seq("fact_seq") == 6  # outside a transaction: counted in the file at once
    assert db.counter("fact_seq") == 6


def test_a_rolled_back_savepoint_gives_its_numbers_back_and_the_rest_are_kept(db):
    with db.transaction():
        assert db.next_seq() == 1
        with pytest.raises(RuntimeError), db.transaction(savepoint=True):
            assert db.next_seq() == 2
            with db.transaction(savepoint=True):
                assert db.next_seq() == 3
            raise RuntimeError("undo this savepoint")
        assert db.next_seq() == 2  # as if the savepoint had never counted
        with db.transaction(savepoint=True):
            assert db.next_seq() == 3  # a released savepoint keeps its numbers
    assert _in_another_thread(db, "fact_seq") == 4


def test_a_rolled_back_transaction_leaves_the_counter_as_it_was(db):
    with db.transaction():
        db.next_seq()
    with pytest.raises(RuntimeError), db.transaction():
        assert db.next_seq() == 2
        raise RuntimeError("undo everything")
    assert db.counter("fact_seq") == 1
    with db.transaction():
        assert db.next_seq() == 2
