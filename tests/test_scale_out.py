"""Issue 18: worker processes with no shared disk, on one Redis, one MongoDB (nx-27017, a server
process of its own) and one Weaviate (the wire double, over the client's real protocol), end
where one inline run of the same history ends: the same facts, pages and audit, with workers
killed and restarted at random while they work.

Each channel's events travel in one batch, and the batches go one after another (the next once
the last committed), each to whichever worker is free; the inline run applies the same batches
in the same order. Two things keep this from being a free-for-all of concurrent batches (both in
docs/deployment.md, "Order, and what the multi-process test shows"): the channel lock keeps two
workers off one channel but not a channel's events in order across batches (a batch that finds
its channel held goes back on the queue, and a later one may be applied first); and what a
message means depends on the people the workspace knows when it is read (its authors so far,
every channel's), so channels applied concurrently may read differently from run to run."""

from __future__ import annotations

import os
import random
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from pymongo import MongoClient

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.events_file import read_events_file
from teamlore.workers.pipeline import ingest
from teamlore.workers.producer import Producer

from .conftest import SAMPLE
from .mongo_server import drop_database, fresh_database
from .test_production import Worker

WS = "T0ACME"
SECRET = "one secret the whole stack shares"


def _stack(server, weaviate_wire, database: str, collection: str) -> dict[str, object]:
    return {
        "mongo_url": server,
        "mongo_db": database,
        "weaviate_url": weaviate_wire.url,
        "weaviate_grpc_port": weaviate_wire.grpc_port,
        "weaviate_collection": collection,
        "hash_secret": SECRET,
    }


def _batches() -> list[list]:
    """One batch per channel, each in the file's order, channels by their first message."""
    by_channel: dict[str, list] = {}
    for item in read_events_file(SAMPLE, 40_000):
        by_channel.setdefault(item.event.channel, []).append(item.event)
    return list(by_channel.values())


def _knowledge(lore: Teamlore, raw: MongoClient) -> tuple[set[tuple], dict[str, str], Counter]:
    """Current facts, current pages (after a flush of everything due) and the audit log's events
    (without their times and sequence numbers, which the clock and the order of commits set)."""
    channels = [c.channel for c in lore.stores.messages.channels(WS)]
    facts = set()
    for channel in channels:
        for fact_id in lore.stores.facts.current_ids(WS, channel):
            f = lore.stores.facts.current_version(fact_id)
            assert f is not None
            facts.add(
                (f.fact_id, f.version, f.statement, f.status.value, f.valid_from, f.valid_to, f.evidence)
            )
    lore.wiki.flush(everything=True)
    pages = {
        p.page_id: lore.stores.pages.current(p.page_id).markdown
        for p, version in lore.stores.pages.pages(WS, channels)
        if version
    }
    audit = Counter(
        (d["event"], d["channel"], tuple(sorted(d["fact_ids"])))
        for d in raw[lore.settings.mongo_db]["audit_log"].find({})
    )
    return facts, pages, audit


@pytest.fixture(scope="module")
def raw(nx_server):
    client: MongoClient = MongoClient(nx_server, serverSelectionTimeoutMS=5000)
    yield client
    client.close()


@pytest.fixture(scope="module")
def inline(nx_server, weaviate_wire, embedder, raw, tmp_path_factory):
    database = fresh_database()
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("inline"),
        _env_file=None,
        **_stack(nx_server, weaviate_wire, database, f"Inline{uuid.uuid4().hex[:10]}"),
    )
    lore = Teamlore(settings, embedder=embedder)
    for batch in _batches():
        ingest(batch, lore.pipeline)
    known = _knowledge(lore, raw)
    lore.close()
    yield database, known
    drop_database(nx_server, database)


def _difference(got: set[tuple], want: set[tuple]) -> str:
    lines = [f"+ {row[6]} {row[:4]} by {row[7]}" for row in sorted(got - want, key=str)]
    lines += [f"- {row[6]} {row[:4]} by {row[7]}" for row in sorted(want - got, key=str)]
    head = f"the workers' {len(got)} facts (+) against the inline run's {len(want)} (-):\n"
    return head + "\n".join(lines)


