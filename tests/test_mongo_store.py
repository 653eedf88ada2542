"""The MongoDB configuration as a whole: outages, at-least-once delivery across the two stores,
the schema it creates, erasure, and a client per forked worker."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time

import pytest
from pymongo import MongoClient
from pymongo.errors import DuplicateKeyError

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.domain import ReadView, Scope, content_hash
from teamlore.errors import BackendUnavailable, ConfigurationError, StoreUnreachable, TeamloreError
from teamlore.workers.claim_parts import masked
from teamlore.workers.pipeline import Outcome

from .conftest import STORE_KINDS, WS, event
from .helpers import put
from .mongo_server import OwnMongo, drop_database, fresh_database
from .redis_server import free_port
from .test_production import Worker

DEAD = "mongodb://127.0.0.1:{port}/?directConnection=true"
# The server stack's facts, never reached by the tests that stop at MongoDB (it is opened first).
NO_WEAVIATE = "http://127.0.0.1:9"


def _on_weaviate(server) -> dict[str, object]:
    """The settings that put facts and the message index on the Weaviate wire server, in a
    collection of their own."""
    import uuid

    return {
        "weaviate_url": server.url,
        "weaviate_grpc_port": server.grpc_port,
        "weaviate_collection": f"TeamloreTest{uuid.uuid4().hex[:12]}",
    }


@pytest.fixture(params=[k for k in STORE_KINDS if k != "embedded"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def raw(mongo_url):
    client: MongoClient = MongoClient(mongo_url, serverSelectionTimeoutMS=5000)
    yield client
    client.close()


def _database(lore: Teamlore) -> str:
    return lore.settings.mongo_db


def test_an_unreachable_mongodb_is_a_one_line_error_within_its_timeout(tmp_path, embedder):
    settings = Settings(
        data_dir=tmp_path,
        mongo_url=DEAD.format(port=free_port()),
        mongo_timeout_s=0.5,
        weaviate_url=NO_WEAVIATE,
        _env_file=None,
    )
    started = time.monotonic()
    with pytest.raises(StoreUnreachable) as caught:
        Teamlore(settings, embedder=embedder)
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert "\n" not in message and "TEAMLORE_MONGO_URL" in message and "unreachable" in message


def test_the_cli_reports_an_unreachable_mongodb_in_one_line_and_exits_1(tmp_path):
    env = {
        **os.environ,
        "TEAMLORE_DATA_DIR": str(tmp_path),
        "TEAMLORE_MONGO_URL": DEAD.format(port=free_port()),
        "TEAMLORE_MONGO_TIMEOUT_S": "0.5",
        "TEAMLORE_WEAVIATE_URL": NO_WEAVIATE,
    }
    done = subprocess.run(
        [sys.executable, "-m", "teamlore.cli", "channels", "--workspace", WS],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "TEAMLORE_MONGO_URL" in lines[0], done.stderr


def test_mongodb_without_weaviate_is_refused_in_one_line_before_connecting(tmp_path, embedder, nx_server):
    """The server stack keeps facts on Weaviate: the file's fact store and message index read the
    file's vectors, and MongoDB holds the embedding cache. The control: with Weaviate it starts."""
    alone = Settings(
        data_dir=tmp_path / "alone",
        mongo_url=DEAD.format(port=free_port()),
        mongo_timeout_s=30,
        _env_file=None,
    )
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as caught:
        Teamlore(alone, embedder=embedder)
    assert time.monotonic() - started < 2  # refused before the dead server's timeout
    message = str(caught.value)
    assert "\n" not in message and "TEAMLORE_WEAVIATE_URL" in message and "TEAMLORE_MONGO_URL" in message
    assert not (tmp_path / "alone" / "teamlore.sqlite3").exists()  # nothing opened


