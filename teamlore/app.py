"""Wiring: build the stores, the pipeline and the read path once, from Settings."""

from __future__ import annotations

import gc
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from teamlore.capabilities.access import Access
from teamlore.capabilities.activity import Activity, ActivityPage, ActivitySources, recent_activity
from teamlore.capabilities.answers import Answer, Composer, ask
from teamlore.capabilities.erasure import ErasureReport, erase_author
from teamlore.capabilities.explain import Cause, page_reasons
from teamlore.capabilities.facts import FactReader
from teamlore.capabilities.media import search_media_references
from teamlore.capabilities.pages import PageReader
from teamlore.capabilities.push import PushDesk
from teamlore.capabilities.review import ReviewDesk
from teamlore.config import Settings
from teamlore.domain import AttachmentKind, MediaReference, MessageEvent, ReadView, Scope
from teamlore.embedding import CachedEmbedder, Embedder, build_embedder
from teamlore.errors import ConfigurationError
from teamlore.extraction import Extractor, OfflineExtractor
from teamlore.extraction.offline import TRAINED_WITH
from teamlore.extras import require
from teamlore.files.fetch import (
    Fetcher,
    GraphFileFetcher,
    LinkFetcher,
    discord_source,
    mattermost_source,
    slack_source,
    teams_source,
)
from teamlore.files.media import MediaReader
from teamlore.files.sandbox import ReadLimits
from teamlore.graph_token import TokenProvider, client_credentials_token
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import FileRecord, RemoteFactBackend, ReplayGuard
from teamlore.stores.redis.dirty_set import RedisDirtySet
from teamlore.stores.redis.replay_guard import RedisReplayGuard
from teamlore.timeutil import utc_now
from teamlore.wiki.maintainer import WikiMaintainer
from teamlore.wiki.writer import PageWriter, TemplateWriter
from teamlore.workers.meaning import Meaning
from teamlore.workers.pipeline import IngestResult, PipelineDeps, ingest
from teamlore.workers.resolver import HeuristicResolver, Resolver
from teamlore.workers.shared_files import FileDeps, retry_failed, stage_carried, take_files

if TYPE_CHECKING:
    from teamlore.llm.client import ModelClient
    from teamlore.stores.weaviate.importer import CopyReport
    from teamlore.workers.producer import Producer

# Builds a server fact store beside the SQLite file (which keeps messages, audit, vectors, pages).
FactStoreFactory = Callable[[Settings, EmbeddedStores], RemoteFactBackend]


def open_weaviate(settings: Settings, stores: EmbeddedStores) -> RemoteFactBackend:
    """Facts and the message index on Weaviate (the server stack); the file keeps the rest."""
    # Imported here: the client (the weaviate extra) pulls in gRPC, which the embedded default never needs.
    require("weaviate")
    from teamlore.stores.weaviate import open_fact_store, open_message_index

    facts = open_fact_store(settings, stores.audit, stores.embeddings)
    try:
        stores.use_message_index(open_message_index(settings, facts, stores.embeddings))
    except BaseException:
        facts.close()
        raise
    return facts


def load_facts_into_weaviate(lore: Teamlore) -> CopyReport:
    """Copy every fact version of the SQLite file, with its vector, into the Weaviate collection
    (``teamlore weaviate load-facts``)."""
    require("weaviate")
    from teamlore.stores.embedded.facts import EmbeddedFactBackend
    from teamlore.stores.weaviate.facts import WeaviateFactBackend
    from teamlore.stores.weaviate.importer import copy_versions

    target = lore.stores.facts
    if not isinstance(target, WeaviateFactBackend):
        raise ConfigurationError("set TEAMLORE_WEAVIATE_URL to the server to load the facts into")
    source = EmbeddedFactBackend(lore.stores.db, lore.stores.audit)
    return copy_versions(source, target, lore.stores.embeddings, lore.settings.weaviate_batch_size)


def weaviate_message_collection(settings: Settings) -> str:
    """The Weaviate collection holding the message index: named after the fact collection."""
    from teamlore.stores.weaviate.schema import messages_collection

    return messages_collection(settings.weaviate_collection)


