"""One OS process with its own weaviate-client and its own empty data folder, on the wire server.

``python -m tests.wire_client URL GRPC_PORT COLLECTION DATA_DIR STEP [ARG...]`` opens the real
``WeaviateFactBackend`` (teamlore.stores.weaviate.open_fact_store) and does one step, printing its
answer as one JSON line:

- ``write PREFIX N``: N new facts in channel C1 (ids PREFIX1..PREFIXN), each with a vector;
- ``replace FACT_ID STATEMENT``: writes a version 2 replacing the current version 1, but once
  past write_version's check that version 1 is still current, prints ``read`` and waits for a
  line on stdin before inserting: ``won`` or ``lost`` (ConcurrentChange: another process
  replaced it first);
- ``read WORD``: the current fact ids of C1, the versions of each, and a keyword search;
- ``say MESSAGE_ID TEXT DAYS``: index a message of C1 posted DAYS after T0
  (``WeaviateMessageIndex.put``, with a vector);
- ``unsay MESSAGE_ID``: withdraw it (a deleted message);
- ``heard WORD``: the message index's raw keyword and semantic hits in C1, and its current
  versions' texts.

The data folder holds only this process's audit log and embedding cache: nothing is shared with
another process but the wire server. See tests/test_weaviate_wire.py.
"""

from __future__ import annotations

import json
import sys
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from teamlore.config import Settings
from teamlore.domain import Fact, Message, ResolvedView, Scope, content_hash
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import AuditEvent, ConcurrentChange
from teamlore.stores.weaviate import WeaviateFactBackend, open_fact_store, open_message_index

from .helpers import billing_fact
from .weaviate_wire import hermetic_client

WS, CHANNEL = "T1", "C1"
SCOPE = Scope(WS, [CHANNEL])
T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def fact(fact_id: str, statement: str, version: int = 1, recorded_from: datetime = NOW) -> Fact:
    return billing_fact(
        statement,
        fact_id,
        channel=CHANNEL,
        version=version,
        evidence=(f"m_{fact_id}_{version}",),
        valid_from=T0,
        recorded_from=recorded_from,
    )


def main(argv: list[str]) -> None:
    url, grpc_port, collection, data_dir, step, *args = argv
    settings = Settings(
        data_dir=Path(data_dir),
        weaviate_url=url,
        weaviate_grpc_port=int(grpc_port),
        weaviate_collection=collection,
        _env_file=None,
    )
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    stores = EmbeddedStores(Path(data_dir) / "teamlore.db")
    try:
        with hermetic_client(f"{url}/pypi/weaviate-client/json"):
            backend = open_fact_store(settings, stores.audit, stores.embeddings)
        stores.use_facts(backend)
        stores.use_message_index(open_message_index(settings, backend, stores.embeddings))
        print(json.dumps(run(backend, stores, step, args)), flush=True)
    finally:
        stores.close()


def run(backend: WeaviateFactBackend, stores: EmbeddedStores, step: str, args: list[str]) -> object:
    if step == "write":
        prefix, count = args[0], int(args[1])
        rng = np.random.default_rng(zlib.crc32(prefix.encode()))
        for i in range(1, count + 1):
            new = fact(f"{prefix}{i}", f"The {prefix} service number {i} bills in euros.")
            key = f"key-{new.fact_id}"
            stores.embeddings.put_vectors("test", {key: rng.standard_normal(8).astype(np.float32)})
            backend.write_version(new, None, audit(new, "created"), key)
        return {"wrote": [f"{prefix}{i}" for i in range(1, count + 1)]}
    if step == "replace":
        fact_id, statement = args
        current = backend.current_version(fact_id)
        assert current is not None and current.version == 1, current
        insert = backend._insert

        def insert_when_told(*args: object) -> None:
            # Every racer has passed write_version's own current-version check before any inserts:
            # only the server's refusal of a second object with the same id can stop one now.
            print("read", flush=True)
            sys.stdin.readline()
            insert(*args)  # type: ignore[arg-type]

        backend._insert = insert_when_told  # type: ignore[method-assign]
        new = fact(fact_id, statement, version=2, recorded_from=NOW + timedelta(hours=1))
        try:
            backend.write_version(new, current, audit(new, "updated"))
        except ConcurrentChange:
            return "lost"
        return "won"
    if step == "read":
        later = NOW + timedelta(days=1)
        view = ResolvedView(valid_at=later, known_at=later, include_history=False)
        ids = sorted(backend.current_ids(WS, CHANNEL))
        return {
            "current": ids,
            "versions": {i: [(f.version, f.statement) for f in backend._versions(i, SCOPE)] for i in ids},
            "keyword": sorted(h.fact.fact_id for h in backend._keyword(args[0], SCOPE, view, 50)),
        }
    return said(stores, step, args)


def said(stores: EmbeddedStores, step: str, args: list[str]) -> object:
    """The message index's steps: ``say``, ``unsay``, ``heard``."""
    index = stores.message_index
    if step == "say":
        message_id, text, days = args
        key = f"key-{message_id}"
        stores.embeddings.put_vectors("test", {key: _vector(text)})
        posted = T0 + timedelta(days=int(days))
        message = Message(
            "slack", WS, CHANNEL, message_id, None, "U1", "rita", posted, text, "", content_hash(text)
        )
        with stores.transaction():
            return {"wrote": index.put(message, text, NOW, key)}
    if step == "unsay":
        with stores.transaction():
            index.withdraw(WS, CHANNEL, args[0], NOW + timedelta(hours=1))
        return {"withdrew": args[0]}
    if step == "heard":
        later = NOW + timedelta(days=1)
        view = ResolvedView(valid_at=later, known_at=later, include_history=False)
        return {
            "keyword": sorted(h.message.message_id for h in index._keyword(args[0], SCOPE, view, 50)),
            "semantic": sorted(
                h.message.message_id for h in index._semantic(_vector(args[0]), SCOPE, view, 50)
            ),
        }
    raise SystemExit(f"unknown step {step}")


def _vector(text: str) -> np.ndarray:
    """A vector per word set: a query naming a message's first word lands nearest it."""
    return np.random.default_rng(zlib.crc32(text.split()[0].encode())).standard_normal(8).astype(np.float32)


def audit(fact: Fact, event: str) -> AuditEvent:
    return AuditEvent(
        event, "test", "wire", fact.recorded_from, fact.workspace, fact.channel, (fact.fact_id,)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
