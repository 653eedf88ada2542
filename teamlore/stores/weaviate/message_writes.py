"""The message index's write path on Weaviate: a new version per new text, closing the one it
replaces; a delete or an erasure writing every version again without text and vector; the copy
from the SQLite file. Reads are ``messages.WeaviateMessageIndex``'s.

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
from weaviate.classes.query import Filter, Sort
from weaviate.collections.classes.filters import _Filters
from weaviate.exceptions import UnexpectedStatusCodeError, WeaviateBaseError

from teamlore.domain import Message, MessageVersion
from teamlore.embedding import EmbeddingCache
from teamlore.errors import BackendUnavailable
from teamlore.stores.protocols import ConcurrentChange, ErasedMessages
from teamlore.stores.weaviate import filters
from teamlore.stores.weaviate.codec import message_properties, message_uuid, to_message_version
from teamlore.stores.weaviate.journal import Step, UndoJournal, apply_step
from teamlore.stores.weaviate.queries import floats, translated, walk
from teamlore.stores.weaviate.schema import MESSAGE_VECTOR
from teamlore.timeutil import SENTINEL

log = logging.getLogger(__name__)
STORE = "message index"


class MessageVersionWriter:
    """Writes message versions to one collection (see the module)."""

    def __init__(
        self,
        collection: Any,
        vectors: EmbeddingCache,
        journal: UndoJournal,
        max_results: int = 10_000,
        key_in_use: Callable[[str], bool] = lambda key: False,
    ) -> None:
        self._c = collection
        self._vectors = vectors
        self.journal = journal
        self._max = max_results
        # Whether something outside this collection (a fact version) still uses a cached vector.
        self._key_in_use = key_in_use

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
        where = filters.of_message(workspace, channel, message_id)
        versions = [to_message_version(p) for p in self._walk(where, "withdraw")]
        self._close_all([v for v in versions if v.recorded_to == SENTINEL], at)
        self._forget_unused(
            self._blank(versions, {"text": "", "terms": "", "speaker": "", "has_text": False})
        )

    def erase_author(self, workspace: str, author_id: str) -> ErasedMessages:
        """Blank every version of every message the person wrote (text, name, vector). Not
        undoable (that is the point); if it fails half-way, running the erasure again finishes it."""
        where = Filter.by_property("workspace").equal(workspace) & Filter.by_property("author_id").equal(
            author_id
        )
        versions = [to_message_version(p) for p in self._walk(where, "erasure")]
        blank = {"text": "", "terms": "", "speaker": "", "has_text": False, "author_name": ""}
        keys = self._blank(versions, blank, undoable=False)
        vectors = self._forget_unused(keys)
        erased = [replace(v, text="", author_name="") for v in versions if v.recorded_to == SENTINEL]
        return ErasedMessages(vectors, tuple(erased))

    def _open_versions(self, workspace: str, channel: str, message_id: str) -> list[MessageVersion]:
        """The message's versions the index holds now, highest first (more than one only when a
        write was cut short between its insert and its close)."""
        where = filters.of_message(workspace, channel, message_id) & filters.current()
        with translated("current version", STORE):
            found = self._c.query.fetch_objects(
                filters=where, sort=Sort.by_property("version", ascending=False), limit=min(100, self._max)
            )
        return [to_message_version(o.properties) for o in found.objects]

    def _insert(self, version: MessageVersion, embedding_key: str | None) -> None:
        vector = None if embedding_key is None else self._cached_vector(embedding_key)
        object_id = _object_id(version)
        channel = (version.workspace, version.channel)
        step = {"collection": "messages", "kind": "delete", "uuid": str(object_id)}
        self.journal.intend(channel, f"insert of message {version.message_id} v{version.version}", step)
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
            reopen = {"recorded_to": filters.to_stored(version.recorded_to)}
            step = {"collection": "messages", "kind": "update", "uuid": str(object_id), "properties": reopen}
            self.journal.intend(
                (version.workspace, version.channel), f"close of message {version.message_id}", step
            )
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
        if undoable:
            step = {
                "collection": "messages",
                "kind": "replace",
                "uuid": str(stored.uuid),
                "properties": {k: v for k, v in stored.properties.items() if v is not None},
                "vector": dict(stored.vector or {}) or None,
            }
            channel = (stored.properties["workspace"], stored.properties["channel"])
            self.journal.intend(channel, f"rewrite of message version {stored.uuid}", step)
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

    def undo(self, step: Step) -> None:
        """Carry out an undo a dead process logged ahead of its write (``journal``)."""
        with translated("undoing a dead worker's write", STORE):
            apply_step(self._c, step)

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
