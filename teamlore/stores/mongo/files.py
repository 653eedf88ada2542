"""Shared files' records in MongoDB (``shared_files``, ``_id`` = "ws<US>channel<US>message<US>
position"): the same contract as the embedded store. Writes go through the unit of work
(``journal``), so an erasure's forgetting commits with the rest of it; reads inside a unit see
its held records (a record forgotten in it reads as gone)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from teamlore.stores.mongo.codec import Op, time_of, times
from teamlore.stores.mongo.journal import WriteJournal
from teamlore.stores.mongo.runtime import Document, MongoRuntime
from teamlore.stores.protocols import FileRecord, FileStatus

FILES = "shared_files"
Key = tuple[str, str, str, int]


def _id(key: Key) -> str:
    return "\x1f".join((*key[:3], str(key[3])))


def _doc(record: FileRecord) -> Document:
    key: Key = (record.workspace, record.channel, record.message_id, record.position)
    return {
        "_id": _id(key),
        "workspace": record.workspace,
        "channel": record.channel,
        "message_id": record.message_id,
        "position": record.position,
        "name": record.name,
        "sha256": record.sha256,
        "size": record.size,
        "status": record.status.value,
        "detail": record.detail,
        "pages": record.pages,
        "passages": record.passages,
        "attempts": record.attempts,
        **times(at=record.at),
    }


def _record(doc: dict[str, Any]) -> FileRecord:
    at = time_of(doc, "at")
    assert at is not None
    return FileRecord(
        doc["workspace"],
        doc["channel"],
        doc["message_id"],
        doc["position"],
        doc["name"],
        doc["sha256"],
        doc["size"],
        FileStatus(doc["status"]),
        doc["detail"],
        doc["pages"],
        doc["passages"],
        doc["attempts"],
        at,
    )


def _key(record: FileRecord) -> Key:
    return (record.workspace, record.channel, record.message_id, record.position)


class MongoFileStore:
    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

    def _find(self, query: Document) -> dict[Key, FileRecord]:
        """Records matching ``query`` in MongoDB, with this unit's held ones over them (a held
        None: forgotten here). Held records are matched by the caller's own filter."""
        docs = self._rt.run(lambda db: db[FILES].find(query).to_list())
        found = {_key(r): r for r in map(_record, docs)}
        for key, held in self._journal.pending_items(FILES):
            found.pop(key, None)
            if held is not None:
                found[key] = held
        return found

    def put(self, record: FileRecord) -> None:
        doc = _doc(record)
        self._journal.write(Op(FILES, "delete_many", {"_id": doc["_id"]}))
        self._journal.write(Op(FILES, "insert_one", update=doc), (FILES, _key(record), record))

    def get(self, workspace: str, channel: str, message_id: str, position: int) -> FileRecord | None:
        key: Key = (workspace, channel, message_id, position)
        return self._find({"_id": _id(key)}).get(key)

    def of_messages(self, workspace: str, messages: Sequence[tuple[str, str]]) -> list[FileRecord]:
        order = {m: i for i, m in reversed(list(enumerate(messages)))}
        if not order:
            return []
        query = {
            "workspace": workspace,
            "channel": {"$in": sorted({c for c, _ in order})},
            "message_id": {"$in": sorted({m for _, m in order})},
        }
        found = self._find(query)
        mine = [k for k in found if k[0] == workspace and k[1:3] in order]
        return [found[k] for k in sorted(mine, key=lambda k: (order[k[1:3]], k[3]))]

    def with_status(
        self, workspace: str, channels: Sequence[str], statuses: Collection[FileStatus]
    ) -> list[FileRecord]:
        kinds = {s.value for s in statuses}
        query = {"workspace": workspace, "channel": {"$in": list(channels)}, "status": {"$in": sorted(kinds)}}
        found = self._find(query)
        return [
            found[k]
            for k in sorted(found)
            if k[0] == workspace and k[1] in channels and found[k].status.value in kinds
        ]

    def forget(
        self, workspace: str, messages: Sequence[tuple[str, str]], from_position: int = 0
    ) -> list[str]:
        shas: set[str] = set()
        for record in self.of_messages(workspace, messages):
            if record.position >= from_position:
                shas.add(record.sha256)
                key = _key(record)
                self._journal.write(Op(FILES, "delete_many", {"_id": _id(key)}), (FILES, key, None))
        return self.unreferenced(shas)

    def unreferenced(self, shas: Iterable[str]) -> list[str]:
        wanted = sorted({s for s in shas if s})
        if not wanted:
            return []
        held = {r.sha256 for r in self._find({"sha256": {"$in": wanted}}).values()}
        return [s for s in wanted if s not in held]


__all__ = ["MongoFileStore"]
