"""Fact versions in Weaviate: the raw queries and the write path, nothing above them.

Semantics match the embedded store (teamlore/stores/embedded/facts.py): the same rows for the
same query, the same scores where the engines agree (cosine for semantic; BM25 and rank fusion
are Weaviate's own), the same write-path answers. Scope and the time predicate are compiled into
every read (``filters.compile_filters``); the gate above re-checks all of it. Vendor errors become
``BackendUnavailable`` here, so the read path's fallback and the CLI's exit codes work unchanged.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery, Sort
from weaviate.collections.classes.filters import _Filters
from weaviate.exceptions import UnexpectedStatusCodeError, WeaviateBaseError

from teamlore.domain import Fact, ResolvedView, Scope
from teamlore.embedding import EmbeddingCache
from teamlore.errors import BackendUnavailable
from teamlore.stores.protocols import RRF_K, AuditEvent, AuditLog, ConcurrentChange, RawHit, Related
from teamlore.stores.weaviate import filters
from teamlore.stores.weaviate.codec import to_fact, to_properties, version_uuid
from teamlore.stores.weaviate.journal import AheadLog, Step, UndoJournal, apply_step, run_undos
from teamlore.stores.weaviate.queries import farthest as _farthest
from teamlore.stores.weaviate.queries import floats as _floats
from teamlore.stores.weaviate.queries import keyword_text, translated, walk
from teamlore.stores.weaviate.schema import KEYWORD_PROPERTIES, VECTOR

log = logging.getLogger(__name__)


class WeaviateFactBackend:
    """One collection, every query filtered by scope (see docs/stores.md for why not tenants)."""

    def __init__(
        self,
        collection: Any,
        audit: AuditLog,
        vectors: EmbeddingCache,
        hybrid_alpha: float = 0.5,
        max_results: int = 10_000,
        close: Any = None,
        client: Any = None,
    ) -> None:
        self._c = collection
        self._audit = audit
        self._vectors = vectors
        self._alpha = hybrid_alpha
        self._max = max_results
        self._close = close
        self.client = client  # the connection, for the message index beside it (None in unit tests)
        # Whether something beside the facts (the message index's versions) still uses a cached
        # vector; set by ``open_message_index``.
        self.key_in_use: Callable[[str], bool] = lambda key: False
        self.journal = UndoJournal()
        # The message index's undo (set by whoever pairs the two: ``weaviate.open_message_index``).
        self.message_undo: Callable[[Step], None] | None = None

    # ---- raw queries (private: only the read path above calls them, then gates the rows) ----

    def _keyword(self, text: str, scope: Scope, view: ResolvedView, limit: int) -> list[RawHit]:
        query = keyword_text(text)
        if query is None:
            return []
        with translated("keyword search"):
            found = self._c.query.bm25(
                query,
                query_properties=KEYWORD_PROPERTIES,
                filters=filters.compile_filters(scope, view),
                limit=self._cap(limit),
                return_metadata=MetadataQuery(score=True),
            )
        return [RawHit(to_fact(o.properties), float(o.metadata.score or 0.0)) for o in found.objects]

    def _semantic(
        self, vector: np.ndarray, scope: Scope, view: ResolvedView, limit: int, floor: float = -1.0
    ) -> list[RawHit]:
        with translated("vector search"):
            found = self._c.query.near_vector(
                _floats(vector),
                distance=_farthest(floor),
                target_vector=VECTOR,
                filters=filters.compile_filters(scope, view),
                limit=self._cap(limit),
                return_metadata=MetadataQuery(distance=True),
            )
        # Cosine distance is 1 - cosine: the score is the same cosine the embedded index gives.
        return [RawHit(to_fact(o.properties), 1.0 - float(o.metadata.distance)) for o in found.objects]

    def _hybrid(
        self,
        text: str,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        floor: float = -1.0,
    ) -> list[RawHit]:
        query = keyword_text(text)
        if query is None:  # nothing to match by keyword: rank fusion of the vector list alone
            ranked = self._semantic(vector, scope, view, limit, floor)
            return [RawHit(h.fact, 1.0 / (RRF_K + rank + 1)) for rank, h in enumerate(ranked)]
        with translated("hybrid search"):
            found = self._c.query.hybrid(
                query,
                vector=_floats(vector),
                target_vector=VECTOR,
                alpha=self._alpha,
                max_vector_distance=_farthest(floor),
                # Rank fusion, as the embedded store fuses (at alpha 0.5 the same order).
                fusion_type=HybridFusion.RANKED,
                query_properties=KEYWORD_PROPERTIES,
                filters=filters.compile_filters(scope, view),
                limit=self._cap(limit),
                return_metadata=MetadataQuery(score=True),
            )
        return [RawHit(to_fact(o.properties), float(o.metadata.score or 0.0)) for o in found.objects]

    def _list(self, scope: Scope, view: ResolvedView, limit: int) -> list[RawHit]:
        with translated("list"):
            found = self._c.query.fetch_objects(
                filters=filters.compile_filters(scope, view),
                sort=Sort.by_property("valid_from", ascending=False).by_property(
                    "recorded_from", ascending=False
                ),
                limit=self._cap(limit),
            )
        return [RawHit(to_fact(o.properties), 0.0) for o in found.objects]

    def _by_ids(self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView) -> list[RawHit]:
        if not fact_ids:
            return []
        with translated("get by id"):
            found = self._c.query.fetch_objects(
                filters=filters.fact_ids_filter(fact_ids) & filters.compile_filters(scope, view),
                # One version per fact is visible at known_at; room for a write caught half-way.
                limit=self._cap(2 * len(fact_ids)),
            )
        return [RawHit(to_fact(o.properties), 0.0) for o in found.objects]

    def _following(
        self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView, steps: int
    ) -> list[RawHit]:
        found: list[RawHit] = []
        seen: set[str] = set()
        wanted = list(fact_ids)
        for _ in range(steps + 1):
            wanted = [fact_id for fact_id in dict.fromkeys(wanted) if fact_id not in seen]
            if not wanted:
                break
            seen.update(wanted)
            hits = self._by_ids(wanted, scope, view)
            found += hits
            wanted = [hit.fact.superseded_by for hit in hits if hit.fact.superseded_by]
        return found

    def _versions(self, fact_id: str, scope: Scope) -> list[Fact]:
        where = Filter.by_property("fact_id").equal(fact_id) & filters.compile_filters(scope, None)
        return [to_fact(p) for p in self._walk(where, "version", "versions")]

    # ---- the write path's own lookups ----

    def current_version(self, fact_id: str) -> Fact | None:
        with translated("current version"):
            found = self._c.query.fetch_objects(
                filters=Filter.by_property("fact_id").equal(fact_id) & filters.current(),
                sort=Sort.by_property("version", ascending=False),
                limit=1,
            )
        return to_fact(found.objects[0].properties) if found.objects else None

    def current_by_hash(self, workspace: str, channel: str, content_hash: str) -> Fact | None:
        with translated("lookup by content hash"):
            found = self._c.query.fetch_objects(
                filters=filters.current_in_channel(workspace, channel)
                & Filter.by_property("content_hash").equal(content_hash)
                & Filter.by_property("status").not_equal("retracted"),
                sort=Sort.by_property("valid_from", ascending=False),
                limit=1,
            )
        return to_fact(found.objects[0].properties) if found.objects else None

    def current_citing(self, workspace: str, channel: str, message_id: str) -> list[Fact]:
        where = filters.current_in_channel(workspace, channel) & Filter.by_property("evidence").contains_any(
            [message_id]
        )
        facts = [to_fact(p) for p in self._walk(where, "fact_id", "lookup by evidence")]
        return sorted(facts, key=lambda f: (f.recorded_from, f.fact_id))  # the order they were written

    def current_citing_any(self, workspace: str, channel: str, message_ids: Sequence[str]) -> list[Fact]:
        if not message_ids:
            return []
        where = filters.current_in_channel(workspace, channel) & Filter.by_property("evidence").contains_any(
            list(message_ids)
        )
        facts = [to_fact(p) for p in self._walk(where, "fact_id", "lookup by evidence")]
        return sorted(facts, key=lambda f: (f.recorded_from, f.fact_id))

    def current_ids(self, workspace: str, channel: str) -> list[str]:
        where = filters.current_in_channel(workspace, channel)
        return [p["fact_id"] for p in self._walk(where, "fact_id", "current ids", ["fact_id"])]

    def current_related(self, workspace: str, channel: str, text: str, limit: int) -> list[Related]:
        """Current, not retired facts of one channel sharing words or entities with ``text``;
        best keyword match first."""
        query = keyword_text(text)
        if query is None:
            return []
        with translated("related facts"):
            found = self._c.query.bm25(
                query,
                query_properties=KEYWORD_PROPERTIES,
                filters=_live_in(workspace, channel),
                limit=self._cap(limit),
            )
        return _related(found.objects)

    def current_near(
        self, workspace: str, channel: str, vector: np.ndarray, limit: int, window: int
    ) -> list[Related]:
        """The ``limit`` current, not retired facts of one channel closest to ``vector``, closest
        first. The vector index answers without a scan, so ``window`` (the embedded store's bound
        on what it reads) is not needed here."""
        with translated("facts near a statement"):
            found = self._c.query.near_vector(
                _floats(vector),
                target_vector=VECTOR,
                filters=_live_in(workspace, channel),
                limit=self._cap(limit),
            )
        return _related(found.objects)

    def _walk(
        self, where: _Filters, key: str, what: str, fields: list[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        return walk(self._c, where, key, what, fields)

    def _cap(self, limit: int) -> int:
        # Asking for more than the server's maximum is an error; fewer rows tell the read path
        # the store is exhausted, and its receipt says fewer than k were found.
        return max(1, min(limit, self._max))

    # ---- writes ----

    def write_version(
        self, new: Fact, replaces: Fact | None, audit: AuditEvent, embedding_key: str | None = None
    ) -> Fact:
        """Insert ``new`` and close ``replaces`` (if given), then log the audit event.

        The new version's object id is derived from (fact id, version), so two writers racing to
        replace the same version cannot both insert: the second is refused (ConcurrentChange).
        Every step that succeeded is undone if a later one fails, and recorded in the journal so
        the enclosing transaction can undo it too.
        """
        vector = None
        if replaces is not None:
            old = self._current_object(replaces)
            if embedding_key is None:
                embedding_key = old.properties.get("embedding_key")
                vector = (old.vector or {}).get(VECTOR)
        if vector is None and embedding_key is not None:
            vector = self._cached_vector(embedding_key)
        done: list[tuple[str, Any]] = []
        channel = (new.workspace, new.channel)
        try:
            new_id = version_uuid(new.fact_id, new.version)
            what = f"insert of {new.fact_id} v{new.version}"
            self.journal.intend(channel, what, {"collection": "facts", "kind": "delete", "uuid": str(new_id)})
            self._insert(new, embedding_key, vector)
            done.append((what, lambda: self._delete(new_id)))
            if replaces is not None:
                reopen = {"recorded_to": filters.to_stored(replaces.recorded_to)}
                old_id = str(version_uuid(replaces.fact_id, replaces.version))
                step = {"collection": "facts", "kind": "update", "uuid": old_id, "properties": reopen}
                self.journal.intend(channel, f"close of {replaces.fact_id} v{replaces.version}", step)
                self._close_version(replaces, new)
                done.append(
                    (f"close of {replaces.fact_id} v{replaces.version}", lambda: self._reopen(replaces))
                )
            self._audit.append(audit)
        except BaseException:
            run_undos(done)
            raise
        for what, undo in done:
            self.journal.record(what, undo)
        return new

    def _current_object(self, fact: Fact) -> Any:
        with translated("read of the version to replace"):
            old = self._c.query.fetch_object_by_id(
                version_uuid(fact.fact_id, fact.version), include_vector=True
            )
        if old is None or filters.from_stored(old.properties["recorded_to"]) != fact.recorded_to:
            raise ConcurrentChange(f"fact {fact.fact_id} v{fact.version} is no longer current")
        return old

    def _cached_vector(self, key: str) -> list[float] | None:
        found = self._vectors.get_vectors([key]).get(key)
        if found is None:
            # As in the embedded store: a version without a vector is left out of vector search.
            log.warning("no cached embedding %s; the version is stored without a vector", key)
            return None
        return _floats(found)

    def _insert(self, fact: Fact, embedding_key: str | None, vector: list[float] | None) -> None:
        try:
            self._c.data.insert(
                properties=to_properties(fact, embedding_key),
                uuid=version_uuid(fact.fact_id, fact.version),
                vector=None if vector is None else {VECTOR: vector},
            )
        except UnexpectedStatusCodeError as exc:
            if exc.status_code == 422 and "already exists" in str(exc):
                raise ConcurrentChange(
                    f"fact {fact.fact_id} v{fact.version} was written by someone else"
                ) from exc
            raise BackendUnavailable(f"Weaviate fact store: insert failed: {exc}") from exc
        except WeaviateBaseError as exc:
            raise BackendUnavailable(f"Weaviate fact store: insert failed: {exc}") from exc

    def _close_version(self, old: Fact, new: Fact) -> None:
        with translated("closing the replaced version"):
            self._c.data.update(
                uuid=version_uuid(old.fact_id, old.version),
                properties={"recorded_to": filters.to_stored(new.recorded_from)},
            )

    def _reopen(self, old: Fact) -> None:
        with translated("reopening a version"):
            self._c.data.update(
                uuid=version_uuid(old.fact_id, old.version),
                properties={"recorded_to": filters.to_stored(old.recorded_to)},
            )

    def _delete(self, object_id: uuid.UUID) -> None:
        with translated("deleting a version"):
            self._c.data.delete_by_id(object_id)

    def erase_text(self, fact_ids: Sequence[str]) -> int:
        """Blank the statement, tags and topic of every version of these facts and drop their
        vectors: Weaviate keeps a vector per object, so each version is written again without
        one, and the cached passage vector goes too unless another fact still uses it. Returns
        how many version vectors were dropped. Not undoable (that is the point); if it fails
        half-way, running the erasure again finishes it."""
        dropped = 0
        keys: set[str] = set()
        for fact_id in fact_ids:
            where = Filter.by_property("fact_id").equal(fact_id)
            for props in list(self._walk(where, "version", "erasure")):
                fact = to_fact(props)
                object_id = version_uuid(fact.fact_id, fact.version)
                with translated("erasure"):
                    stored = self._c.query.fetch_object_by_id(object_id, include_vector=True)
                    self._c.data.delete_by_id(object_id)
                    blank = to_properties(fact, None) | {
                        "statement": "",
                        "entities": [],
                        "topic": "",
                        "content_hash": "",
                    }
                    self._c.data.insert(properties=blank, uuid=object_id)
                dropped += bool(stored is not None and stored.vector)
                keys.update([props["embedding_key"]] if props.get("embedding_key") else [])
        unshared = [
            key
            for key in sorted(keys)
            if not self._key_used_elsewhere(key, fact_ids) and not self.key_in_use(key)
        ]
        self._vectors.forget(unshared)
        return dropped

    def uses_key(self, key: str) -> bool:
        """Whether some fact version holds this cached vector (the message index asks before it
        forgets one)."""
        return self._key_used_elsewhere(key, ())

    def _key_used_elsewhere(self, key: str, fact_ids: Sequence[str]) -> bool:
        erased = set(fact_ids)
        # Paging on fact_id skips further versions of a fact already seen: enough to find another.
        found = self._walk(Filter.by_property("embedding_key").equal(key), "fact_id", "erasure", ["fact_id"])
        return any(props["fact_id"] not in erased for props in found)

    # ---- bulk load ----

    def import_versions(self, rows: Sequence[tuple[Fact, str | None, np.ndarray | None]]) -> list[str]:
        """Write these versions as they are (no audit: they were logged when first written);
        returns one line per object Weaviate refused. A re-run overwrites, never duplicates."""
        objects = [
            DataObject(
                properties=to_properties(fact, key),
                uuid=version_uuid(fact.fact_id, fact.version),
                vector=None if vector is None else {VECTOR: _floats(vector)},
            )
            for fact, key, vector in rows
        ]
        with translated("batch import"):
            result = self._c.data.insert_many(objects)
        return [
            f"{rows[i][0].fact_id} v{rows[i][0].version}: {error.message}"
            for i, error in sorted(result.errors.items())
        ]

    def unit_of_work(self, savepoint: bool = False) -> AbstractContextManager[None]:
        return self.journal.frame(savepoint)

    def write_ahead(self, log: AheadLog) -> None:
        self.journal.ahead = log  # the message index shares this journal

    def undo(self, step: Step) -> None:
        """Carry out an undo a dead process logged ahead of its write (``journal``): a fact's
        here, a message version's in the message index beside it."""
        if step["collection"] == "messages":
            if self.message_undo is None:
                raise BackendUnavailable("no message index to undo a message version in")
            self.message_undo(step)
            return
        with translated("undoing a dead worker's write"):
            apply_step(self._c, step)

    def close(self) -> None:
        if self._close is not None:
            self._close()


def _live_in(workspace: str, channel: str) -> _Filters:
    """Current, not retired versions of one channel (what the resolver compares against)."""
    return filters.current_in_channel(workspace, channel) & Filter.by_property("status").contains_any(
        list(filters.CURRENT_STATUSES)
    )


def _related(objects: Iterable[Any]) -> list[Related]:
    return [
        Related(f.fact_id, f.statement, f.valid_from, f.fact_type.value, f.origin)
        for f in (to_fact(o.properties) for o in objects)
    ]
