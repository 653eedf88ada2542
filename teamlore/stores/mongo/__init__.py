"""MongoDB's stores: messages, channels, the audit log, review items, tombstones, pages, page
versions and the routing index, written through the SQLite file's outbox (``journal``). The bundle
that puts them beside the file is ``teamlore.stores.with_mongo``."""
