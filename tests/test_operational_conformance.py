"""The stores no event's transaction touches (API tokens, backfill checkpoints, the model spend
ledger and breakers, the model cache, the push replay guard): one suite, run on the embedded
SQLite stores, on the MongoDB stores on nx-27017 (a real MongoDB with TEAMLORE_TEST_MONGO_URL),
and for the replay guard on Redis."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import (
    BreakerRow,
    Checkpoint,
    FileRecord,
    FileStatus,
    ReplayGuard,
    SpendRow,
    TokenRecord,
)

from . import test_store_conformance as _conformance
from .mongo_server import drop_database, fresh_database

REDIS_URL = "redis://127.0.0.1:6379/0"  # the machine's Redis; every test a key prefix of its own
T0 = _conformance.T0
# The same store bundles as the other conformance suite: one per kind (embedded, nx-27017, ...).
store_kind = _conformance.store_kind
stores = _conformance.stores


def token(token_id: str, workspace: str = "T1", at: datetime = T0, **changes: object) -> TokenRecord:
    fields: dict[str, object] = {
        "token_id": token_id,
        "name": f"bot-{token_id}",
        "role": "reader",
        "workspace": workspace,
        "channels": ("C1", "C2"),
        "secret_sha256": "ab" * 32,
        "created_at": at,
    }
    fields.update(changes)
    return TokenRecord(**fields)  # type: ignore[arg-type]


# ---- TokenStore ----


def test_a_token_reads_back_field_for_field_and_an_unknown_id_is_none(stores):
    stores.tokens.add(token("a1", channels=()))
    assert stores.tokens.get("a1") == token("a1", channels=())
    assert stores.tokens.get("a2") is None  # control: another id


def test_tokens_list_in_creation_order_all_or_of_one_workspace(stores):
    stores.tokens.add(token("c", at=T0 + timedelta(seconds=2)))
    stores.tokens.add(token("a", workspace="T2", at=T0 + timedelta(seconds=1)))
    stores.tokens.add(token("b", at=T0 + timedelta(microseconds=5)))
    assert [r.token_id for r in stores.tokens.all()] == ["b", "a", "c"]
    assert [r.token_id for r in stores.tokens.all("T1")] == ["b", "c"]
    assert stores.tokens.all("T3") == []


def test_a_token_is_revoked_once_with_its_time_and_others_stay_live(stores):
    stores.tokens.add(token("a"))
    stores.tokens.add(token("b"))
    at = T0 + timedelta(hours=1, microseconds=3)
    assert stores.tokens.revoke("a", at) is True
    assert stores.tokens.revoke("a", at + timedelta(hours=1)) is False  # already revoked
    assert stores.tokens.revoke("zz", at) is False  # unknown
    assert stores.tokens.get("a") == token("a", revoked_at=at)
    assert stores.tokens.get("b") == token("b")  # control: untouched


# ---- CheckpointStore ----


def test_a_checkpoint_is_per_platform_workspace_and_channel_and_the_latest_put_wins(stores):
    cp = stores.checkpoints
    assert cp.get("slack", "T1", "C1") is None
    cp.put("slack", "T1", "C1", Checkpoint("cur-1", False, 10), T0)
    cp.put("slack", "T1", "C1", Checkpoint("cur-2", True, 25), T0 + timedelta(seconds=1))
    cp.put("discord", "T1", "C1", Checkpoint("d-1", False, 3), T0)
    assert cp.get("slack", "T1", "C1") == Checkpoint("cur-2", True, 25)
    assert cp.get("discord", "T1", "C1") == Checkpoint("d-1", False, 3)
    assert cp.get("slack", "T1", "C2") is None  # controls: another channel, workspace
    assert cp.get("slack", "T2", "C1") is None


# ---- SpendLedger ----


def test_spend_adds_up_per_role_and_model_sorted(stores):
    ledger = stores.spend
    ledger.record(SpendRow("judge", "m1", calls=1, prompt_tokens=100, completion_tokens=7))
    ledger.record(SpendRow("extract", "m1", failures=1))
    ledger.record(SpendRow("judge", "m1", calls=2, cache_hits=1, prompt_tokens=50))
    ledger.record(SpendRow("judge", "m2", fallbacks=1, rejected=2))
    assert ledger.totals() == [
        SpendRow("extract", "m1", failures=1),
        SpendRow("judge", "m1", calls=3, cache_hits=1, prompt_tokens=150, completion_tokens=7),
        SpendRow("judge", "m2", fallbacks=1, rejected=2),
    ]


def test_a_breaker_keeps_its_latest_state_with_its_times(stores):
    ledger = stores.spend
    opened = BreakerRow("judge", "open", 3, T0, T0 + timedelta(seconds=30, microseconds=9))
    ledger.set_breaker(BreakerRow("judge", "closed", 0, T0 - timedelta(minutes=1)))
    ledger.set_breaker(opened)
    ledger.set_breaker(BreakerRow("answer", "half_open", 5, T0 + timedelta(microseconds=1)))
    assert ledger.breakers() == [BreakerRow("answer", "half_open", 5, T0 + timedelta(microseconds=1)), opened]


# ---- ModelCache ----


def test_the_model_cache_returns_what_was_put_last_and_clear_empties_it(stores):
    cache = stores.model_cache
    assert cache.get("k1") is None
    cache.put("k1", "judge", "m1", '{"v": 1}')
    cache.put("k1", "judge", "m1", '{"v": 2}')
    cache.put("k2", "write", "m1", "naïve ☃")
    assert cache.get("k1") == '{"v": 2}' and cache.get("k2") == "naïve ☃"
    assert cache.clear() == 2
    assert cache.get("k1") is None and cache.get("k2") is None
    assert cache.clear() == 0


def test_with_mongodb_none_of_these_records_is_kept_in_the_file(stores, store_kind):
    stores.tokens.add(token("a1"))
    stores.checkpoints.put("slack", "T1", "C1", Checkpoint("c", False, 1), T0)
    stores.spend.record(SpendRow("judge", "m1", calls=1))
    stores.spend.set_breaker(BreakerRow("judge", "open", 3, T0))
    stores.model_cache.put("k1", "judge", "m1", "v")
    tables = ("api_tokens", "backfill_checkpoints", "llm_spend", "llm_breakers", "llm_cache")
    rows = {t: stores.db.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    # The control: the embedded stores keep each in the file.
    assert rows == dict.fromkeys(tables, 1 if store_kind == "embedded" else 0)


# ---- ReplayGuard: the file's, and Redis's (the server stack's) ----


@pytest.fixture(params=["embedded", "redis"])
def guard(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReplayGuard]:
    if request.param == "embedded":
        bundle = EmbeddedStores(tmp_path / "g.sqlite3")
        yield bundle.push_seen
        bundle.close()
        return
    from teamlore.stores.redis.replay_guard import RedisReplayGuard

    redis_guard = RedisReplayGuard.from_url(REDIS_URL, prefix=f"test:{uuid.uuid4().hex}:")
    yield redis_guard
    redis_guard.close()


def test_a_claimed_key_is_refused_until_it_is_forgotten(guard):
    window = timedelta(minutes=10)
    assert guard.claim(["key:a", "sig:1"], T0, T0 - window) is True
    assert guard.claim(["key:a", "sig:2"], T0 + timedelta(minutes=1), T0 - window) is False
    assert guard.claim(["key:b", "sig:1"], T0 + timedelta(minutes=1), T0 - window) is False
    later = T0 + window + timedelta(seconds=1)
    assert guard.claim(["key:a", "sig:1"], later, later - window) is True  # forgotten by then


def test_a_refused_claim_remembers_none_of_its_keys(guard):
    window = timedelta(minutes=10)
    assert guard.claim(["key:a"], T0, T0 - window) is True
    assert guard.claim(["key:b", "key:a"], T0, T0 - window) is False
    assert guard.claim(["key:b"], T0, T0 - window) is True  # control: key:b was not kept


# ---- moving to MongoDB: what an older Teamlore kept in the file is adopted once ----


def test_opening_mongodb_beside_an_old_file_adopts_what_it_kept_once(tmp_path, nx_server):
    """Tokens, checkpoints, ledger keys, file records, and the writes its outbox still held."""
    from teamlore.stores.mongo.codec import Op
    from teamlore.stores.with_mongo import MongoStores

    path = tmp_path / "old.sqlite3"
    old = EmbeddedStores(path)
    old.tokens.add(token("t1"))
    old.checkpoints.put("slack", "T1", "C1", Checkpoint("cur", False, 7), T0)
    old.ledger.record("slack\x1fT1\x1fC1\x1f1.1\x1f", "stored", T0)
    record = FileRecord("T1", "C1", "1.1", 0, "a.pdf", "ab" * 32, 3, FileStatus.EXTRACTED, "", 1, 2, 1, T0)
    old.files.put(record)
    with old.db.transaction() as conn:  # a write an older process committed but never applied
        conn.execute("CREATE TABLE mongo_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, op BLOB NOT NULL)")
        op = Op("channels", "update_one", {"_id": "T1/C9"}, {"$set": {"name": "left"}}, upsert=True)
        conn.execute("INSERT INTO mongo_outbox (op) VALUES (?)", (op.encode(),))
    old.close()
    database, other = fresh_database(), fresh_database()
    try:
        first = MongoStores(path, nx_server, database, timeout_s=5)
        assert first.tokens.get("t1") == token("t1")
        assert first.checkpoints.get("slack", "T1", "C1") == Checkpoint("cur", False, 7)
        assert first.ledger.seen("slack\x1fT1\x1fC1\x1f1.1\x1f")
        assert not first.ledger.seen("slack\x1fT1\x1fC1\x1f1.2\x1f")  # control
        assert first.files.get("T1", "C1", "1.1", 0) == record
        assert first.runtime.run(lambda db: db["channels"].find_one({"_id": "T1/C9"}))["name"] == "left"
        assert first.db.conn.execute("SELECT count(*) FROM mongo_outbox").fetchone()[0] == 0
        assert first.tokens.revoke("t1", T0 + timedelta(hours=1)) is True
        first.checkpoints.put("slack", "T1", "C1", Checkpoint("later", True, 9), T0)
        first.files.put(dataclasses.replace(record, status=FileStatus.FAILED))
        first.close()
        again = MongoStores(path, nx_server, database, timeout_s=5)  # the file still holds the old rows
        assert again.tokens.get("t1") == token("t1", revoked_at=T0 + timedelta(hours=1))
        assert again.checkpoints.get("slack", "T1", "C1") == Checkpoint("later", True, 9)
        assert again.files.get("T1", "C1", "1.1", 0).status is FileStatus.FAILED  # not undone
        assert again.runtime.run(lambda db: db["event_ledger"].count_documents({})) == 1
        again.close()
        fresh = MongoStores(tmp_path / "new.sqlite3", nx_server, other, timeout_s=5)
        assert fresh.tokens.get("t1") is None  # control: a new data folder brings nothing
        fresh.ledger.record("k", "stored", T0)
        assert fresh.ledger.seen("k")
        fresh.close()
        assert not (tmp_path / "new.sqlite3").exists()  # and no file was made for it
    finally:
        drop_database(nx_server, database)
        drop_database(nx_server, other)