class _Worker(Worker):
    """A `teamlore worker` under the no-SQLite hook (tests/no_sqlite.py)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        super().__init__(Path(env["TEAMLORE_DATA_DIR"]), log, env=env, module="tests.no_sqlite")

    def working(self) -> bool:
        """A batch received and not finished yet (Celery logs both)."""
        text = self.log.read_text(errors="replace")
        return text.count("] received") > text.count("] succeeded in") + text.count("] raised")


def _until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_three_workers_with_no_shared_disk_killed_at_random_end_where_one_inline_run_ends(
    tmp_path, nx_server, weaviate_wire, embedder, raw, inline
):
    from .redis_server import OwnRedis

    reference_db, (facts, pages, audit) = inline
    database, collection = fresh_database(), f"Scale{uuid.uuid4().hex[:10]}"
    # The vectors the inline run computed: the workers find them in the shared cache, not embed again.
    cached = list(raw[reference_db]["embeddings"].find({}))
    raw[database]["embeddings"].insert_many(cached)
    broker = OwnRedis(tmp_path / "redis").start()
    stack = _stack(nx_server, weaviate_wire, database, collection)
    env = {
        **os.environ,
        **{f"TEAMLORE_{k.upper()}": str(v) for k, v in stack.items()},
        "TEAMLORE_REDIS_URL": broker.url,
        "TEAMLORE_CELERY_VISIBILITY_TIMEOUT_S": "4",
        "TEAMLORE_CELERY_RESTORE_EVERY_S": "1",
        "TEAMLORE_CHANNEL_LOCK_LEASE_S": "2",
        "TEAMLORE_WIKI_WINDOW_S": "0",
        "OMP_NUM_THREADS": "1",
    }
    folders = [tmp_path / f"worker{i}" for i in range(3)]  # each its own, empty, never written
    for folder in folders:
        folder.mkdir()

    started: list[_Worker] = []

    def start(i: int) -> _Worker:  # a log of each process's own, ready when it returns
        worker = _Worker(
            {**env, "TEAMLORE_DATA_DIR": str(folders[i])}, tmp_path / f"worker{len(started)}.log"
        )
        started.append(worker)
        return worker

    workers = [start(i) for i in range(3)]
    batches = _batches()
    ledger = raw[database]["event_ledger"]
    rng = random.Random(18)
    # A worker dies in each of the two longest batches (seconds of work: it dies mid-batch).
    doomed = set(sorted(range(len(batches)), key=lambda n: -len(batches[n]))[:2])
    killed = 0
    try:
        producer = Producer(Settings(data_dir=tmp_path / "producer", redis_url=broker.url, _env_file=None))
        applied = 0
        for n, batch in enumerate(batches):
            assert producer.enqueue(batch).sent == len(batch)
            applied += len({e.idempotency_key for e in batch})
            if n in doomed:  # the worker that took it dies a random while into it; a new one starts
                _until(lambda: any(w.working() for w in workers), 60, "a worker to take the batch")
                time.sleep(rng.uniform(1.0, 2.0))
                i = next((i for i, w in enumerate(workers) if w.working()), None)
                if i is not None and ledger.count_documents({}) < applied:
                    workers[i].kill()
                    workers[i] = start(i)
                    killed += 1
            _until(lambda want=applied: ledger.count_documents({}) >= want, 180, f"batch {n} to be applied")
    finally:
        for w in workers:
            w.stop()
    try:
        assert all(list(f.iterdir()) == [] for f in folders)  # no worker wrote to its disk
        logs = "".join(w.log.read_text(errors="replace") for w in started)
        assert "SQLite connection" not in logs
        assert killed == 2 and "a dead worker left" in logs  # the undos it logged ahead were applied
        reader = {**stack, "redis_url": broker.url}  # the workers' dirty marks are in Redis
        settings = Settings(data_dir=tmp_path / "reader", _env_file=None, **reader)
        lore = Teamlore(settings, embedder=embedder)
        try:
            got_facts, got_pages, got_audit = _knowledge(lore, raw)
        finally:
            lore.close()
        assert len(facts) > 50
        assert got_facts == facts, _difference(got_facts, facts)
        assert got_pages == pages and pages
        assert got_audit == audit
    finally:
        broker.stop()
        drop_database(nx_server, database)
