"""The server configuration: the SQLite file with MongoDB beside it for messages, channels, the
audit log, review items, tombstones, pages, page versions and the routing index (written through
the file's outbox), and for what no event's transaction touches: API tokens, backfill
checkpoints and high-water marks, the model spend ledger and breaker states, the model cache,
the embedding cache and shared files' bytes (GridFS; all written straight to MongoDB). Facts
and the message index go to Weaviate (``use_facts``; ``teamlore.app`` refuses MongoDB without it,
since the file's fact store and message index read vectors from the file's own table).
Everything else stays where ``EmbeddedStores`` keeps it: the ledger of applied events, shared
files' records, the push replay guard (Redis when configured, see ``teamlore.app``) and the
dirty set (or Redis)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.embedded.facts import EmbeddedFactBackend
from teamlore.stores.embedded.tokens import EmbeddedTokenStore
from teamlore.stores.hashing import KeyedAuditLog
from teamlore.stores.mongo.audit import MongoAuditLog
from teamlore.stores.mongo.blobs import MongoBlobStore
from teamlore.stores.mongo.embeddings import MongoEmbeddingCache
from teamlore.stores.mongo.journal import WriteJournal
from teamlore.stores.mongo.llm import MongoModelCache, MongoSpendLedger
from teamlore.stores.mongo.messages import MongoMessageStore
from teamlore.stores.mongo.operational import MongoCheckpointStore, MongoTokenStore
from teamlore.stores.mongo.pages import MongoPageStore
from teamlore.stores.mongo.review import MongoReviewQueue, MongoTombstones
from teamlore.stores.mongo.runtime import MongoRuntime
from teamlore.stores.mongo.schema import ensure_schema
from teamlore.stores.protocols import Checkpoint
from teamlore.timeutil import from_micros


class MongoStores(EmbeddedStores):
    """``EmbeddedStores`` with MongoDB holding what the design gives it.

    ``transaction`` is still the SQLite file's; the journaled stores' writes made inside one follow
    its commit (see ``journal``), while tokens, checkpoints, spend and both caches write at once.
    Opening connects, creates the indexes, checks the schema version, applies any writes a
    previous process committed but did not get to MongoDB, adopts the file's old tokens and
    checkpoints (``adopt_file_records``) and moves its old cached vectors (``move_file_vectors``).
    """

    def __init__(
        self, path: Path | str, url: str, database: str, timeout_s: float, hash_secret: str = ""
    ) -> None:
        super().__init__(path, hash_secret)
        self.runtime = MongoRuntime(url, database, timeout_s, setup=ensure_schema)
        try:
            self.journal = WriteJournal(self.db, self.runtime)
            self.audit = KeyedAuditLog(MongoAuditLog(self.runtime, self.journal), self.text_key)
            self.facts = EmbeddedFactBackend(self.db, self.audit)
            self.messages = MongoMessageStore(self.runtime, self.journal)
            self.review = MongoReviewQueue(self.runtime, self.journal)
            self.tombstones = MongoTombstones(self.runtime, self.journal)
            self.pages = MongoPageStore(self.runtime, self.journal)
            self.tokens = MongoTokenStore(self.runtime)
            self.checkpoints = MongoCheckpointStore(self.runtime)
            self.spend = MongoSpendLedger(self.runtime)
            self.model_cache = MongoModelCache(self.runtime)
            self.embeddings = MongoEmbeddingCache(self.runtime)
            self.blobs = MongoBlobStore(self.runtime)
            self.runtime.run(lambda mdb: mdb.command("ping"))  # connects, creates the indexes
            self.journal.replay()
            adopt_file_records(self)
            move_file_vectors(self)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.runtime.close()
        super().close()


def adopt_file_records(stores: MongoStores) -> int:
    """Copy the tokens and checkpoints an older Teamlore kept in this SQLite file into MongoDB,
    each only if MongoDB has none under its key (so running it again, or in several processes,
    copies nothing twice and never undoes a later revocation). Without it an upgrade would lock
    out every token and restart every backfill. Spend counts and the model cache start afresh."""
    copied = 0
    for record in EmbeddedTokenStore(stores.db).all():
        if stores.tokens.get(record.token_id) is None:
            stores.tokens.add(record)
            copied += 1
    rows = stores.db.conn.execute(
        "SELECT platform, workspace, channel, cursor, done, fetched, updated_at FROM backfill_checkpoints"
    ).fetchall()
    for platform, workspace, channel, cursor, done, fetched, updated_at in rows:
        if stores.checkpoints.get(platform, workspace, channel) is None:
            checkpoint = Checkpoint(cursor, bool(done), fetched)
            stores.checkpoints.put(platform, workspace, channel, checkpoint, from_micros(updated_at))
            copied += 1
    return copied


def move_file_vectors(stores: MongoStores, batch: int = 1000) -> int:
    """Move the vectors an older Teamlore cached in this SQLite file into MongoDB's embedding cache:
    copied where MongoDB has none under the key, then deleted from the file, a batch at a time.
    Moved, not copied: erasure's ``forget`` reaches MongoDB's cache only, so a copy left in the
    file would outlive it. Running it again (or in several processes at once) finds an empty
    table or copies a key twice to no effect. The vectors moved."""
    moved = 0
    while rows := stores.db.conn.execute(
        "SELECT key, model, vector FROM embeddings ORDER BY key LIMIT ?", (batch,)
    ).fetchall():
        by_model: dict[str, dict[str, np.ndarray]] = {}
        for key, model, blob in rows:
            by_model.setdefault(model, {})[key] = np.frombuffer(blob, dtype=np.float32)
        for model, vectors in by_model.items():
            stores.embeddings.put_vectors(model, vectors)
        with stores.db.transaction() as conn:
            conn.executemany("DELETE FROM embeddings WHERE key = ?", [(row[0],) for row in rows])
        moved += len(rows)
    return moved


__all__ = ["MongoStores", "adopt_file_records", "move_file_vectors"]
