"""A channel's batches are applied in the order they were queued (issue 18), on a Redis of the
test's own: the producer numbers them, a worker applies batch n of a channel only after batch
n-1, a channel with no numbers (the control) is applied as it comes, and a batch that never
comes holds its channel back no longer than the gap."""

from __future__ import annotations

import base64
import json
import sqlite3
import time
from pathlib import Path

import redis

from teamlore.config import Settings
from teamlore.domain import parse_event
from teamlore.stores.redis.channel_order import ChannelOrder, from_wire, to_wire
from teamlore.workers.celery_app import INGEST, make_celery
from teamlore.workers.producer import Producer

from .test_channel_lock import worker_env
from .test_hostile_input import _line, _stored, _Worker

A, B = ("T1", "C1"), ("T1", "C2")


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_channel_is_numbered_on_its_own_and_a_batch_waits_for_the_one_before_it(own_redis) -> None:
    order = ChannelOrder(redis.Redis.from_url(own_redis.url), gap_s=60)
    assert order.number([A, B, A]) == {A: 1, B: 1}
    assert order.number([A]) == {A: 2}
    assert not order.turn(A, 2)  # batch 1 of C1 is not applied yet
    assert order.turn(B, 1)  # control: C2's first batch goes
    assert order.turn(A, 1)
    order.done({A: 1})
    assert order.turn(A, 2)  # its predecessor is recorded
    order.done({A: 2})
    order.done({A: 1})  # a late or repeated record never moves it back
    assert order.applied(A) == 2 and order.applied(B) == 0
    assert order.turn(A, 1)  # behind the record: a re-delivery goes at once (the ledger makes it a no-op)
    assert from_wire(json.loads(json.dumps(to_wire({A: 3, B: 1})))) == {A: 3, B: 1}
    assert from_wire(None) == {} and from_wire([["T1", "C1"]]) == {}  # an older task: no numbers


def test_a_batch_that_never_comes_holds_its_channel_back_for_the_gap_and_no_longer(own_redis) -> None:
    clock = _Clock()
    order = ChannelOrder(redis.Redis.from_url(own_redis.url), gap_s=60, clock=clock)
    assert not order.turn(A, 3)  # batch 1 and 2 are missing: the wait starts
    clock.now += 59
    assert not order.turn(A, 2)
    clock.now += 2
    assert order.turn(A, 3)  # waited the gap for batch 1: goes on without it
    order.done({A: 3})
    assert not order.turn(A, 5)  # the record moved: a new wait, for batch 4, from now
    clock.now += 59
    assert not order.turn(A, 5)
    assert order.turn(A, 1)  # batch 1, late after all, is applied, not dropped
    assert order.applied(A) == 3


def _queued(client: redis.Redis) -> list[tuple[list[str], dict]]:
    """The ingest tasks on the queue: each one's message ids and numbers."""
    tasks = []
    for item in reversed(client.lrange(INGEST, 0, -1)):  # Celery pushes on the left
        args = json.loads(base64.b64decode(json.loads(item)["body"]))[0]
        tasks.append(([e["message_id"] for e in args[0]], from_wire(args[2])))
    return tasks


def test_the_producer_numbers_each_batch_once_also_when_it_waits_in_the_spool(own_redis, tmp_path) -> None:
    settings = Settings(data_dir=tmp_path / "p", redis_url=own_redis.url, producer_retry_s=0, _env_file=None)
    producer = Producer(settings)
    one = [parse_event(_line("a-1"), 40_000), parse_event(_line("b-1", channel="C2"), 40_000)]
    assert producer.enqueue(one).sent == 2
    assert producer.enqueue([parse_event(_line("a-2"), 40_000)]).sent == 1
    client = redis.Redis.from_url(own_redis.url)
    assert _queued(client) == [(["a-1", "b-1"], {A: 1, B: 1}), (["a-2"], {A: 2})]

    own_redis.stop()  # Redis down: the batch is spooled with no number (none could be given)
    assert producer.enqueue([parse_event(_line("a-3"), 40_000)]).spooled == 1
    own_redis.start()
    assert producer.replay_spool() == 1
    client = redis.Redis.from_url(own_redis.url)  # the server restarted empty (no AOF): numbers begin again
    assert _queued(client)[-1] == (["a-3"], {A: 1})


def _ledger_order(data_dir: Path) -> list[str]:
    db = sqlite3.connect(data_dir / "teamlore.sqlite3")
    try:
        return [row[0].split("\x1f")[3] for row in db.execute("SELECT key FROM event_ledger ORDER BY at")]
    finally:
        db.close()


def test_a_worker_applies_a_channels_later_batch_only_after_the_earlier_one(tmp_path, own_redis) -> None:
    data_dir = tmp_path / "prod"
    env = worker_env(own_redis.url, data_dir)
    order = ChannelOrder.from_url(own_redis.url)
    app = make_celery(Settings(redis_url=own_redis.url, data_dir=data_dir, _env_file=None))
    worker = _Worker(data_dir, tmp_path / "worker.log", env)
    try:
        first, second = order.number([A]), order.number([A])
        # The second batch of C1 reaches the queue first; with it, C2's batch carries no numbers
        # (as an older producer's), the control: the same worker applies it as it comes.
        late = [_line("a-2", text="The lease ends in June."), _line("b-1", channel="C2")]
        app.send_task("teamlore.ingest", args=[late, 0, to_wire(second)], queue=INGEST)
        worker.wait_for("whose earlier batch is not applied yet")
        assert _stored(data_dir) == {"b-1"}
        time.sleep(2.5)  # tried again: still not its turn
        assert _stored(data_dir) == {"b-1"}

        app.send_task("teamlore.ingest", args=[[_line("a-1")], 0, to_wire(first)], queue=INGEST)
        deadline = time.monotonic() + 30
        while _stored(data_dir) != {"a-1", "a-2", "b-1"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _ledger_order(data_dir) == ["b-1", "a-1", "a-2"]
        assert order.applied(A) == 2
    finally:
        worker.stop()
        order.close()
