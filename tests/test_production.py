"""The production pipeline against a real Redis and a real Celery worker process."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.events_file import read_events_file
from teamlore.workers.pipeline import ingest
from teamlore.workers.producer import Producer

from .conftest import BROKER_URL as REDIS_URL
from .conftest import SAMPLE


def _env(data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TEAMLORE_REDIS_URL": REDIS_URL,
        "TEAMLORE_DATA_DIR": str(data_dir),
        "TEAMLORE_CELERY_VISIBILITY_TIMEOUT_S": "4",
        # Look for tasks past that timeout every second, not on kombu's own ~100 s sweep: a killed
        # worker's task is still delivered again only after the visibility timeout, just found sooner.
        "TEAMLORE_CELERY_RESTORE_EVERY_S": "1",
        "TEAMLORE_WIKI_WINDOW_S": "0",
    }


class Worker:
    """A real `teamlore worker` process (``module`` may plant a fault: tests/poison_worker.py)."""

    def __init__(
        self, data_dir: Path, log: Path, env: dict[str, str] | None = None, module: str = "teamlore.cli"
    ) -> None:
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "worker", "--concurrency", "1"],
            env=env or _env(data_dir),
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_for("ready")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log.read_text(errors="replace"):
                return
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.05)
        raise AssertionError(f"worker never logged {text!r}:\n{self.log.read_text()}")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._out.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        self._out.close()


def _facts(db: Path) -> set[tuple]:
    conn = sqlite3.connect(db)
    return set(
        conn.execute(
            "SELECT fact_id, statement, status, valid_from, valid_to, evidence FROM fact_versions"
            " WHERE recorded_to = 253402214400000000"
        )
    )


def _wait_until(predicate, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def _pages(lore: Teamlore) -> dict[str, str]:
    lore.wiki.flush(everything=True)
    channels = [c.channel for c in lore.stores.messages.channels("T0ACME")]
    return {
        p.page_id: lore.stores.pages.current(p.page_id).markdown
        for p, version in lore.stores.pages.pages("T0ACME", channels)
        if version
    }


@pytest.fixture(scope="module")
def inline(tmp_path_factory, embedder) -> tuple[set[tuple], dict[str, str]]:
    data_dir = tmp_path_factory.mktemp("inline")
    lore = Teamlore(Settings(data_dir=data_dir, _env_file=None), embedder=embedder)
    ingest([item.event for item in read_events_file(SAMPLE, 40_000)], lore.pipeline)
    pages = _pages(lore)
    lore.close()
    return _facts(data_dir / "teamlore.sqlite3"), pages


def _sample_events():
    return [item.event for item in read_events_file(SAMPLE, 40_000)]


def _done(data_dir: Path, expected: int):
    def check() -> bool:
        db = data_dir / "teamlore.sqlite3"
        if not db.exists():
            return False
        return sqlite3.connect(db).execute("SELECT count(*) FROM messages").fetchone()[0] >= expected

    return check


def test_the_sample_through_redis_and_a_worker_gives_the_same_facts_and_pages_as_inline(
    tmp_path, broker, inline, embedder
):
    data_dir = tmp_path / "prod"
    worker = Worker(data_dir, tmp_path / "worker.log")
    try:
        producer = Producer(Settings(data_dir=data_dir, redis_url=REDIS_URL, _env_file=None))
        events = _sample_events()
        for start in range(0, len(events), 50):
            assert producer.enqueue(events[start : start + 50]).sent == len(events[start : start + 50])
        messages = len({(e.channel, e.message_id) for e in events})
        _wait_until(_done(data_dir, messages))
        _wait_until(lambda: broker.llen("teamlore.ingest") == 0)
        worker.wait_for("ingested 7 event(s)")  # the last batch
    finally:
        worker.stop()
    assert _facts(data_dir / "teamlore.sqlite3") == inline[0]
    lore = Teamlore(Settings(data_dir=data_dir, redis_url=REDIS_URL, _env_file=None), embedder=embedder)
    assert _pages(lore) == inline[1] and inline[1]
    lore.close()


def test_a_worker_killed_mid_ingest_is_redelivered_and_ends_with_exactly_the_clean_facts(
    tmp_path, broker, inline
):
    data_dir = tmp_path / "prod"
    log = tmp_path / "worker.log"
    worker = Worker(data_dir, log)
    producer = Producer(Settings(data_dir=data_dir, redis_url=REDIS_URL, _env_file=None))
    producer.enqueue(_sample_events())  # one big batch: several seconds of work
    worker.wait_for("Task teamlore.ingest[")
    time.sleep(0.5)
    worker.kill()
    db = data_dir / "teamlore.sqlite3"
    assert sqlite3.connect(db).execute("SELECT count(*) FROM messages").fetchone()[0] == 0  # mid-task
    again = Worker(data_dir, log)
    try:
        _wait_until(_done(data_dir, 398), timeout=180)
    finally:
        again.stop()
    assert _facts(db) == inline[0]


def test_an_edit_that_arrives_before_its_message_is_held_until_the_message_comes(tmp_path, broker):
    from .conftest import event

    data_dir = tmp_path / "prod"
    worker = Worker(data_dir, tmp_path / "worker.log")
    try:
        producer = Producer(Settings(data_dir=data_dir, redis_url=REDIS_URL, _env_file=None))
        created = event("The API rate limit is 100 requests per minute.", message_id="7.1")
        edited = event(
            "The API rate limit is 120 requests per minute.",
            message_id="7.1",
            kind="message.edited",
            ts="2026-01-05T10:05:00Z",
        )
        producer.enqueue([edited])
        worker.wait_for("ingested 1 event(s): {'orphan': 1}")
        producer.enqueue([created])
        db = data_dir / "teamlore.sqlite3"

        def edited_text() -> bool:
            row = sqlite3.connect(db).execute("SELECT text FROM messages WHERE message_id = '7.1'").fetchone()
            return row == ("The API rate limit is 120 requests per minute.",)

        _wait_until(edited_text, timeout=60)
    finally:
        worker.stop()


def test_status_shows_queue_depths_and_dirty_pages(tmp_path, broker):
    producer = Producer(Settings(data_dir=tmp_path, redis_url=REDIS_URL, _env_file=None))
    producer.enqueue(_sample_events()[:3])
    done = subprocess.run(
        [sys.executable, "-m", "teamlore.cli", "status", "--json"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    status = __import__("json").loads(done.stdout)
    assert status["queues"]["teamlore.ingest"] == 1 and status["spooled_batches"] == 0
