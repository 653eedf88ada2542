"""The embedded default: every store in one SQLite file, no servers."""

from __future__ import annotations

from pathlib import Path

from teamlore.stores.embedded.audit import EmbeddedAuditLog
from teamlore.stores.embedded.database import Database
from teamlore.stores.embedded.facts import EmbeddedFactBackend
from teamlore.stores.embedded.llm import EmbeddedModelCache, EmbeddedSpendLedger
from teamlore.stores.embedded.messages import (
    EmbeddedEmbeddingCache,
    EmbeddedEventLedger,
    EmbeddedMessageStore,
)
from teamlore.stores.embedded.push import EmbeddedReplayGuard
from teamlore.stores.embedded.review import EmbeddedReviewQueue, EmbeddedTombstones
from teamlore.stores.embedded.tokens import EmbeddedCheckpointStore, EmbeddedTokenStore
from teamlore.stores.embedded.wiki import EmbeddedDirtySet, EmbeddedPageStore


class EmbeddedStores:
    """The bundle of embedded stores sharing one database file."""

    def __init__(self, path: Path | str) -> None:
        self.db = Database(path)
        self.audit = EmbeddedAuditLog(self.db)
        self.facts = EmbeddedFactBackend(self.db, self.audit)
        self.messages = EmbeddedMessageStore(self.db)
        self.ledger = EmbeddedEventLedger(self.db)
        self.embeddings = EmbeddedEmbeddingCache(self.db)
        self.review = EmbeddedReviewQueue(self.db)
        self.tombstones = EmbeddedTombstones(self.db)
        self.pages = EmbeddedPageStore(self.db)
        self.dirty = EmbeddedDirtySet(self.db)
        self.spend = EmbeddedSpendLedger(self.db)
        self.model_cache = EmbeddedModelCache(self.db)
        self.tokens = EmbeddedTokenStore(self.db)
        self.push_seen = EmbeddedReplayGuard(self.db)
        self.checkpoints = EmbeddedCheckpointStore(self.db)

    def transaction(self, savepoint: bool = False):
        return self.db.transaction(savepoint)

    def close(self) -> None:
        self.db.close()


__all__ = ["EmbeddedStores", "Database"]
