"""The message index in Weaviate: every version of every message's text, one object each, for
the server stack (``MessageIndex``; the embedded default keeps ``stores/embedded/message_index``).

Raw queries only, as in the file: scope and the time predicate are compiled into each
(``filters.compile_filters``: a message's valid time runs from its posted time, open-ended), and
nothing they return is shown before ``teamlore.capabilities.gate.visible`` has passed it. Ranking
is Weaviate's own (BM25 over the text and the speaker, cosine over the passage vector, rank
fusion), with the period hint applied to what the query returned; the file's index also spreads
a match to the messages around it, which this one does not (docs/stores.md).

Writes are idempotent by object id (UUIDv5 of workspace, channel, message id and version): a
re-delivered edit finds its own version and counts it as written. Weaviate has no transactions,
so each write records its undo in the fact store's journal, whose frames follow the stores'
transaction: an event that fails leaves neither its facts nor its message versions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery, Sort
from weaviate.collections.classes.filters import _Filters
from weaviate.exceptions import UnexpectedStatusCodeError, WeaviateBaseError

from teamlore.dates import PERIOD_LIFT, Period
from teamlore.domain import CONVERSATION_GAP, Message, MessageVersion, ResolvedView, Scope
from teamlore.embedding import EmbeddingCache
from teamlore.errors import BackendUnavailable
from teamlore.stores.protocols import RRF_K, ConcurrentChange, ErasedMessages, RawMessageHit
from teamlore.stores.weaviate import filters
from teamlore.stores.weaviate.codec import (
    TOP_LEVEL,
    conversation,
    message_properties,
    message_uuid,
    to_message_version,
)
from teamlore.stores.weaviate.journal import UndoJournal
from teamlore.stores.weaviate.queries import farthest, floats, keyword_text, translated, walk
from teamlore.stores.weaviate.schema import MESSAGE_KEYWORD_PROPERTIES, MESSAGE_VECTOR
from teamlore.timeutil import SENTINEL

log = logging.getLogger(__name__)
STORE = "message index"
# Candidates read for one neighbour: the nearest by posted time, of which the first past the
# message (ties on the posted time broken by message id, as in the file) is the neighbour.
NEIGHBOUR_PAGE = 64


def readable(scope: Scope, view: ResolvedView) -> _Filters:
    """What every raw read of the index carries: the scope, the view's time predicate, and
    versions that still have text (a deleted or erased version is never a hit)."""
    return filters.compile_filters(scope, view) & Filter.by_property("has_text").equal(True)


def _of_message(workspace: str, channel: str, message_id: str) -> _Filters:
    return (
        Filter.by_property("workspace").equal(workspace)
        & Filter.by_property("channel").equal(channel)
        & Filter.by_property("message_id").equal(message_id)
    )


def _said_in(workspace: str, channel: str) -> _Filters:
    """Current versions with text, in one channel (the pipeline's neighbour lookups)."""
    return filters.current_in_channel(workspace, channel) & Filter.by_property("has_text").equal(True)


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
        self._vectors = vectors
        self.journal = journal
        self._alpha = hybrid_alpha
        self._max = max_results
        # Whether something outside this collection (a fact version) still uses a cached vector.
        self._key_in_use = key_in_use

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
                filters=readable(scope, view),
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
                filters=readable(scope, view),
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
                filters=readable(scope, view),
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
            where = _said_in(workspace, channel) & Filter.by_property("conversation").equal(
                conversation("", message_id)
            )
            found += self._first(where, ascending=True, limit=1)
        return [v for v in found if v is not None]

    def current(self, workspace: str, channel: str, message_id: str) -> MessageVersion | None:
        where = _said_in(workspace, channel) & Filter.by_property("message_id").equal(message_id)
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
            _said_in(workspace, channel)
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

    # ---- writes ----

    def put(self, message: Message, text: str, at: datetime, embedding_key: str | None) -> bool:
        """Make ``text`` the current indexed version of ``message`` (a new version if the text
        changed, the old one closed at ``at``); True if a version was written."""
        ws, ch, mid = message.workspace, message.channel, message.message_id
        open_versions = self._open_versions(ws, ch, mid)
        current = open_versions[0] if open_versions else None
        if current is not None and current.text == text:
            self._close_all(open_versions[1:], current.recorded_from)  # a write cut short before
            if embedding_key is not None:
                self.set_vector(ws, ch, mid, embedding_key)
            return False
        new = MessageVersion(
            workspace=ws,
            channel=ch,
            message_id=mid,
            version=1 if current is None else current.version + 1,
            thread_id=message.thread_id,
            author_id=message.author_id,
            author_name=message.author_name,
            text=text,
            posted_at=message.ts,
            recorded_from=at,
        )
        self._insert(new, embedding_key)
        self._close_all(open_versions, at)
        return True

    def set_vector(self, workspace: str, channel: str, message_id: str, embedding_key: str | None) -> None:
        """Give the current version a new vector (its context changed); the old vector goes
        unless something else still uses it."""
        open_versions = self._open_versions(workspace, channel, message_id)
        if not open_versions:
            return
        object_id = _object_id(open_versions[0])
        with translated("reading a version", STORE):
            stored = self._c.query.fetch_object_by_id(object_id, include_vector=True)
        if stored is None or stored.properties.get("embedding_key") == embedding_key:
            return
        old_key = stored.properties.get("embedding_key")
        vector = None if embedding_key is None else self._cached_vector(embedding_key)
        self._rewrite(stored, {"embedding_key": embedding_key}, vector)
        self._forget_unused([old_key] if old_key else [])

    def withdraw(self, workspace: str, channel: str, message_id: str, at: datetime) -> None:
        """A deleted message: its current version closes at ``at`` and every version loses its
        text, keyword terms and vector."""
        where = _of_message(workspace, channel, message_id)
        versions = [to_message_version(p) for p in self._walk(where, "withdraw")]
        self._close_all([v for v in versions if v.recorded_to == SENTINEL], at)
        self._forget_unused(self._blank(versions, {"text": "", "speaker": "", "has_text": False}))

    def erase_author(self, workspace: str, author_id: str) -> ErasedMessages:
        """Blank every version of every message the person wrote (text, name, vector). Not
        undoable (that is the point); if it fails half-way, running the erasure again finishes it."""
        where = Filter.by_property("workspace").equal(workspace) & Filter.by_property("author_id").equal(
            author_id
        )
        versions = [to_message_version(p) for p in self._walk(where, "erasure")]
        blank = {"text": "", "speaker": "", "has_text": False, "author_name": ""}
        keys = self._blank(versions, blank, undoable=False)
        vectors = self._forget_unused(keys)
        erased = [replace(v, text="", author_name="") for v in versions if v.recorded_to == SENTINEL]
        return ErasedMessages(vectors, tuple(erased))

    def _open_versions(self, workspace: str, channel: str, message_id: str) -> list[MessageVersion]:
        """The message's versions the index holds now, highest first (more than one only when a
        write was cut short between its insert and its close)."""
        where = _of_message(workspace, channel, message_id) & filters.current()
        with translated("current version", STORE):
            found = self._c.query.fetch_objects(
                filters=where, sort=Sort.by_property("version", ascending=False), limit=self._cap(100)
            )
        return [to_message_version(o.properties) for o in found.objects]

    def _insert(self, version: MessageVersion, embedding_key: str | None) -> None:
        vector = None if embedding_key is None else self._cached_vector(embedding_key)
        object_id = _object_id(version)
        try:
            self._c.data.insert(
                properties=message_properties(version, embedding_key),
                uuid=object_id,
                vector=None if vector is None else {MESSAGE_VECTOR: vector},
            )
        except UnexpectedStatusCodeError as exc:
            if exc.status_code == 422 and "already exists" in str(exc):
                self._written_before(version)
                return
            raise BackendUnavailable(f"Weaviate {STORE}: insert failed: {exc}") from exc
        except WeaviateBaseError as exc:
            raise BackendUnavailable(f"Weaviate {STORE}: insert failed: {exc}") from exc
        self.journal.record(
            f"insert of message {version.message_id} v{version.version}", lambda: self._delete(object_id)
        )

    def _written_before(self, version: MessageVersion) -> None:
        """The version's id exists: the same text is this write done before (a re-delivery);
        another text is someone else's version."""
        with translated("reading a version", STORE):
            stored = self._c.query.fetch_object_by_id(_object_id(version))
        if stored is None or (stored.properties.get("text") or "") != version.text:
            raise ConcurrentChange(
                f"message {version.message_id} v{version.version} was written by someone else"
            )

    def _close_all(self, versions: Iterable[MessageVersion], at: datetime) -> None:
        for version in versions:
            object_id = _object_id(version)
            self._set_recorded_to(object_id, at)
            self.journal.record(
                f"close of message {version.message_id} v{version.version}",
                partial(self._set_recorded_to, object_id, version.recorded_to),
            )

    def _set_recorded_to(self, object_id: Any, moment: datetime) -> None:
        with translated("closing a version", STORE):
            self._c.data.update(uuid=object_id, properties={"recorded_to": filters.to_stored(moment)})

    def _blank(
        self, versions: Sequence[MessageVersion], blank: dict[str, Any], undoable: bool = True
    ) -> list[str]:
        """Write these versions again with ``blank`` and no vector (Weaviate keeps a vector per
        object, so an object loses it only by being written anew); the cached vectors' keys."""
        keys: list[str] = []
        for version in versions:
            with translated("reading a version", STORE):
                stored = self._c.query.fetch_object_by_id(_object_id(version), include_vector=True)
            if stored is None:
                continue
            key = stored.properties.get("embedding_key")
            keys += [key] if key else []
            self._rewrite(stored, {**blank, "embedding_key": None}, None, undoable)
        return keys

    def _rewrite(
        self, stored: Any, changes: dict[str, Any], vector: list[float] | None, undoable: bool = True
    ) -> None:
        """Replace an object by itself with ``changes`` (a None value: the property goes) and
        ``vector`` (None: none); its old self comes back if the event rolls back."""
        props = {k: v for k, v in {**stored.properties, **changes}.items() if v is not None}
        with translated("rewriting a version", STORE):
            self._c.data.delete_by_id(stored.uuid)
            self._c.data.insert(
                properties=props,
                uuid=stored.uuid,
                vector=None if vector is None else {MESSAGE_VECTOR: vector},
            )
        if undoable:
            old = {k: v for k, v in stored.properties.items() if v is not None}
            old_vector = dict(stored.vector or {}) or None

            def restore() -> None:
                self._c.data.delete_by_id(stored.uuid)
                self._c.data.insert(properties=old, uuid=stored.uuid, vector=old_vector)

            self.journal.record(f"rewrite of message version {stored.uuid}", restore)

    def _delete(self, object_id: Any) -> None:
        with translated("deleting a version", STORE):
            self._c.data.delete_by_id(object_id)

    def _cached_vector(self, key: str) -> list[float] | None:
        found = self._vectors.get_vectors([key]).get(key)
        if found is None:
            # As in the file: a version without a vector is left out of vector search.
            log.warning("no cached embedding %s; the message version is stored without a vector", key)
            return None
        return floats(found)

    def _forget_unused(self, keys: Iterable[str]) -> int:
        """Forget the cached vectors no message version and no fact version uses any more; how
        many were forgotten."""
        unused = [key for key in sorted(set(keys)) if not self.uses_key(key) and not self._key_in_use(key)]
        return self._vectors.forget(unused) if unused else 0

    def uses_key(self, key: str) -> bool:
        """Whether some message version still holds this cached vector."""
        with translated("vector key lookup", STORE):
            found = self._c.query.fetch_objects(
                filters=Filter.by_property("embedding_key").equal(key), limit=1, return_properties=["version"]
            )
        return bool(found.objects)

    def import_versions(
        self, rows: Sequence[tuple[MessageVersion, str | None, np.ndarray | None]]
    ) -> list[str]:
        """Write these versions as they are (``teamlore weaviate load-messages``); returns one line
        per object Weaviate refused. A re-run overwrites, never duplicates."""
        objects = [
            DataObject(
                properties=message_properties(version, key),
                uuid=_object_id(version),
                vector=None if vector is None or not version.text else {MESSAGE_VECTOR: floats(vector)},
            )
            for version, key, vector in rows
        ]
        with translated("batch import", STORE):
            result = self._c.data.insert_many(objects)
        return [
            f"message {rows[i][0].message_id} v{rows[i][0].version}: {error.message}"
            for i, error in sorted(result.errors.items())
        ]

    def _walk(self, where: _Filters, what: str) -> list[dict[str, Any]]:
        return list(walk(self._c, where, "version_key", what, store=STORE))


def _object_id(version: MessageVersion) -> Any:
    return message_uuid(version.workspace, version.channel, version.message_id, version.version)


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