def test_mongodb_with_weaviate_starts_and_keeps_facts_there(
    tmp_path, embedder, clock, nx_server, weaviate_wire
):
    from teamlore.stores.weaviate.facts import WeaviateFactBackend

    database = fresh_database()
    settings = Settings(
        data_dir=tmp_path / "both",
        mongo_url=nx_server,
        mongo_db=database,
        _env_file=None,
        **_on_weaviate(weaviate_wire),
    )
    lore = Teamlore(settings, embedder=embedder, clock=clock)
    try:
        assert isinstance(lore.stores.facts, WeaviateFactBackend)
        assert put(lore, event("The billing cron runs at 02:00 UTC."))[0].outcome is Outcome.STORED
        assert [h.fact.statement for h in lore.reader.list(Scope(WS, ["C1"])).hits] == [
            "The billing cron runs at 02:00 UTC."
        ]
    finally:
        lore.close()
        drop_database(nx_server, database)


def test_the_cli_refuses_mongodb_without_weaviate_in_one_line(tmp_path):
    env = {
        **os.environ,
        "TEAMLORE_DATA_DIR": str(tmp_path),
        "TEAMLORE_MONGO_URL": DEAD.format(port=free_port()),
        "TEAMLORE_WEAVIATE_URL": "",
    }
    done = _refused_in_one_line(["channels", "--workspace", WS], env)
    assert "traceback" not in done.stderr.lower()


