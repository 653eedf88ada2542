"""The message index in Weaviate: every version of every message's text, one object each, for
the server stack (``MessageIndex``; the embedded default keeps ``stores/embedded/message_index``).

Raw queries only, as in the file: scope and the time predicate are compiled into each
(``filters.compile_filters``: a message's valid time runs from its posted time, open-ended), and
nothing they return is shown before ``teamlore.capabilities.gate.visible`` has passed it. Ranking
is Weaviate's own (BM25 over the text and the speaker, cosine over the passage vector, rank
fusion), with the period hint applied to what the query returned; the file's index also spreads
a match to the messages around it, which this one does not (docs/stores.md).

The write path is ``message_writes.MessageVersionWriter``'s (the methods below hand it on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery, Sort
from weaviate.collections.classes.filters import _Filters

from teamlore.dates import PERIOD_LIFT, Period
from teamlore.domain import CONVERSATION_GAP, Message, MessageVersion, ResolvedView, Scope
from teamlore.embedding import EmbeddingCache
from teamlore.stores.protocols import RRF_K, ErasedMessages, RawMessageHit
from teamlore.stores.weaviate import filters
from teamlore.stores.weaviate.codec import (
    TOP_LEVEL,
    conversation,
    to_message_version,
)
from teamlore.stores.weaviate.journal import UndoJournal
from teamlore.stores.weaviate.message_writes import MessageVersionWriter
from teamlore.stores.weaviate.queries import farthest, floats, keyword_text, translated
from teamlore.stores.weaviate.schema import MESSAGE_KEYWORD_PROPERTIES, MESSAGE_VECTOR

STORE = "message index"
# Candidates read for one neighbour: the nearest by posted time, of which the first past the
# message (ties on the posted time broken by message id, as in the file) is the neighbour.
NEIGHBOUR_PAGE = 64


class WeaviateMessageIndex:
    """One collection of message versions, every read filtered by scope and time."""

    def __init__(
        self,
        collection: Any,
        vectors: EmbeddingCache,
        journal: UndoJournal,
        hybrid_alpha: float = 0.5,
        max_results: int = 10_000,
        key_in_use: Callable[[str], bool] = lambda key: False,
    ) -> None:
        self._c = collection
        self._alpha = hybrid_alpha
        self._max = max_results
        self.writes = MessageVersionWriter(collection, vectors, journal, max_results, key_in_use)
        self.journal = journal

    # ---- raw queries ----

    def _keyword(
        self, text: str, scope: Scope, view: ResolvedView, limit: int, periods: Sequence[Period] = ()
    ) -> list[RawMessageHit]:
        query = keyword_text(text)
        if query is None:
            return []
        with translated("keyword search", STORE):
            found = self._c.query.bm25(
                query,
                query_properties=MESSAGE_KEYWORD_PROPERTIES,
                filters=filters.readable_messages(scope, view),
                limit=self._cap(limit),
                return_metadata=MetadataQuery(score=True),
            )
        return _lifted(_hits(found.objects, lambda m: float(m.score or 0.0)), periods)

    def _semantic(
        self,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]:
        with translated("vector search", STORE):
            found = self._c.query.near_vector(
                floats(vector),
                distance=farthest(floor),
                target_vector=MESSAGE_VECTOR,
                filters=filters.readable_messages(scope, view),
                limit=self._cap(limit),
                return_metadata=MetadataQuery(distance=True),
            )
        # Cosine distance is 1 - cosine: the score is the cosine.
        return _lifted(_hits(found.objects, lambda m: 1.0 - float(m.distance)), periods)

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
        query = keyword_text(text)
        if query is None:  # nothing to match by keyword: rank fusion of the vector list alone
            ranked = self._semantic(vector, scope, view, limit, (), floor)
            fused = [RawMessageHit(h.message, 1.0 / (RRF_K + rank + 1)) for rank, h in enumerate(ranked)]
            return _lifted(fused, periods)
        with translated("hybrid search", STORE):
            found = self._c.query.hybrid(
                query,
                vector=floats(vector),
                target_vector=MESSAGE_VECTOR,
                alpha=self._alpha,
                max_vector_distance=farthest(floor),
                fusion_type=HybridFusion.RANKED,
                query_properties=MESSAGE_KEYWORD_PROPERTIES,
                filters=filters.readable_messages(scope, view),
                limit=self._cap(limit),
                return_metadata=MetadataQuery(score=True),
            )
        return _lifted(_hits(found.objects, lambda m: float(m.score or 0.0)), periods)

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


def _hits(objects: Iterable[Any], score: Callable[[Any], float]) -> list[RawMessageHit]:
    return [RawMessageHit(to_message_version(o.properties), score(o.metadata)) for o in objects]


def _lifted(hits: list[RawMessageHit], periods: Sequence[Period]) -> list[RawMessageHit]:
    """Hits best first; a question naming a period lifts what was posted then (as the file's
    index does) by ``PERIOD_LIFT`` of the best score among what the query returned."""
    if not periods or not hits:
        return hits
    best = max(h.score for h in hits)
    lifted = [
        RawMessageHit(h.message, h.score + PERIOD_LIFT * best * _posted_in(h.message, periods)) for h in hits
    ]
    return sorted(lifted, key=lambda h: -h.score)


def _posted_in(message: MessageVersion, periods: Sequence[Period]) -> bool:
    return any(start <= message.posted_at < end for start, end in periods)
