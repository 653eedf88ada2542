"""The message index in Weaviate: every version of every message's text, one object each, for
the server stack (``MessageIndex``; the embedded default keeps ``stores/embedded/message_index``).

Raw queries only, as in the file: scope and the time predicate are compiled into each
(``filters.readable_messages``: a message's valid time runs from its posted time, open-ended), and
nothing they return is shown before ``teamlore.capabilities.gate.visible`` has passed it. Weaviate
finds the pool (BM25 over the text and the speaker, cosine over the passage vector); ranking it
with the conversation around it is the file's rule (``conversation_rank``).

The write path is ``message_writes.MessageVersionWriter``'s (the methods below hand it on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from weaviate.classes.query import Filter, MetadataQuery, Sort
from weaviate.collections.classes.filters import _Filters

from teamlore.dates import Period
from teamlore.domain import CONVERSATION_GAP, Message, MessageVersion, ResolvedView, Scope
from teamlore.embedding import EmbeddingCache
from teamlore.stores.protocols import ErasedMessages, RawMessageHit
from teamlore.stores.weaviate import filters
from teamlore.stores.weaviate.codec import TOP_LEVEL, conversation, query_terms, to_message_version
from teamlore.stores.weaviate.conversation_rank import Pool, pool, spread
from teamlore.stores.weaviate.journal import UndoJournal
from teamlore.stores.weaviate.message_writes import MessageVersionWriter
from teamlore.stores.weaviate.queries import farthest, floats, translated
from teamlore.stores.weaviate.schema import MESSAGE_KEYWORD_PROPERTIES, MESSAGE_VECTOR

STORE = "message index"
# Candidates read for one neighbour: the nearest by posted time, of which the first past the
# message (ties on the posted time broken by message id, as in the file) is the neighbour.
NEIGHBOUR_PAGE = 64
POOL = 200  # rows of each half a raw query reads at least (``_pool``)


class WeaviateMessageIndex:
    """One collection of message versions, every read filtered by scope and time."""

    def __init__(
        self,
        collection: Any,
        vectors: EmbeddingCache,
        journal: UndoJournal,
        max_results: int = 10_000,
        key_in_use: Callable[[str], bool] = lambda key: False,
    ) -> None:
        self._c = collection
        self._max = max_results
        self.writes = MessageVersionWriter(collection, vectors, journal, max_results, key_in_use)
        self.journal = journal

    # ---- raw queries: a pool from Weaviate, ranked with the conversation around it ----

    def _keyword(
        self, text: str, scope: Scope, view: ResolvedView, limit: int, periods: Sequence[Period] = ()
    ) -> list[RawMessageHit]:
        keyword = self._bm25(text, scope, view, limit)
        return self._ranked(pool(keyword, None), scope, view, limit, periods)

    def _semantic(
        self,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]:
        nearest = self._nearest(vector, scope, view, limit, floor)
        return self._ranked(pool(None, nearest), scope, view, limit, periods)

    def _hybrid(
        self,
        text: str,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]:
        """Both halves blended as the file blends them (``message_ranking.KEYWORD_SHARE``), not
        Weaviate's rank fusion: the spread needs scores, and ranks fused are nearly flat."""
        keyword = self._bm25(text, scope, view, limit)
        nearest = self._nearest(vector, scope, view, limit, floor)
        return self._ranked(pool(keyword, nearest), scope, view, limit, periods)

    def _bm25(
        self, text: str, scope: Scope, view: ResolvedView, limit: int
    ) -> list[tuple[MessageVersion, float]]:
        query = query_terms(text)
        if not query:
            return []
        with translated("keyword search", STORE):
            found = self._c.query.bm25(
                query,
                query_properties=MESSAGE_KEYWORD_PROPERTIES,
                filters=filters.readable_messages(scope, view),
                limit=self._pool(limit),
                return_metadata=MetadataQuery(score=True),
            )
        return [(to_message_version(o.properties), float(o.metadata.score or 0.0)) for o in found.objects]

    def _nearest(
        self, vector: np.ndarray, scope: Scope, view: ResolvedView, limit: int, floor: float
    ) -> list[tuple[MessageVersion, float]]:
        with translated("vector search", STORE):
            found = self._c.query.near_vector(
                floats(vector),
                distance=farthest(floor),
                target_vector=MESSAGE_VECTOR,
                filters=filters.readable_messages(scope, view),
                limit=self._pool(limit),
                return_metadata=MetadataQuery(distance=True),
            )
        # Cosine distance is 1 - cosine.
        return [(to_message_version(o.properties), 1.0 - float(o.metadata.distance)) for o in found.objects]

    def _ranked(
        self, found: Pool, scope: Scope, view: ResolvedView, limit: int, periods: Sequence[Period]
    ) -> list[RawMessageHit]:
        return spread(self._c, found, scope, view, self._cap(limit), periods, self._max)

    def _pool(self, limit: int) -> int:
        # Enough of each half that what is merely typical sets the vector floor, and a match a
        # little down the list can still be lifted by its neighbours.
        return self._cap(max(limit, POOL))

    def _cap(self, limit: int) -> int:
        return max(1, min(limit, self._max))

    def warm(self) -> int:
        """Nothing is held in this process: Weaviate indexes its own rows."""
        return 0

    # ---- the pipeline's own lookups: a message's neighbours in its conversation (current text) ----

    def before(
        self, workspace: str, channel: str, message_id: str, thread_id: str | None, posted: datetime
    ) -> MessageVersion | None:
        """As the file's index: the previous reply (or, for a first reply, the thread's opening
        message), or the previous top-level message within ``CONVERSATION_GAP``."""
        found = self._neighbour(workspace, channel, message_id, thread_id, posted, before=True)
        if found is None and conversation(message_id, thread_id) != TOP_LEVEL:
            return self.current(workspace, channel, thread_id or "")
        return found

    def after(
        self, workspace: str, channel: str, message_id: str, thread_id: str | None, posted: datetime
    ) -> list[MessageVersion]:
        """The next message in its conversation and, for a thread's opening message, the
        thread's first reply."""
        found = [self._neighbour(workspace, channel, message_id, thread_id, posted, before=False)]
        if conversation(message_id, thread_id) == TOP_LEVEL:
            where = filters.said_in(workspace, channel) & Filter.by_property("conversation").equal(
                conversation("", message_id)
            )
            found += self._first(where, ascending=True, limit=1)
        return [v for v in found if v is not None]

    def current(self, workspace: str, channel: str, message_id: str) -> MessageVersion | None:
        where = filters.said_in(workspace, channel) & Filter.by_property("message_id").equal(message_id)
        with translated("current version", STORE):
            found = self._c.query.fetch_objects(
                filters=where, sort=Sort.by_property("version", ascending=False), limit=1
            )
        return to_message_version(found.objects[0].properties) if found.objects else None

    def _neighbour(
        self,
        workspace: str,
        channel: str,
        message_id: str,
        thread_id: str | None,
        posted: datetime,
        before: bool,
    ) -> MessageVersion | None:
        where = (
            filters.said_in(workspace, channel)
            & Filter.by_property("message_id").not_equal(message_id)
            & Filter.by_property("conversation").equal(conversation(message_id, thread_id))
        )
        moment = filters.to_stored(posted)
        if before:
            where &= Filter.by_property("valid_from").less_or_equal(moment)
        else:
            where &= Filter.by_property("valid_from").greater_or_equal(moment)
        if conversation(message_id, thread_id) == TOP_LEVEL:
            edge = posted - CONVERSATION_GAP if before else posted + CONVERSATION_GAP
            bound = Filter.by_property("valid_from")
            where &= bound.greater_or_equal(edge) if before else bound.less_or_equal(edge)
        for version in self._first(where, ascending=not before, limit=NEIGHBOUR_PAGE):
            later = (version.posted_at, version.message_id) > (posted, message_id)
            if later != before:
                return version
        return None

    def _first(self, where: _Filters, ascending: bool, limit: int) -> list[MessageVersion]:
        """Versions matching ``where`` by posted time, then message id."""
        with translated("conversation lookup", STORE):
            found = self._c.query.fetch_objects(
                filters=where,
                sort=Sort.by_property("valid_from", ascending=ascending).by_property(
                    "message_id", ascending=ascending
                ),
                limit=limit,
            )
        return [to_message_version(o.properties) for o in found.objects]

    # ---- writes (``message_writes``) ----

    def put(self, message: Message, text: str, at: datetime, embedding_key: str | None) -> bool:
        return self.writes.put(message, text, at, embedding_key)

    def set_vector(self, workspace: str, channel: str, message_id: str, embedding_key: str | None) -> None:
        self.writes.set_vector(workspace, channel, message_id, embedding_key)

    def withdraw(self, workspace: str, channel: str, message_id: str, at: datetime) -> None:
        self.writes.withdraw(workspace, channel, message_id, at)

    def erase_author(self, workspace: str, author_id: str) -> ErasedMessages:
        return self.writes.erase_author(workspace, author_id)

    def import_versions(
        self, rows: Sequence[tuple[MessageVersion, str | None, np.ndarray | None]]
    ) -> list[str]:
        return self.writes.import_versions(rows)

    def uses_key(self, key: str) -> bool:
        return self.writes.uses_key(key)
