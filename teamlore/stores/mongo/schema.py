"""The MongoDB collections, their indexes and the schema version, created by the code on start.

    channels       one per (workspace, channel)                      unique (workspace, channel)
    messages       one per (workspace, channel, message_id)          unique identity; (workspace,
                                                                     author_id); (workspace, author_name);
                                                                     (workspace, channel, ts)
    attachments    _id = "ws<US>channel<US>message<US>position"      (workspace, channel, message_id);
                   files shared with a message (name, type, url)    (workspace, channel, kind)
    audit_log      _id = sequence number, append-only                (_id only)
    audit_facts    _id = "fact<US>seq": which events name which fact  (fact_id, seq)
    review_items   _id = number from counters; open_key is           unique open_key;
                   "older<US>newer" while open, "#<id>" once closed  (workspace, channel, status)
    tombstones     one per (workspace, channel, content_hash)        unique identity
    pages          _id = page id; current_version; tokens[v-1] =     (workspace, channel, slug)
                   the _id of version v in page_versions
    page_versions  _id = a token written before the page points       (page_id, version)
                   at it (a save that dies leaves an unreferenced one)
    page_routes    the routing index; _id = "page<US>section<US>fact"  unique (page_id, section_key,
                   (an upsert on _id is cheap)                       fact_id); (fact_id)
    blobs.files    GridFS: _id = filename = a shared file's sha256;  (_id only)
                   written after its chunks (``blobs``)
    blobs.chunks   GridFS: files_id = the sha256, n, data            unique (files_id, n)
    counters       _id = name; value ($inc)
    api_tokens     _id = token id; the secret's SHA-256, never the    (workspace, created_at)
                   secret
    backfill_checkpoints  _id = "platform<US>ws<US>channel": a      (_id only)
                   backfill's cursor, a high-water mark
    llm_spend      _id = "role<US>model"; counts ($inc)              (_id only)
    llm_breakers   _id = role; the breaker's last published state   (_id only)
    llm_cache      _id = hash of prompt version, model and content  (_id only)
    embeddings     _id = cache key (model + text hash); model, dim,  (_id only)
                   vector (float32 bytes)
    event_ledger   _id = an event's idempotency key; outcome, at_us   (_id only)
    shared_files   _id = "ws<US>channel<US>message<US>position": what  (workspace, channel, message_id);
                   reading a shared file came to (``files``)         (workspace, channel, status); (sha256)
    channel_fences _id = a channel lock's key; fence = the newest     (_id only)
                   lock token that committed (``journal``)
    meta           _id = "schema"; version; _id = "text_key": the key
                   of the text hashes that outlive an erasure

Times are BSON datetimes (UTC, milliseconds) with the sub-millisecond rest in a ``<name>_us``
field beside them, so a time reads back exactly as written (see ``codec``).
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from teamlore.errors import BackendUnavailable
from teamlore.stores.mongo.runtime import Db

SCHEMA_VERSION = 1

INDEXES: dict[str, list[IndexModel]] = {
    "channels": [IndexModel([("workspace", ASCENDING), ("channel", ASCENDING)], unique=True)],
    "messages": [
        IndexModel(
            [("workspace", ASCENDING), ("channel", ASCENDING), ("message_id", ASCENDING)], unique=True
        ),
        IndexModel([("workspace", ASCENDING), ("author_id", ASCENDING)]),
        IndexModel([("workspace", ASCENDING), ("author_name", ASCENDING)]),
        IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("ts", ASCENDING)]),
    ],
    "attachments": [
        IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("message_id", ASCENDING)]),
        IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("kind", ASCENDING)]),
    ],
    "audit_facts": [IndexModel([("fact_id", ASCENDING), ("seq", ASCENDING)])],
    "review_items": [
        IndexModel([("open_key", ASCENDING)], unique=True),
        IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("status", ASCENDING)]),
    ],
    "tombstones": [
        IndexModel(
            [("workspace", ASCENDING), ("channel", ASCENDING), ("content_hash", ASCENDING)], unique=True
        )
    ],
    "pages": [IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("slug", ASCENDING)])],
    "page_versions": [IndexModel([("page_id", ASCENDING), ("version", ASCENDING)])],
    "blobs.chunks": [IndexModel([("files_id", ASCENDING), ("n", ASCENDING)], unique=True)],
    "api_tokens": [IndexModel([("workspace", ASCENDING), ("created_at", ASCENDING)])],
    "shared_files": [
        IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("message_id", ASCENDING)]),
        IndexModel([("workspace", ASCENDING), ("channel", ASCENDING), ("status", ASCENDING)]),
        IndexModel([("sha256", ASCENDING)]),
    ],
    "page_routes": [
        IndexModel([("page_id", ASCENDING), ("section_key", ASCENDING), ("fact_id", ASCENDING)], unique=True),
        IndexModel([("fact_id", ASCENDING)]),
    ],
}


async def ensure_schema(db: Db) -> None:
    """Create the indexes (idempotent) and check, or write, the schema version marker."""
    for collection, indexes in INDEXES.items():
        await db[collection].create_indexes(indexes)
    await db["meta"].update_one({"_id": "schema"}, {"$setOnInsert": {"version": SCHEMA_VERSION}}, upsert=True)
    marker = await db["meta"].find_one({"_id": "schema"})
    found = None if marker is None else marker.get("version")
    if found != SCHEMA_VERSION:
        raise BackendUnavailable(
            f"MongoDB database {db.name} has schema version {found}, this Teamlore expects "
            f"{SCHEMA_VERSION}; use a new TEAMLORE_MONGO_DB or migrate it"
        )
