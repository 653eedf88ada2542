"""Wiring: build the stores, the pipeline and the read path once, from Settings."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from teamlore.capabilities.erasure import ErasureReport, erase_author
from teamlore.capabilities.facts import FactReader
from teamlore.capabilities.review import ReviewDesk
from teamlore.config import Settings
from teamlore.embedding import CachedEmbedder, Embedder, build_embedder
from teamlore.extraction import Extractor, HeuristicExtractor
from teamlore.stores.embedded import EmbeddedStores
from teamlore.timeutil import utc_now
from teamlore.workers.pipeline import PipelineDeps


class Teamlore:
    """One running instance on the embedded default: stores, pipeline deps, reader."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.stores = EmbeddedStores(settings.db_path)
        self.embedder = CachedEmbedder(embedder or build_embedder(settings), self.stores.embeddings)
        self.clock = clock
        self.pipeline = PipelineDeps(
            facts=self.stores.facts,
            messages=self.stores.messages,
            transaction=self.stores.transaction,
            extractor=extractor or HeuristicExtractor(),
            embedder=self.embedder,
            clock=clock,
            review=self.stores.review,
            tombstones=self.stores.tombstones,
        )
        self.reader = FactReader(
            self.stores.facts, self.stores.messages, self.stores.audit, self.embedder, clock
        )

        self.review = ReviewDesk(
            facts=self.stores.facts,
            review=self.stores.review,
            tombstones=self.stores.tombstones,
            audit=self.stores.audit,
            embedder=self.embedder,
            resolver_for=self.pipeline.resolver_for,
            clock=clock,
        )

    def erase_author(self, workspace: str, author_id: str, actor: str) -> ErasureReport:
        return erase_author(self.stores, workspace, author_id, actor, self.pipeline.resolver_for, self.clock)

    def close(self) -> None:
        self.stores.close()