def _refused_in_one_line(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``teamlore ARGS`` exits 1 with one line naming TEAMLORE_WEAVIATE_URL."""
    done = subprocess.run(
        [sys.executable, "-m", "teamlore.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "TEAMLORE_WEAVIATE_URL" in lines[0]
    return done


def test_a_worker_refuses_mongodb_without_weaviate_before_it_starts(tmp_path):
    """Refused once, in the worker's parent, not by each pool process at its first task. The
    control is the worker below, which starts with Weaviate configured."""
    env = {
        **os.environ,
        "TEAMLORE_DATA_DIR": str(tmp_path),
        "TEAMLORE_REDIS_URL": "redis://127.0.0.1:6379/0",
        "TEAMLORE_MONGO_URL": DEAD.format(port=free_port()),
        "TEAMLORE_WEAVIATE_URL": "",
    }
    done = _refused_in_one_line(["worker", "--concurrency", "1"], env)
    assert "ready" not in done.stdout


def test_a_mongodb_that_goes_down_mid_import_leaves_the_batch_to_retry(
    tmp_path, embedder, clock, weaviate_wire
):
    server = OwnMongo(tmp_path / "nx", durable=True).start()
    settings = Settings(
        data_dir=tmp_path / "s",
        mongo_url=server.url,
        mongo_timeout_s=1,
        _env_file=None,
        **_on_weaviate(weaviate_wire),
    )
    lore = Teamlore(settings, embedder=embedder, clock=clock)
    try:
        assert put(lore, event("The billing cron runs at 02:00 UTC."))[0].outcome is Outcome.STORED
        server.stop()
        late = event("The search cluster is Elasticsearch 8.")
        started = time.monotonic()
        with pytest.raises(StoreUnreachable):
            put(lore, late)  # raised, not recorded as a failed event: the queue keeps the batch
        assert time.monotonic() - started < 15
        server.start()  # the same port and data file
        assert put(lore, late)[0].outcome is Outcome.STORED
        listed = sorted(h.fact.statement for h in lore.reader.list(Scope(WS, ["C1"])).hits)
        assert listed == ["The billing cron runs at 02:00 UTC.", "The search cluster is Elasticsearch 8."]
    finally:
        lore.close()
        server.stop()


def test_a_failed_event_leaves_no_message_behind_so_its_redelivery_is_applied(lore, monkeypatch, raw):
    from teamlore.workers import mutations

    real = mutations.create_or_revive

    def failing(*args, **kwargs):
        real(*args, **kwargs)  # the fact is written, then the event fails
        raise TeamloreError("simulated failure after a partial write")

    doomed = event("The staging database is PostgreSQL 16.")
    monkeypatch.setattr(mutations, "create_or_revive", failing)
    assert put(lore, doomed)[0].outcome is Outcome.FAILED
    assert lore.stores.messages.get_message(WS, "C1", doomed.message_id) is None
    assert raw[_database(lore)]["messages"].find_one({"message_id": doomed.message_id}) is None
    assert raw[_database(lore)]["audit_log"].count_documents({}) == 0  # its audit event went too
    monkeypatch.setattr(mutations, "create_or_revive", real)
    redelivered = put(lore, doomed)[0]
    assert redelivered.outcome is Outcome.STORED and len(redelivered.created) == 1
    assert raw[_database(lore)]["messages"].find_one({"message_id": doomed.message_id})["text"] == doomed.text


def test_a_commit_cut_short_leaves_nothing_in_mongodb_and_the_redelivery_applies_it(
    make_lore, monkeypatch, raw
):
    from teamlore.stores.mongo import journal

    lore = make_lore("crash")
    said = event("The release train leaves every second Thursday.")
    real = journal._apply
    halves: list[int] = []

    async def half(db, ops, session=None):
        halves.append(len(ops) // 2)
        await real(db, ops[: len(ops) // 2], session)  # the message and more reach MongoDB ...
        raise RuntimeError("killed halfway through the MongoDB commit")  # ... then the process dies

    monkeypatch.setattr(journal, "_apply", half)
    with pytest.raises(RuntimeError, match="halfway"):
        put(lore, said)
    assert halves and halves[0] >= 2  # the control: half a commit did write something
    database = raw[_database(lore)]
    for collection in ("messages", "audit_log", "event_ledger", "channels"):
        assert database[collection].find_one({}) is None, collection  # the transaction aborted
    assert lore.stores.facts.current_citing(WS, "C1", said.message_id) == []  # Weaviate's undone
    monkeypatch.undo()

    again = make_lore("crash")  # the next delivery, in the next process
    assert put(again, said)[0].outcome is Outcome.STORED
    assert database["messages"].find_one({"message_id": said.message_id})["text"] == said.text
    fact_id = again.reader.list(Scope(WS, ["C1"])).hits[0].fact.fact_id
    assert [e.event for e in again.reader.history(fact_id, Scope(WS, ["C1"])).audit] == ["created"]
    assert put(again, said)[0].outcome is Outcome.DUPLICATE  # its key committed with it
    assert database["event_ledger"].count_documents({}) == 1
    assert len(again.reader.history(fact_id, Scope(WS, ["C1"])).audit) == 1


def test_a_commit_whose_channel_lock_passed_to_another_worker_is_refused_and_writes_nothing(lore, raw):
    """The fence (issue 18): a worker whose lease ran out holds an older token than the channel's
    newest commit; its MongoDB transaction is refused whole, its Weaviate writes undone."""
    from teamlore.stores.mongo.journal import LeaseLost
    from teamlore.stores.redis.channel_lock import fence_key

    key, database = fence_key((WS, "C1")), raw[_database(lore)]
    with lore.stores.fenced({key: 7}):
        assert put(lore, event("The billing cron runs at 02:00 UTC."))[0].outcome is Outcome.STORED
    late = event("The staging database is PostgreSQL 16.")
    with lore.stores.fenced({key: 5}), pytest.raises(LeaseLost, match="passed to another worker"):
        put(lore, late)  # token 5 < 7: its lease ran out before it committed
    assert database["messages"].find_one({"message_id": late.message_id}) is None
    assert lore.stores.facts.current_citing(WS, "C1", late.message_id) == []
    assert not lore.stores.ledger.seen(late.idempotency_key)
    with lore.stores.fenced({key: 8}):  # control: the same event under a newer token
        assert put(lore, late)[0].outcome is Outcome.STORED
    assert database["channel_fences"].find_one({"_id": key})["fence"] == 8
    with lore.stores.fenced({fence_key((WS, "C2")): 1}):  # another channel's fence is its own
        assert put(lore, event("Deploys freeze on Fridays.", channel="C2"))[0].outcome is Outcome.STORED


def test_the_indexes_refuse_a_second_copy_of_an_identity(lore, raw):
    put(lore, event("The billing cron runs at 02:00 UTC.", message_id="9.1"))
    messages = raw[_database(lore)]["messages"]
    copy = {k: v for k, v in messages.find_one({"message_id": "9.1"}).items() if k != "_id"}
    with pytest.raises(DuplicateKeyError):
        messages.insert_one(copy)
    page_versions = raw[_database(lore)]["page_versions"].index_information()
    keyed = [info["key"] for info in page_versions.values()]
    assert [("page_id", 1), ("version", 1)] in [list(k) for k in keyed]


def test_a_database_written_by_another_schema_version_is_refused(make_lore, raw):
    lore = make_lore("old")
    raw[_database(lore)]["meta"].update_one({"_id": "schema"}, {"$set": {"version": 99}})
    lore.close()
    with pytest.raises(BackendUnavailable, match="schema version 99"):
        make_lore("old")


def test_erasure_removes_a_persons_text_from_mongodb_and_keeps_the_log(lore, raw):
    put(lore, event("The Zanzibar project codename is Marigold.", author_id="UZED", author_name="zed"))
    put(lore, event("The office lease ends in December.", author_id="U1"))
    lore.wiki.flush(everything=True)
    database = raw[_database(lore)]
    assert "Marigold" in str(list(database["page_versions"].find()))  # control: the wiki showed it
    events_before = database["audit_log"].count_documents({})
    report = lore.erase_author(WS, "UZED", actor="dpo")
    lore.wiki.flush(everything=True)
    assert report.messages == 1 and len(report.facts_erased) == 1
    zed = database["messages"].find_one({"author_id": "UZED"})
    assert (zed["text"], zed["author_name"], zed["content_hash"]) == ("", "", "")
    assert zed["deleted_at"] is not None
    assert database["messages"].find_one({"author_id": "U1"})["text"] == "The office lease ends in December."
    assert database["audit_log"].count_documents({}) > events_before
    assert database["audit_log"].find_one(sort=[("_id", -1)])["event"] == "erased"
    assert "Marigold" not in str(list(database["page_versions"].find()))
    assert "Marigold" not in str(list(database["pages"].find()))


def test_erasure_leaves_no_word_or_plain_hash_in_mongodb_or_the_file(lore, raw):
    zed = {"author_id": "UZED", "author_name": "zed"}
    question = event("Is the Snorkelwhale offsite still on?", message_id="q1", thread_id="q1", **zed)
    said = event("The Yarrowmint budget is forty thousand euros.", message_id="y1", **zed)
    put(lore, question, event("yes, still on", message_id="a1", thread_id="q1", author_id="U2"))
    put(lore, said, event("The Tiddlywomp cluster moves in March.", message_id="t1", author_id="U2"))
    put(lore, event(kind="message.deleted", message_id="y1", ts="2026-01-06T10:00:00Z", **zed))  # a tombstone
    lore.wiki.flush(everything=True)
    database = raw[_database(lore)]
    statements = _statements(lore)
    plain = {content_hash(s) for s in statements if "snorkelwhale" in s.lower() or "yarrowmint" in s.lower()}
    everything = _dump(database, lore)
    assert "snorkelwhale" in everything and "yarrowmint" in everything and len(plain) == 2  # control
    assert any(h in everything for h in plain)  # control: the tombstone holds a plain hash
    lore.erase_author(WS, "UZED", actor="dpo")
    lore.wiki.flush(everything=True)
    everything = _dump(database, lore)
    assert "snorkelwhale" not in everything and "yarrowmint" not in everything
    assert not [h for h in plain if h in everything]
    assert "tiddlywomp" in everything and "yes, still on" in everything  # control: the others' words


def test_erasure_forgets_a_persons_vectors_in_mongodb_and_keeps_the_others(lore, raw):
    """The server stack's embedding cache is MongoDB's: erasure's forget reaches it (a vector is
    derived from the person's words). The control: another person's vectors stay."""
    said = "The Zanzibar project codename is Marigold."
    other = "The office lease ends in December."
    put(lore, event(other, author_id="U1", author_name="alice", message_id="1.0"))
    put(lore, event(said, author_id="UZED", author_name="zed", message_id="2.0", ts="2026-01-05T11:00:00Z"))
    key = lore.embedder.key
    theirs = {key(said), key(f"alice: {other}\nzed: {said}")}  # the statement, the passage with context
    others = {key(other), key(f"alice: {other}")}
    embeddings = raw[_database(lore)]["embeddings"]
    held = lambda: {doc["_id"] for doc in embeddings.find({}, {"_id": 1})}  # noqa: E731
    assert theirs | others <= held()  # control: the cache held both people's vectors
    assert lore.stores.db.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0
    lore.erase_author(WS, "UZED", actor="dpo")
    assert not theirs & held()
    assert others <= held()


def _statements(lore: Teamlore) -> set[str]:
    """Every fact's statement, retired ones too (the facts are on Weaviate)."""
    listed = lore.reader.list(Scope(WS, ["C1"]), ReadView(include_history=True), k=100)
    return {h.fact.statement for h in listed.hits}


def _dump(database, lore: Teamlore) -> str:
    """Every document of every collection, and every byte of the data folder, lowercased."""
    docs = [str(list(database[name].find())) for name in database.list_collection_names()]
    files = [p.read_bytes().decode("latin-1") for p in lore.settings.data_dir.rglob("*") if p.is_file()]
    return "\n".join(docs + files).lower()


def _use_in_child(lore: Teamlore, queue) -> None:
    put(lore, event("The child worker stores this.", channel="CKID"))
    queue.put(
        ([c.channel for c in lore.stores.messages.channels(WS)], lore.stores.runtime._pid == os.getpid())
    )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+: fork() with threads running
def test_a_forked_worker_opens_its_own_client_and_the_parent_keeps_its_own(lore):
    put(lore, event("The parent stores this first.", channel="CDAD"))
    # The model's OpenMP pool does not survive fork() once started (a Celery parent never embeds):
    # the child's passage, the statement the extractor's type head reads with its vector, and the
    # statement's masked form the resolver compares by meaning are embedded here, so the child
    # finds them all in the store's cache.
    statement = "The child worker stores this."
    lore.embedder.ensure_passages([f"alice: {statement}", statement, masked(statement)])
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_use_in_child, args=(lore, queue))
    child.start()
    channels, own_client = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0 and own_client
    assert sorted(channels) == ["CDAD", "CKID"]
    put(lore, event("The parent goes on after the fork.", channel="CDAD"))
    assert sorted(c.channel for c in lore.stores.messages.channels(WS)) == ["CDAD", "CKID"]


