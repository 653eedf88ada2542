"""MongoDB's stores: messages, channels, the audit log, review items, tombstones, pages, page
versions, the routing index, the event ledger and shared files' records, written through one unit
of work committed as a MongoDB transaction (``journal``). The bundle is
``teamlore.stores.with_mongo``."""
