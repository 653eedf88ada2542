"""Redis restarts: the dirty set survives one (AOF), and the producer spools while it is down."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import redis

from teamlore.config import Settings
from teamlore.stores.redis.dirty_set import RedisDirtySet
from teamlore.workers.celery_app import INGEST, make_celery
from teamlore.workers.producer import Producer

from .conftest import event
from .redis_server import OwnRedis

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def own_redis(tmp_path):
    server = OwnRedis(tmp_path / "redis").start()
    yield server
    server.stop()


def test_a_burst_survives_a_redis_restart_before_its_flush(own_redis):
    dirty = RedisDirtySet.from_url(own_redis.url)
    for i in range(1000):
        dirty.mark([f"page-{i % 20}"], [f"fact-{i}"], T0 + timedelta(milliseconds=i), timedelta(seconds=30))
    own_redis.stop()
    own_redis.start()  # same folder, same port: the AOF is replayed
    dirty = RedisDirtySet.from_url(own_redis.url)
    claims = dirty.claim_due(T0 + timedelta(seconds=31), timedelta(seconds=60), limit=100)
    assert len(claims) == 20  # one rewrite per page for the whole burst
    assert sum(len(c.fact_ids) for c in claims) == 1000


def _queued(url: str) -> int:
    return redis.Redis.from_url(url).llen(INGEST)


def test_events_produced_while_redis_is_down_for_10_seconds_all_arrive_after_it_returns(own_redis, tmp_path):
    settings = Settings(
        data_dir=tmp_path / "producer", redis_url=own_redis.url, producer_retry_s=0.5, _env_file=None
    )
    producer = Producer(settings, make_celery(settings))
    events = [event(f"Service {i} deploys on Tuesday.") for i in range(300)]  # more than 10 s can use
    assert producer.enqueue(events[:5]).sent == 5
    own_redis.stop()
    down_since = time.monotonic()
    spooled, batch = 0, 1
    while time.monotonic() - down_since < 10:  # a connector keeps producing while Redis is down
        spooled += producer.enqueue(events[5 * batch : 5 * batch + 5]).spooled
        batch += 1
        time.sleep(0.5)
    assert spooled == 5 * (batch - 1) and producer.spool.exists()
    own_redis.start()
    back = producer.enqueue(events[5 * batch : 5 * batch + 5])
    assert back.replayed == spooled and back.sent == 5
    assert not producer.spool.exists()
    # Every batch is on the queue, in order: the first (kept by the AOF), the spooled, the last.
    queued = redis.Redis.from_url(own_redis.url).llen(INGEST)
    assert queued == batch + 1


def test_a_burst_of_1000_events_over_20_pages_makes_one_rewrite_per_page(own_redis, make_lore, clock):
    from teamlore.wiki.writer import TemplateWriter

    class Counting(TemplateWriter):
        calls: list[str] = []

        def write(self, page, sections):
            self.calls.append(page.page_id)
            return super().write(page, sections)

    writer = Counting()
    lore = make_lore("burst", writer=writer)
    lore.wiki.dirty = RedisDirtySet.from_url(own_redis.url)
    lore.wiki.window = timedelta(seconds=60)
    events = [
        event(f"We decided Zeta{i % 18} uses lane {i}.", ts=f"2026-01-05T10:{i // 60 % 60:02d}:{i % 60:02d}Z")
        for i in range(1000)
    ]
    from .helpers import put

    for start in range(0, 1000, 100):
        put(lore, *events[start : start + 100])
        clock.advance(seconds=3)
    assert lore.wiki.flush().writer_calls == 0
    clock.advance(seconds=60)
    report = lore.wiki.flush()
    assert report.writer_calls == 20 == len(set(writer.calls)) == report.pages_rewritten
    assert lore.wiki.flush().writer_calls == 0