def test_a_private_database_is_dropped_by_the_helper(mongo_url):
    # The fixtures leave nothing behind on a shared server.
    name = fresh_database()
    client: MongoClient = MongoClient(mongo_url, serverSelectionTimeoutMS=5000)
    try:
        client[name]["x"].insert_one({"a": 1})
        drop_database(mongo_url, name)
        assert name not in client.list_database_names()
    finally:
        client.close()


def test_a_worker_keeps_a_batch_queued_while_mongodb_is_down_and_ingests_it_when_back(
    tmp_path, weaviate_wire
):
    from teamlore.workers.producer import Producer

    from .redis_server import OwnRedis

    broker = OwnRedis(tmp_path / "redis").start()
    server = OwnMongo(tmp_path / "nx", durable=True).start()
    database, data_dir, log = fresh_database(), tmp_path / "data", tmp_path / "worker.log"
    env = _stack_env(data_dir, broker, server, database, weaviate_wire, TEAMLORE_MONGO_TIMEOUT_S="1")
    worker = Worker(data_dir, log, env=env)
    try:
        server.stop()
        said = event("The staging database is PostgreSQL 16.")
        producer = Producer(Settings(data_dir=data_dir, redis_url=broker.url, _env_file=None))
        assert producer.enqueue([said]).sent == 1
        _wait_for(lambda: log.read_text(errors="replace").count("Retry in") >= 2, worker.proc, log)
        assert "TEAMLORE_MONGO_URL" in log.read_text(errors="replace")  # says what to check
        server.start()
        client: MongoClient = MongoClient(server.url, serverSelectionTimeoutMS=5000)
        try:
            stored = client[database]["messages"]
            _wait_for(lambda: stored.find_one({"message_id": said.message_id}) is not None, worker.proc, log)
            # Its vectors went to MongoDB's embedding cache; the worker has no SQLite file.
            assert client[database]["embeddings"].count_documents({}) > 0
        finally:
            client.close()
        assert not (data_dir / "teamlore.sqlite3").exists()  # no file at all in the server stack
    finally:
        worker.stop()
        server.stop()
        broker.stop()