def load_messages_into_weaviate(lore: Teamlore) -> CopyReport:
    """Copy every version of the SQLite file's message index, with its vector, into the Weaviate
    message collection (``teamlore weaviate load-messages``): once, when a server stack whose
    message index was in the file starts keeping it on Weaviate."""
    require("weaviate")
    from teamlore.stores.embedded.message_index import EmbeddedMessageIndex
    from teamlore.stores.weaviate.importer import copy_versions
    from teamlore.stores.weaviate.messages import WeaviateMessageIndex

    target = lore.stores.message_index
    if not isinstance(target, WeaviateMessageIndex):
        raise ConfigurationError("set TEAMLORE_WEAVIATE_URL to the server to load the message index into")
    source = EmbeddedMessageIndex(lore.stores.db)
    return copy_versions(source, target, lore.stores.embeddings, lore.settings.weaviate_batch_size)


def open_stores(settings: Settings) -> EmbeddedStores:
    """Everything in the SQLite file, or (with TEAMLORE_MONGO_URL) MongoDB beside it for messages,
    pages, the audit log, review items, tombstones, tokens, checkpoints, model spend and cache,
    and the embedding cache. With MongoDB the facts and the message index must go to Weaviate
    (``Teamlore`` refuses to start otherwise: ``Settings.server_stack_problem``)."""
    if settings.mongo_url:
        require("mongo")
        from teamlore.stores.with_mongo import MongoStores  # pymongo loads only when configured

        s = settings
        return MongoStores(s.db_path, s.mongo_url, s.mongo_db, s.mongo_timeout_s, s.hash_secret)
    return EmbeddedStores(settings.db_path, settings.hash_secret)


def file_fetchers(settings: Settings, graph_token: TokenProvider | None = None) -> dict[str, Fetcher]:
    """How each platform's file links are fetched: with its token, when it needs one and one is
    configured (``files/fetch.py`` holds the rule: which origins, and where a token may go).
    ``graph_token``: Graph's app token other than from the Teams app settings (tests)."""
    timeout = settings.file_fetch_timeout_s
    fetchers: dict[str, Fetcher] = {
        "discord": LinkFetcher(discord_source(settings.discord_file_origins), timeout)
    }
    if settings.slack_bot_token:
        fetchers["slack"] = LinkFetcher(
            slack_source(settings.slack_bot_token, settings.slack_api_url), timeout
        )
    if settings.mattermost_token and settings.mattermost_url:
        source = mattermost_source(settings.mattermost_token, settings.mattermost_url)
        fetchers["mattermost"] = LinkFetcher(source, timeout)
    s = settings
    if graph_token is None and s.teams_app_id and s.teams_app_password and s.teams_tenant_id:
        graph_token = client_credentials_token(s.teams_tenant_id, s.teams_app_id, s.teams_app_password)
    if graph_token is not None:
        graph = teams_source(graph_token, s.teams_graph_url, s.teams_file_origins)
        fetchers["teams"] = GraphFileFetcher(graph, s.teams_graph_url, timeout)
    return fetchers


