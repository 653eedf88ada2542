"""Worker safety against a Redis of the test's own: deliveries counted in Redis, the dead-letter
list (a poison event that kills the worker process ends there, every other event is stored, replay
moves it back), the orphan-edit schedule, and a spool shared by several writer processes."""

from __future__ import annotations

import base64
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from teamlore.cli import main
from teamlore.config import Settings
from teamlore.stores.redis.channel_order import ChannelOrder
from teamlore.workers.celery_app import INGEST
from teamlore.workers.dead_letter import DeadLetters
from teamlore.workers.producer import Producer
from teamlore.workers.tasks import orphan_delays

from .conftest import event
from .redis_server import OwnRedis
from .test_production import Worker

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory):
    server = OwnRedis(tmp_path_factory.mktemp("redis"), aof=False).start()
    yield server
    server.stop()


@pytest.fixture
def client(own_redis):
    client = redis.Redis.from_url(own_redis.url, decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()


def _env(data_dir: Path, url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TEAMLORE_REDIS_URL": url,
        "TEAMLORE_DATA_DIR": str(data_dir),
        "TEAMLORE_CELERY_VISIBILITY_TIMEOUT_S": "30",
        "TEAMLORE_WIKI_WINDOW_S": "0",
        **extra,
    }


def _queued_events(client: redis.Redis, queue: str = INGEST) -> list[dict]:
    """The events of every ingest task waiting on ``queue`` (kombu's JSON envelope, body base64)."""
    events = []
    for raw in client.lrange(queue, 0, -1):
        args, _kwargs, _embed = json.loads(base64.b64decode(json.loads(raw)["body"]))
        events.extend(args[0])
    return events


def _stored(data_dir: Path) -> set[str]:
    db = data_dir / "teamlore.sqlite3"
    if not db.exists():
        return set()
    return {row[0] for row in sqlite3.connect(db).execute("SELECT message_id FROM messages")}


def _wait_until(predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run `teamlore ARGS` in this process with the given TEAMLORE_* environment: (exit code, out, err)."""

    def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
        for name, value in env.items():
            if name.startswith("TEAMLORE_"):
                monkeypatch.setenv(name, value)
        with pytest.raises(SystemExit) as exit_:
            main(list(args))
        captured = capsys.readouterr()
        return exit_.value.code, captured.out, captured.err

    return run


def test_orphan_edits_wait_longer_than_the_visibility_timeout_in_waits_shorter_than_it():
    for visibility in (4.0, 60.0, 3600.0):
        delays = orphan_delays(visibility)
        assert sum(delays) >= visibility * 1.5
        assert max(delays) <= visibility / 2
    assert len(orphan_delays(3600.0)) < 30  # a few dozen re-sends at most, not a busy loop


def test_a_poison_event_ends_on_the_dead_letter_list_every_other_event_is_stored_and_replay_returns_it(
    tmp_path, client, own_redis, cli
):
    data_dir = tmp_path / "prod"
    env = _env(data_dir, own_redis.url, TEAMLORE_INGEST_MAX_DELIVERIES="2")
    good = [event(f"The build server number {i} runs Debian.", message_id=f"good-{i}") for i in range(5)]
    poison = event("POISON: this message kills the worker process.", message_id="poison")
    producer = Producer(Settings(data_dir=data_dir, redis_url=own_redis.url, _env_file=None))
    producer.enqueue([*good[:3], poison, good[3]])  # the poison sits inside a batch of good events
    producer.enqueue([good[4]])
    worker = Worker(data_dir, tmp_path / "worker.log", env=env, module="tests.poison_worker")
    try:
        letters = DeadLetters(client)
        _wait_until(lambda: letters.summary()[0] == 1 and _stored(data_dir) == {e.message_id for e in good})
        log = worker.log.read_text()
        # The clients were built in the pool processes, after the fork, not in the parent.
        opened = {int(pid) for pid in re.findall(r"worker process (\d+) opened its stores", log)}
        assert opened and worker.proc.pid not in opened
        assert len(opened) >= 5  # one process per delivery that killed it (2 as a batch, 2 alone) + 1
    finally:
        worker.stop()
    [letter] = letters.entries()
    assert [e["message_id"] for e in letter.events] == ["poison"] and letter.deliveries == 2
    assert _stored(data_dir) == {e.message_id for e in good}  # nothing else was lost or held back
    assert client.llen(INGEST) == 0
    # The batch given up on gave up its place in its channel's order, so the next one went on.
    assert ChannelOrder.from_url(own_redis.url).applied(("T1", "C1")) == 2

    code, out, err = cli(env, "status", "--json")
    assert code == 0, err
    assert json.loads(out)["dead_letter"] == {"count": 1, "oldest": letter.at}
    code, out, err = cli(env, "dead-letter", "list")
    assert letter.id in out and "slack/T1/C1/poison" in out

    code, out, err = cli(env, "dead-letter", "replay", letter.id)
    assert code == 0 and "replayed 1 entry" in out, err
    assert letters.summary() == (0, None)
    assert [e["message_id"] for e in _queued_events(client)] == ["poison"]  # back on the queue, once


def test_an_event_past_the_hard_time_limit_is_delivered_again_not_acknowledged_then_dead_lettered(
    tmp_path, client, own_redis
):
    data_dir = tmp_path / "prod"
    env = _env(
        data_dir,
        own_redis.url,
        TEAMLORE_INGEST_MAX_DELIVERIES="2",
        TEAMLORE_CELERY_SOFT_TIME_LIMIT_S="1",
        TEAMLORE_CELERY_TIME_LIMIT_S="2",
    )
    producer = Producer(Settings(data_dir=data_dir, redis_url=own_redis.url, _env_file=None))
    # Alone: limits this short would also stop real work in a fresh process (the model loads).
    producer.enqueue([event("HANG: this message never finishes.", message_id="hang")])
    worker = Worker(data_dir, tmp_path / "worker.log", env=env, module="tests.poison_worker")
    try:
        letters = DeadLetters(client)
        _wait_until(lambda: letters.summary()[0] == 1)
        # Nothing left to deliver (a requeue racing the dead-lettering is consumed, not kept).
        _wait_until(lambda: client.llen(INGEST) == 0)
        assert worker.log.read_text().count("Hard time limit (2.0s) exceeded") == 2  # killed twice
    finally:
        worker.stop()
    [letter] = letters.entries()
    assert [e["message_id"] for e in letter.events] == ["hang"] and letter.deliveries == 2
    assert client.llen(INGEST) == 0


def test_an_event_the_worker_refuses_goes_to_the_dead_letter_list_once_and_the_rest_is_stored(
    tmp_path, client, own_redis
):
    from teamlore.workers import tasks

    settings = Settings(data_dir=tmp_path, redis_url=own_redis.url, _env_file=None)
    tasks.prepare_worker(settings)
    tasks._lore.cache_clear()
    tasks._dead_letters.cache_clear()
    good = event("The build server runs Debian.", message_id="fine").model_dump(mode="json")
    refused = {**good, "message_id": "bad", "kind": "message.exploded"}
    try:
        assert tasks.ingest_events([good, refused]) == {"stored": 1}
        assert tasks.ingest_events([good, refused]) == {"duplicate": 1}  # delivered again
    finally:
        if tasks._lore.cache_info().currsize:
            tasks._lore().close()
        tasks._lore.cache_clear()
        tasks._dead_letters.cache_clear()
    [letter] = DeadLetters(client).entries()  # kept once, however often it was delivered
    assert letter.events == [refused] and letter.reason.startswith("refused: ") and "kind:" in letter.reason
    assert _stored(tmp_path) == {"fine"}
    assert not client.keys("teamlore:deliveries:*")  # done batches leave no count behind


def test_dead_letters_are_kept_once_replayed_only_when_sent_and_dropped_only_when_named(client):
    letters = DeadLetters(client)
    first = letters.bury([{"message_id": "a"}], "refused: text: field required", 1)
    letters.bury([{"message_id": "a"}], "refused: text: field required", 1)  # the same batch again
    second = letters.bury([{"message_id": "b"}], "failed 3 deliveries", 3)
    assert [e.id for e in letters.entries()] == [first.id, second.id]
    assert letters.summary() == (2, letters.entries()[0])

    def broken(_events):
        raise ConnectionError("broker down")

    with pytest.raises(ConnectionError):
        letters.replay(broken, [first.id])
    assert {e.id for e in letters.entries()} == {first.id, second.id}  # a failed send keeps it

    sent: list = []
    assert [e.id for e in letters.replay(sent.append, [second.id])] == [second.id]
    assert sent == [[{"message_id": "b"}]] and [e.id for e in letters.entries()] == [first.id]
    assert letters.drop([first.id]) and letters.summary() == (0, None)


def test_dead_letter_commands_refuse_bad_input_with_one_line(tmp_path, client, own_redis, cli):
    env = _env(tmp_path, own_redis.url)
    DeadLetters(client).bury([{"message_id": "a"}], "refused: text: field required", 1)
    for args in (("drop",), ("drop", "--all", "x"), ("replay", "nosuchid")):
        code, _, err = cli(env, "dead-letter", *args)
        assert code == 2 and err.count("\n") == 1, (args, err)
    assert DeadLetters(client).summary()[0] == 1  # nothing changed
    assert cli(env, "dead-letter", "drop", "--all")[:2] == (0, "dropped 1 entry\n")
    assert DeadLetters(client).summary()[0] == 0


def test_several_writers_and_a_replay_at_once_lose_no_batch_and_send_none_twice(tmp_path, client, own_redis):
    writers, batches = 3, 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.spool_writer", str(tmp_path), str(w), str(batches)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    live = Producer(Settings(data_dir=tmp_path, redis_url=own_redis.url, _env_file=None))
    while_writing = 0
    while any(p.poll() is None for p in procs):
        while_writing += live.replay_spool()
        time.sleep(0.01)
    for proc in procs:
        out, err = proc.communicate()
        assert proc.returncode == 0 and "done" in out, err
    live.replay_spool()
    assert while_writing > 0  # the replay really ran while the writers appended
    assert not live.spool.exists()
    sent = [e["message_id"] for e in _queued_events(client)]
    expected = [f"{w}-{i}" for w in range(writers) for i in range(batches)]
    assert sorted(sent) == sorted(expected)  # every batch, each exactly once
