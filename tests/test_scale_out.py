"""Issue 18: worker processes with no shared disk, on one Redis, one MongoDB (nx-27017, a server
process of its own) and one Weaviate (the wire double, over the client's real protocol), end
where one inline run of the same history ends: the same facts, pages and audit, with workers
killed and restarted at random while they work.

The history is the sample and, after it, a synthetic history of another workspace
(bench/synthetic.py). Every channel's events travel in batches of ``SIZE``, all queued at once,
channels interleaved; three workers take them as they come, each channel held by one worker at a
time and its batches applied in the order they were queued (``stores.redis.channel_order``); the
inline run applies the same batches one after another. One thing is fixed first
(docs/deployment.md, "What the multi-process test shows"): what a message means depends on the
people the workspace knows when it is read (its authors so far, every channel's), so a roll call,
one greeting by each author, goes in before the rest, in both runs; without it, channels applied
in another order than the inline run's may read differently."""

from __future__ import annotations

import importlib.util
import itertools
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
from teamlore.domain import EventKind
from teamlore.workers.pipeline import ingest
from teamlore.workers.producer import Producer

from .conftest import SAMPLE
from .mongo_server import drop_database, fresh_database
from .test_production import Worker

WS = "T0ACME"
WORKSPACES = (WS, "T0BENCH")  # the sample's, the synthetic history's
ROOT = Path(__file__).resolve().parents[1]
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


SIZE = 30
SYNTHETIC = 240  # events of bench/synthetic.py's history (workspace T0BENCH), after the sample's


def _history() -> list:
    """The sample, then a synthetic history of another workspace (bench/synthetic.py)."""
    spec = importlib.util.spec_from_file_location("synthetic", ROOT / "bench" / "synthetic.py")
    assert spec is not None and spec.loader is not None
    synthetic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synthetic)
    return [item.event for item in read_events_file(SAMPLE, 40_000)] + synthetic.generate(SYNTHETIC, seed=18)


def _roll_call(history: list) -> list:
    """One greeting by each author of the history, in a channel of its own in their workspace."""
    first: dict[tuple[str, str], object] = {}
    for e in history:
        first.setdefault((e.workspace, e.author_id), e)
    hello = {"channel": "C00HELLO", "channel_name": "hello", "kind": EventKind.CREATED, "text": "Hi!"}
    hello |= {"thread_id": None, "shared_in": None, "file_ref": "", "permalink": ""}
    return [e.model_copy(update={**hello, "message_id": f"hi-{a}"}) for (_, a), e in first.items()]


def _batches(history: list) -> list[list]:
    """Each channel's events in the history's order, in batches of ``SIZE``, the channels' batches
    interleaved (the first of each channel, then the second of each...)."""
    by_channel: dict[tuple[str, str], list] = {}
    for e in history:
        by_channel.setdefault((e.workspace, e.channel), []).append(e)
    split = [[events[i : i + SIZE] for i in range(0, len(events), SIZE)] for events in by_channel.values()]
    return [batch for row in itertools.zip_longest(*split) for batch in row if batch]


def _knowledge(lore: Teamlore, raw: MongoClient) -> tuple[set[tuple], dict[str, str], Counter]:
    """Current facts, current pages (after a flush of everything due) and the audit log's events
    (without their times and sequence numbers, which the clock and the order of commits set)."""
    facts = set()
    for workspace in WORKSPACES:
        for channel in [c.channel for c in lore.stores.messages.channels(workspace)]:
            for fact_id in lore.stores.facts.current_ids(workspace, channel):
                f = lore.stores.facts.current_version(fact_id)
                assert f is not None
                facts.add(
                    (f.fact_id, f.version, f.statement, f.status.value, f.valid_from, f.valid_to, f.evidence)
                )
    lore.wiki.flush(everything=True)
    pages = {
        p.page_id: lore.stores.pages.current(p.page_id).markdown
        for workspace in WORKSPACES
        for p, version in lore.stores.pages.pages(
            workspace, [c.channel for c in lore.stores.messages.channels(workspace)]
        )
        if version
    }
    audit = Counter(
        (d["event"], d["channel"], tuple(sorted(d["fact_ids"])))
        for d in raw[lore.settings.mongo_db]["audit_log"].find({})
    )
    return facts, pages, audit


@pytest.fixture(scope="module")
def nx_server(tmp_path_factory):
    """This module's own nx-27017, its transactions one at a time (tests/nx_serial.py): three
    workers commit at once, and plain nx-27017 nests their transactions in one another."""
    from .mongo_server import OwnMongo

    server = OwnMongo(tmp_path_factory.mktemp("nx-serial"), serial=True).start()
    yield server.url
    server.stop()


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
    history = _history()
    for batch in [_roll_call(history), *_batches(history)]:
        ingest(batch, lore.pipeline)
    known = _knowledge(lore, raw)
    lore.close()
    yield database, known
    drop_database(nx_server, database)


def _difference(got: set[tuple], want: set[tuple]) -> str:
    lines = [f"+ {row[:4]} from {row[6]}" for row in sorted(got - want, key=str)]
    lines += [f"- {row[:4]} from {row[6]}" for row in sorted(want - got, key=str)]
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
        # A killed worker's batch comes back after 8 s; a batch waits 60 s at most for the one
        # before it (ETA tasks wait in a busy worker's memory meanwhile); held channels retry every 2 s.
        "TEAMLORE_CELERY_VISIBILITY_TIMEOUT_S": "8",
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
    history = _history()
    batches = _batches(history)
    ledger = raw[database]["event_ledger"]
    rng = random.Random(18)
    killed = 0
    try:
        producer = Producer(Settings(data_dir=tmp_path / "producer", redis_url=broker.url, _env_file=None))
        roll_call = _roll_call(history)
        assert producer.enqueue(roll_call).sent == len(roll_call)
        _until(lambda: ledger.count_documents({}) >= len(roll_call), 60, "the roll call to be applied")
        total = len(roll_call) + len({e.idempotency_key for batch in batches for e in batch})
        for batch in batches:  # all at once
            assert producer.enqueue(batch).sent == len(batch)
        while killed < 2:  # twice, a worker dies a random while into a batch; a new one takes its place
            time.sleep(rng.uniform(1.0, 3.0))
            i = next((i for i, w in enumerate(workers) if w.working()), None)
            if i is None or ledger.count_documents({}) >= total:
                break
            workers[i].kill()
            workers[i] = start(i)
            killed += 1
        _until(lambda: ledger.count_documents({}) >= total, 300, "every batch to be applied")
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