class Teamlore:
    """One running instance: stores, pipeline deps, reader."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        clock: Callable[[], datetime] = utc_now,
        writer: PageWriter | None = None,
        fact_store: FactStoreFactory | None = None,
    ) -> None:
        self.settings = settings
        # Refused before anything connects; a caller bringing its own fact store (a test's double
        # of Weaviate) has facts on a server without a URL.
        if fact_store is None:
            settings.check_server_stack()
        self.stores = open_stores(settings)
        fact_store = fact_store or (open_weaviate if settings.weaviate_url else None)
        if fact_store is not None:
            try:
                self.stores.use_facts(fact_store(settings, self.stores))
            except BaseException:
                self.stores.close()
                raise
        self.embedder = CachedEmbedder(embedder or build_embedder(settings), self.stores.embeddings)
        self.clock = clock
        self.llm = self._model_client()
        self.pipeline = PipelineDeps(
            facts=self.stores.facts,
            messages=self.stores.messages,
            index=self.stores.message_index,
            transaction=self.stores.transaction,
            extractor=extractor or self._extractor(),
            embedder=self.embedder,
            clock=clock,
            review=self.stores.review,
            tombstones=self.stores.tombstones,
            judge=self._judge_factory(),
            ledger=self.stores.ledger,
            meaning=Meaning.for_embedder(self.embedder),
            shared=bool(settings.redis_url),
        )
        self.reader = FactReader(
            self.stores.facts,
            self.stores.messages,
            self.stores.audit,
            self.embedder,
            clock,
            self.stores.message_index,
            HeuristicResolver(),
            beside=fact_store is not None,
        )

        self.review = ReviewDesk(
            facts=self.stores.facts,
            review=self.stores.review,
            tombstones=self.stores.tombstones,
            audit=self.stores.audit,
            embedder=self.embedder,
            resolver_for=self.pipeline.resolver_for,
            clock=clock,
            meaning=self.pipeline.meaning,
        )

        # The dirty set in Redis when one is configured (closed with the app: its connections
        # must not wait for the collector).
        self._redis_dirty = RedisDirtySet.from_url(settings.redis_url) if settings.redis_url else None
        self.wiki = WikiMaintainer(
            facts=self.stores.facts,
            pages=self.stores.pages,
            dirty=self._redis_dirty or self.stores.dirty,
            reader=self.reader,
            writer=writer or self._writer(),
            clock=clock,
            window=timedelta(seconds=settings.wiki_window_s),
            lease=timedelta(seconds=settings.wiki_lease_s),
        )
        self.pipeline.notify = self.wiki.note_changes
        self.files = FileDeps(
            pipeline=self.pipeline,
            files=self.stores.files,
            blobs=self.stores.blobs,
            fetchers=file_fetchers(settings),
            limits=ReadLimits(
                max_pages=settings.file_max_pages,
                max_chars=settings.file_max_chars,
                max_unzipped_bytes=settings.file_max_unzipped_bytes,
                timeout_s=settings.file_timeout_s,
                memory_mb=settings.file_memory_mb,
            ),
            max_bytes=settings.file_max_bytes,
            max_passages=settings.file_max_passages,
            max_chars=settings.max_message_chars,
            media=self._media_reader(),
        )
        self.review.notify = self.wiki.note_changes
        self.access = Access(
            self.stores.tokens, lambda ws: [c.channel for c in self.stores.messages.channels(ws)], clock
        )
        self.composer: Composer | None = self._composer()  # None: the extractive composer
        self.pages = PageReader(self.stores.pages, self.wiki)
        self._producer: Producer | None = None
        self._redis_guard: RedisReplayGuard | None = None
        self.push = PushDesk(
            secret=settings.push_secret,
            max_events=settings.push_max_events,
            max_bytes=settings.push_max_bytes,
            max_chars=settings.max_message_chars,
            guard=self._replay_guard(),
            clock=clock,
            ingest=self._ingest_counts,
            transaction=self.stores.transaction,
            enqueue=self._enqueue if settings.redis_url else None,
        )

    def _replay_guard(self) -> ReplayGuard:
        """In the server stack (MongoDB and Redis) the push replay guard is Redis's, shared by every
        API process; a push is then queued, so its claim is outside any transaction. Otherwise the
        file keeps it (inline, the claim shares the ingest's transaction)."""
        if not (self.settings.mongo_url and self.settings.redis_url):
            return self.stores.push_seen
        self._redis_guard = RedisReplayGuard.from_url(self.settings.redis_url)
        return self._redis_guard

    def ingest(self, events: list[MessageEvent]) -> list[IngestResult]:
        """Apply events here, in this process (no Redis, or a caller that must wait for them); then
        read the files they shared (after the batch committed: a file never holds a message up)."""
        results = ingest(events, self.pipeline)
        take_files(events, results, self.files)
        return results

    def stage_export_files(self, events: list[MessageEvent], export: Fetcher) -> int:
        """Before an import hands ``events`` to the workers: keep the files the export carries,
        for the workers to read (``shared_files.stage_carried``)."""
        return stage_carried(events, export, self.files)

    def retry_files(self, scope: Scope) -> list[FileRecord]:
        """Fetch and read again the scope's files whose fetch failed (part of re-index)."""
        return retry_failed(scope.workspace, sorted(scope.channels), self.files)

    def _ingest_counts(self, events: list[MessageEvent]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for result in self.ingest(events):
            counts[result.outcome.value] = counts.get(result.outcome.value, 0) + 1
        return counts

    def _enqueue(self, events: list[MessageEvent]) -> int:
        return self.producer().enqueue(events).spooled

    def producer(self) -> Producer:
        """The producer for Redis (only with TEAMLORE_REDIS_URL set)."""
        if self._producer is None:
            from teamlore.workers.producer import Producer  # celery loads only with Redis configured

            self._producer = Producer(self.settings)
        return self._producer

    def ask(self, question: str, scope: Scope, view: ReadView | None = None, k: int = 5) -> Answer:
        return ask(self.reader, question, scope, view, k, self.composer)

    def search_media_references(
        self, scope: Scope, query: str, kind: AttachmentKind | str | None = None, limit: int = 50
    ) -> list[MediaReference]:
        return search_media_references(self.stores.messages, scope, query, kind, limit, self.stores.files)

    def recent_activity(self, scope: Scope, since: datetime | None = None, limit: int = 50) -> list[Activity]:
        return self.activity_page(scope, since, limit).items

    def page_reasons(self, slug: str, scope: Scope) -> dict[int, list[Cause]]:
        """Why each version of a page was written (see ``explain.page_reasons``)."""
        return page_reasons(self.reader, self.stores.messages, self.pages, scope, slug)

    def activity_page(
        self,
        scope: Scope,
        since: datetime | None = None,
        limit: int = 50,
        before: int | None = None,
        after: int | None = None,
    ) -> ActivityPage:
        sources = ActivitySources(self.stores.audit, self.reader, self.stores.messages)
        return recent_activity(sources, scope, self.clock(), since, limit, before, after)

    def _media_reader(self) -> MediaReader | None:
        """Images and audio read by the vision and transcription models, when the endpoint and
        at least one of them are configured; None keeps them names only."""
        s = self.settings
        if self.llm is None or not (s.llm_model_vision or s.llm_model_transcribe):
            return None
        return MediaReader(self.llm, s.llm_model_vision, s.llm_model_transcribe, s.file_media_max_bytes)

    def _model_client(self) -> ModelClient | None:
        """The model client when TEAMLORE_LLM_BASE_URL is set; None keeps everything heuristic
        (and the ``openai`` package, the llm extra, unimported)."""
        if not self.settings.llm_base_url:
            return None
        require("llm")
        from teamlore.llm.client import ModelClient

        return ModelClient(self.settings, self.stores.spend)

    def _extractor(self) -> Extractor:
        if self.llm is None:
            return self._offline_extractor()
        from teamlore.llm.extractor import ModelExtractor

        s = self.settings
        return ModelExtractor(
            self.llm,
            self.stores.model_cache,
            self._offline_extractor(),
            s.llm_extract_batch_messages,
            s.llm_extract_window_s,
            s.llm_invalid_retries,
        )

    def _offline_extractor(self) -> OfflineExtractor:
        """Types statements with their vectors when the embedder is the one the head knows."""
        same = self.embedder.name == TRAINED_WITH
        vectors = self.embedder.vectors if same else None
        # With workers on Redis, another process may have stored new authors since the last batch.
        shared = bool(self.settings.redis_url)
        return OfflineExtractor(vectors, self.stores.messages.author_names, shared=shared)

    def _judge_factory(self) -> Callable[[HeuristicResolver], Resolver] | None:
        if self.llm is None:
            return None
        from teamlore.llm.judge import ModelJudge

        llm, cache, threshold = self.llm, self.stores.model_cache, self.settings.llm_judge_min_confidence
        return lambda rules: ModelJudge(llm, rules, cache, threshold)

    def _composer(self) -> Composer | None:
        if self.llm is None:
            return None
        from teamlore.llm.composer import ModelComposer

        return ModelComposer(self.llm, self.stores.model_cache)

    def _writer(self) -> PageWriter:
        if self.llm is None:
            return TemplateWriter()
        from teamlore.llm.page_writer import ModelPageWriter

        return ModelPageWriter(self.llm, TemplateWriter(), self.stores.model_cache)

    def erase_author(self, workspace: str, author_id: str, actor: str) -> ErasureReport:
        report = erase_author(self.stores, self.pipeline, workspace, author_id, actor)
        with self.stores.transaction():
            rewrite = self.stores.pages.purge_facts(report.facts_erased)
            self.wiki.dirty.mark(rewrite, [], self.clock(), timedelta(0))
            self.wiki.note_changes(report.facts_kept_without_their_evidence + report.facts_created)
        report.pages_rewritten = len(rewrite)
        # Last: no deleted copy of their words left in the file's free space or its WAL.
        self.stores.scrub()
        return report

    def warm(self) -> int:
        """Load the search indexes before serving (the first search would otherwise load them: 23 s
        at 100,000 facts with their messages) and keep what was loaded out of the cyclic garbage
        collector's full passes: it lives as long as the process, and a full pass over it took 65
        ms, a pause any search could fall into (docs/benchmarks.md). The rows held."""
        held = self.stores.warm()
        gc.freeze()
        return held

    def close(self) -> None:
        if self._redis_dirty is not None:
            self._redis_dirty.close()
        if self._redis_guard is not None:
            self._redis_guard.close()
        self.stores.close()
