"""Raw messages and channels in MongoDB: the same contract as the embedded store."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING

from teamlore.domain import (
    Attachment,
    AttachmentKind,
    Channel,
    MediaReference,
    Message,
    Scope,
    Source,
    Visibility,
)
from teamlore.stores.mongo.codec import Op, time_of, times
from teamlore.stores.mongo.journal import MISSING, WriteJournal
from teamlore.stores.mongo.runtime import Db, Document, MongoRuntime
from teamlore.timeutil import to_micros

# Storing a message that is already there changes only these (an edit, or a re-import of one);
# identity, author, time and deletion stay as first stored. Documents are written whole (codec).
UPDATED_ON_CONFLICT = ("text", "content_hash", "edited_at", "thread_id")


def _key(workspace: str, channel: str, message_id: str) -> dict[str, str]:
    return {"workspace": workspace, "channel": channel, "message_id": message_id}


def _fields(message: Message, names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(message, name)
        out.update(times(**{name: value}) if name in ("ts", "edited_at", "deleted_at") else {name: value})
    return out


_ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fold(text: str) -> str:
    return text.translate(_ASCII_FOLD)


def _message(doc: dict[str, Any]) -> Message:
    ts = time_of(doc, "ts")
    assert ts is not None
    return Message(
        platform=doc["platform"],
        workspace=doc["workspace"],
        channel=doc["channel"],
        message_id=doc["message_id"],
        thread_id=doc.get("thread_id"),
        author_id=doc["author_id"],
        author_name=doc["author_name"],
        ts=ts,
        text=doc["text"],
        permalink=doc["permalink"],
        content_hash=doc["content_hash"],
        edited_at=time_of(doc, "edited_at"),
        deleted_at=time_of(doc, "deleted_at"),
        shared_in=doc.get("shared_in"),
        file_ref=doc.get("file_ref", ""),
    )


class MongoMessageStore:
    def __init__(self, runtime: MongoRuntime, journal: WriteJournal) -> None:
        self._rt, self._journal = runtime, journal

    def put_channel(self, channel: Channel) -> None:
        key = {"workspace": channel.workspace, "channel": channel.channel}
        named = {"name": channel.name, "visibility": channel.visibility.value}
        # A later event without a channel name keeps the name already known.
        update = (
            {"$set": named, "$setOnInsert": {"platform": channel.platform}}
            if channel.name
            else {"$setOnInsert": {**named, "platform": channel.platform}}
        )
        self._journal.write(Op("channels", "update_one", key, update, upsert=True))

    def channels(self, workspace: str) -> list[Channel]:
        async def find(db: Db) -> list[Document]:
            cursor = (
                db["channels"]
                .find({"workspace": workspace})
                .sort([("name", ASCENDING), ("channel", ASCENDING)])
            )
            return await cursor.to_list()

        return [
            Channel(d["workspace"], d["channel"], d["name"], Visibility(d["visibility"]), d["platform"])
            for d in self._rt.run(find)
        ]

    def _doc(self, workspace: str, channel: str, message_id: str) -> dict[str, Any] | None:
        held: dict[str, Any] | None = self._journal.pending("message", (workspace, channel, message_id))
        if held is not MISSING:
            return held
        found = self._rt.run(lambda db: db["messages"].find_one(_key(workspace, channel, message_id)))
        self._journal.remember("message", (workspace, channel, message_id), found)
        return found

    def get_message(self, workspace: str, channel: str, message_id: str) -> Message | None:
        doc = self._doc(workspace, channel, message_id)
        return None if doc is None else _message(doc)

    def put_message(self, message: Message, recorded_at: datetime) -> None:
        key = (message.workspace, message.channel, message.message_id)
        existing = self._doc(*key)
        if existing is None:
            every = [f.name for f in dataclasses.fields(Message)]
            doc = {"_id": ObjectId(), **_fields(message, every), **times(recorded_at=recorded_at)}
            op = Op("messages", "insert_one", update=doc)
        else:
            doc = {**existing, **_fields(message, UPDATED_ON_CONFLICT)}
            op = Op("messages", "replace_one", {"_id": existing["_id"]}, doc)
        self._journal.write(op, ("message", key, doc))

    def mark_deleted(self, workspace: str, channel: str, message_id: str, at: datetime) -> None:
        key = (workspace, channel, message_id)
        existing = self._doc(*key)
        if existing is None or existing.get("deleted_at") is not None:
            return  # nothing stored, or deleted already: the first deletion time stays
        doc = {**existing, "text": "", **times(deleted_at=at)}
        self._journal.write(
            Op("messages", "replace_one", {"_id": existing["_id"]}, doc), ("message", key, doc)
        )

    def put_attachments(
        self, workspace: str, channel: str, message_id: str, attachments: Sequence[Attachment]
    ) -> None:
        """Replace the message's attachments with these."""
        key = _key(workspace, channel, message_id)
        self._journal.write(Op("attachments", "delete_many", key))
        for position, a in enumerate(attachments):
            doc = {
                "_id": f"{workspace}\x1f{channel}\x1f{message_id}\x1f{position}",
                **key,
                "position": position,
                "name": a.name,
                "mime_type": a.mime_type,
                "kind": a.kind.value,
                "size": a.size,
                "url": a.url,
                "download_url": a.download_url,
            }
            self._journal.write(Op("attachments", "insert_one", update=doc))

    def attachments(self, workspace: str, channel: str, message_id: str) -> list[Attachment]:
        """The message's attachments in the order it shared them."""
        key = _key(workspace, channel, message_id)
        found = self._rt.run(lambda db: db["attachments"].find(key).sort("position", 1).to_list())
        return [
            Attachment(
                name=a["name"],
                mime_type=a["mime_type"],
                size=a["size"],
                url=a["url"],
                download_url=a.get("download_url", ""),
            )
            for a in found
        ]

    def passages_of(self, workspace: str, channel: str, message_id: str) -> list[str]:
        """The live messages that are passages of files this message shared, by id."""

        async def find(db: Db) -> list[Document]:
            query = {"workspace": workspace, "channel": channel, "shared_in": message_id, "deleted_at": None}
            return await db["messages"].find(query, {"message_id": 1}).to_list()

        return sorted(d["message_id"] for d in self._rt.run(find))

    def _media_references(
        self, scope: Scope, words: Sequence[str], kind: AttachmentKind | None, limit: int
    ) -> list[MediaReference]:
        """Attachments of live messages in the scope whose name or mime type holds every word
        (ASCII letters in any case, as SQLite's LIKE)."""
        query: dict[str, Any] = {"workspace": scope.workspace, "channel": {"$in": sorted(scope.channels)}}
        if kind is not None:
            query["kind"] = kind.value
        wanted = [_fold(w) for w in words]
        found = [
            a
            for a in self._rt.run(lambda db: db["attachments"].find(query).to_list())
            if all(w in _fold(a["name"]) or w in _fold(a["mime_type"]) for w in wanted)
        ]
        if not found:
            return []
        shown = {
            "workspace": scope.workspace,
            "channel": {"$in": sorted({a["channel"] for a in found})},
            "message_id": {"$in": sorted({a["message_id"] for a in found})},
            "deleted_at": None,
        }
        messages = {
            (m["channel"], m["message_id"]): m
            for m in self._rt.run(lambda db: db["messages"].find(shown).to_list())
        }
        refs: list[tuple[tuple[int, str, int], MediaReference]] = []
        for a in found:
            m = messages.get((a["channel"], a["message_id"]))
            if m is None:
                continue
            ts = time_of(m, "ts")
            assert ts is not None
            order = (-to_micros(ts), a["message_id"], a["position"])  # newest first, as embedded
            refs.append(
                (
                    order,
                    MediaReference(
                        a["workspace"],
                        a["channel"],
                        a["message_id"],
                        m.get("thread_id"),
                        m["author_name"],
                        ts,
                        m["permalink"],
                        a["name"],
                        a["mime_type"],
                        AttachmentKind(a["kind"]),
                        a["size"],
                        a["url"],
                        a["position"],
                    ),
                )
            )
        refs.sort(key=lambda item: item[0])
        return [ref for _, ref in refs[:limit]]

    def sources(self, workspace: str, channel: str, message_ids: Sequence[str]) -> dict[str, Source]:
        if not message_ids:
            return {}

        async def find(db: Db) -> list[Document]:
            query = {"workspace": workspace, "channel": channel, "message_id": {"$in": list(message_ids)}}
            return await db["messages"].find(query).to_list()

        out = {}
        for d in self._rt.run(find):
            ts = time_of(d, "ts")
            assert ts is not None
            out[d["message_id"]] = Source(
                d["message_id"],
                d["author_id"],
                d["author_name"],
                ts,
                d["permalink"],
                time_of(d, "deleted_at"),
                d.get("file_ref", ""),
                d.get("shared_in"),
            )
        return out

    def by_permalink(self, workspace: str, channel: str, permalinks: Sequence[str]) -> dict[str, str]:
        """Permalink -> message id, for the permalinks of this channel's stored messages."""
        if not permalinks:
            return {}

        async def find(db: Db) -> list[Document]:
            wanted = sorted(set(permalinks))
            query = {"workspace": workspace, "channel": channel, "permalink": {"$in": wanted}}
            return await db["messages"].find(query, {"permalink": 1, "message_id": 1}).to_list()

        return {d["permalink"]: d["message_id"] for d in self._rt.run(find)}

    def thread(self, workspace: str, channel: str, thread_id: str, limit: int = 200) -> list[Message]:
        """A thread's opening message and its replies, oldest first (deleted ones included)."""

        async def find(db: Db) -> list[Document]:
            query = {
                "workspace": workspace,
                "channel": channel,
                "$or": [{"thread_id": thread_id}, {"message_id": thread_id}],
            }
            order = [("ts", ASCENDING), ("ts_us", ASCENDING), ("message_id", ASCENDING)]
            return await db["messages"].find(query).sort(order).limit(limit).to_list()

        return [_message(d) for d in self._rt.run(find)]

    def live_messages(self, workspace: str, channel: str, after: str, limit: int) -> list[Message]:
        """Stored, not deleted messages of a channel in message-id order, after ``after``."""

        async def find(db: Db) -> list[Document]:
            query = {
                "workspace": workspace,
                "channel": channel,
                "message_id": {"$gt": after},
                "deleted_at": None,
            }
            return await db["messages"].find(query).sort("message_id", ASCENDING).limit(limit).to_list()

        return [_message(d) for d in self._rt.run(find)]

    def live_between(self, workspace: str, channel: str, since: datetime, until: datetime) -> list[Message]:
        async def find(db: Db) -> list[Document]:
            # Stored times keep milliseconds in the date and the rest in ts_us: widen to whole
            # milliseconds here, then compare exactly.
            low = since.replace(microsecond=since.microsecond // 1000 * 1000)
            query = {
                "workspace": workspace,
                "channel": channel,
                "ts": {"$gte": low, "$lte": until},
                "deleted_at": None,
            }
            return await db["messages"].find(query).to_list()

        found = [_message(d) for d in self._rt.run(find)]
        return sorted((m for m in found if since <= m.ts < until), key=lambda m: (m.ts, m.message_id))

    def author_names(self, workspace: str) -> frozenset[str]:
        query = {"workspace": workspace, "author_name": {"$ne": ""}}
        names = {n.lower() for n in self._rt.run(lambda db: db["messages"].distinct("author_name", query))}
        # A first message from someone, stored earlier in the open transaction, counts too.
        names |= {
            doc["author_name"].lower()
            for (ws, _, _), doc in self._journal.pending_items("message")
            if ws == workspace and doc is not None and doc["author_name"]
        }
        return frozenset(names)

    def replies(self, workspace: str, channel: str, thread_id: str) -> list[Message]:
        query = {"workspace": workspace, "channel": channel, "thread_id": thread_id, "deleted_at": None}

        async def find(db: Db) -> list[Document]:
            order = [("ts", ASCENDING), ("message_id", ASCENDING)]
            return await db["messages"].find(query).sort(order).to_list()

        return [_message(d) for d in self._rt.run(find) if d["message_id"] != thread_id]

    def authored(self, workspace: str, author_id: str) -> list[tuple[str, str]]:
        async def find(db: Db) -> list[Document]:
            cursor = db["messages"].find(
                {"workspace": workspace, "author_id": author_id}, {"channel": 1, "message_id": 1}
            )
            return await cursor.sort([("channel", ASCENDING), ("message_id", ASCENDING)]).to_list()

        return [(d["channel"], d["message_id"]) for d in self._rt.run(find)]

    def erase_author(self, workspace: str, author_id: str, at: datetime) -> None:
        query = {"workspace": workspace, "author_id": author_id}
        for existing in self._rt.run(lambda db: db["messages"].find(query).to_list()):
            # File names can be personal data too: the person's attachments go with their text.
            shared = _key(workspace, existing["channel"], existing["message_id"])
            self._journal.write(Op("attachments", "delete_many", shared))
            doc = {**existing, "text": "", "author_name": "", "content_hash": "", "file_ref": ""}
            if existing.get("deleted_at") is None:
                doc.update(times(deleted_at=at))
            key = (workspace, existing["channel"], existing["message_id"])
            self._journal.write(
                Op("messages", "replace_one", {"_id": existing["_id"]}, doc), ("message", key, doc)
            )