def test_a_server_stack_worker_opens_no_sqlite_file_and_writes_nothing_to_its_disk(tmp_path, weaviate_wire):
    """Redis, MongoDB and Weaviate hold everything: the worker runs under an audit hook that ends it
    on any SQLite connection, with an empty, read-only data folder (root ignores the mode: the
    hook and the folder left empty are what this test checks)."""
    from teamlore.workers.producer import Producer

    from .redis_server import OwnRedis

    broker = OwnRedis(tmp_path / "redis").start()
    server = OwnMongo(tmp_path / "nx").start()
    database, data_dir, log = fresh_database(), tmp_path / "empty", tmp_path / "worker.log"
    data_dir.mkdir()
    data_dir.chmod(0o555)
    secret = {"TEAMLORE_HASH_SECRET": "a secret every process of the stack shares"}
    env = _stack_env(data_dir, broker, server, database, weaviate_wire, **secret)
    worker = Worker(data_dir, log, env=env, module="tests.no_sqlite")
    client: MongoClient = MongoClient(server.url, serverSelectionTimeoutMS=5000)
    try:
        said = [
            event("The staging database is PostgreSQL 16.", channel="C1", message_id="m1"),
            event("Deploys freeze every Friday at noon.", channel="C2", message_id="m2"),
        ]
        edit = event(
            "The staging database is PostgreSQL 17.",
            kind="message.edited",
            message_id="m1",
            ts="2026-01-05T11:00:00Z",
        )
        producer = Producer(Settings(data_dir=tmp_path / "producer", redis_url=broker.url, _env_file=None))
        assert producer.enqueue(said).sent == 2
        ledger = client[database]["event_ledger"]
        _wait_for(lambda: len(list(ledger.find({}))) == 2, worker.proc, log)
        assert producer.enqueue([edit]).sent == 1
        _wait_for(lambda: len(list(ledger.find({}))) == 3, worker.proc, log)
        stored = client[database]["messages"].find_one({"message_id": said[0].message_id})
        assert stored["text"] == edit.text
        assert worker.proc.poll() is None  # the hook would have ended it (exit 97)
        events = [e["event"] for e in client[database]["audit_log"].find({})]
        assert events.count("created") >= 3 and len(events) >= 4, events  # the edit changed its fact
        assert "SQLite connection" not in log.read_text(errors="replace")
        assert list(data_dir.iterdir()) == []  # nothing written beside it either
    finally:
        client.close()
        worker.stop()
        data_dir.chmod(0o755)
        server.stop()
        broker.stop()


