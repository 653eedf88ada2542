"""The embedded default: every store in one SQLite file, no servers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from teamlore.embedding import EmbeddingCache
from teamlore.stores.database import Database
from teamlore.stores.embedded.audit import EmbeddedAuditLog
from teamlore.stores.embedded.facts import EmbeddedFactBackend
from teamlore.stores.embedded.files import EmbeddedFileStore, FolderBlobStore
from teamlore.stores.embedded.llm import EmbeddedModelCache, EmbeddedSpendLedger
from teamlore.stores.embedded.message_index import EmbeddedMessageIndex
from teamlore.stores.embedded.messages import (
    EmbeddedEmbeddingCache,
    EmbeddedEventLedger,
    EmbeddedMessageStore,
)
from teamlore.stores.embedded.push import EmbeddedReplayGuard
from teamlore.stores.embedded.review import EmbeddedReviewQueue, EmbeddedTombstones
from teamlore.stores.embedded.tokens import EmbeddedCheckpointStore, EmbeddedTokenStore
from teamlore.stores.embedded.wiki import EmbeddedDirtySet, EmbeddedPageStore
from teamlore.stores.hashing import KeyedAuditLog, text_key
from teamlore.stores.protocols import (
    BlobStore,
    CheckpointStore,
    FactBackend,
    FileStore,
    MessageIndex,
    MessageStore,
    ModelCache,
    PageStore,
    RemoteFactBackend,
    ReplayGuard,
    ReviewQueue,
    SpendLedger,
    TokenStore,
    Tombstones,
)


class EmbeddedStores:
    """The bundle of embedded stores sharing one database file."""

    def __init__(self, path: Path | str, hash_secret: str = "") -> None:
        self.db = Database(path)
        # Keys the text hashes that outlive an erasure (see ``teamlore.stores.hashing``).
        self.text_key = text_key(hash_secret, self.db.path.parent)
        self.audit = KeyedAuditLog(EmbeddedAuditLog(self.db), self.text_key)
        self.facts: FactBackend = EmbeddedFactBackend(self.db, self.audit)
        self._remote_facts: RemoteFactBackend | None = None
        self.messages: MessageStore = EmbeddedMessageStore(self.db)
        # In the file unless a server holds it (``use_message_index``: Weaviate); docs/stores.md.
        self.message_index: MessageIndex = EmbeddedMessageIndex(self.db)
        self.ledger = EmbeddedEventLedger(self.db)
        # Passage vectors; the file's fact store and message index read this table directly.
        self.embeddings: EmbeddingCache = EmbeddedEmbeddingCache(self.db)
        self.review: ReviewQueue = EmbeddedReviewQueue(self.db)
        self.tombstones: Tombstones = EmbeddedTombstones(self.db)
        self.pages: PageStore = EmbeddedPageStore(self.db)
        self.dirty = EmbeddedDirtySet(self.db)
        self.spend: SpendLedger = EmbeddedSpendLedger(self.db)
        self.model_cache: ModelCache = EmbeddedModelCache(self.db)
        self.tokens: TokenStore = EmbeddedTokenStore(self.db)
        self.push_seen: ReplayGuard = EmbeddedReplayGuard(self.db)
        self.checkpoints: CheckpointStore = EmbeddedCheckpointStore(self.db)
        # Shared files: their state in the file, their bytes in a folder beside it (docs/files.md).
        self.files: FileStore = EmbeddedFileStore(self.db)
        self.blobs: BlobStore = FolderBlobStore.beside(self.db.path)

    def use_message_index(self, index: MessageIndex) -> None:
        """Keep the message index in a server store (Weaviate, beside its facts): its writes must
        join the fact store's unit of work (``transaction``)."""
        self.message_index = index

    @property
    def remote_facts(self) -> RemoteFactBackend | None:
        """The server fact store, when facts are on one (``use_facts``)."""
        return self._remote_facts

    def use_facts(self, facts: RemoteFactBackend) -> None:
        """Keep facts in a server store (Weaviate); the SQLite file keeps the rest."""
        self.facts = self._remote_facts = facts

    @contextmanager
    def transaction(self, savepoint: bool = False) -> Iterator[object]:
        """A transaction on the file; a server fact store's writes join it (undone if it rolls
        back, before the file's own rollback)."""
        with self.db.transaction(savepoint) as conn:
            if self._remote_facts is None:
                yield conn
                return
            with self._remote_facts.unit_of_work(savepoint):
                yield conn

    def fenced(self, fences: Mapping[str, int]) -> AbstractContextManager[None]:
        """Commits on this thread inside the block check the channel locks' fencing tokens (a
        channel's lock key -> token); the file's own write lock orders every commit, so here
        there is nothing to check."""
        return nullcontext()

    def ping(self) -> None:
        """Raise if the stores cannot answer (the readiness probe)."""
        self.db.conn.execute("SELECT 1").fetchone()

    def scrub(self) -> None:
        """After an erasure: leave no copy of erased text in the file (``Database.scrub``)."""
        self.db.scrub()

    def warm(self) -> int:
        """Load what searches hold in memory (the fact and message indexes of the file) now, not
        at the first search; the rows held. A fact store on a server holds nothing here."""
        held = self.message_index.warm() if isinstance(self.message_index, EmbeddedMessageIndex) else 0
        if isinstance(self.facts, EmbeddedFactBackend):
            held += self.facts.warm()
        return held

    def close(self) -> None:
        if self._remote_facts is not None:
            self._remote_facts.close()
        self.db.close()


__all__ = ["EmbeddedStores", "Database"]