def test_the_audit_hook_does_end_a_process_that_opens_sqlite(tmp_path):
    """The control for the test above: the same hook, a command that opens the file."""
    from .no_sqlite import REFUSED

    done = subprocess.run(
        [sys.executable, "-m", "tests.no_sqlite", "channels", "-w", "T1"],
        env={**os.environ, "TEAMLORE_DATA_DIR": str(tmp_path / "data")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == REFUSED, done.stderr
    assert "a SQLite connection was opened" in done.stderr


def _stack_env(data_dir, broker, server, database: str, weaviate_wire, **extra: str) -> dict[str, str]:
    """A worker's environment for the server stack on the test's own servers."""
    return {
        **os.environ,
        "TEAMLORE_DATA_DIR": str(data_dir),
        "TEAMLORE_REDIS_URL": broker.url,
        "TEAMLORE_MONGO_URL": server.url,
        "TEAMLORE_MONGO_DB": database,
        **{f"TEAMLORE_{k.upper()}": str(v) for k, v in _on_weaviate(weaviate_wire).items()},
        **extra,
    }


def _wait_for(predicate, worker: subprocess.Popen, log, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert worker.poll() is None, log.read_text(errors="replace")
        time.sleep(0.2)
    raise AssertionError(f"timed out:\n{log.read_text(errors='replace')[-3000:]}")
