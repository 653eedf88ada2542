"""One worker at a time per channel (issue 18, step 4): ``stores.redis.channel_lock`` on a real
Redis, and a real worker that leaves the events of a channel another worker holds on the queue
while it applies the rest, then applies them once the channel is free."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis

from teamlore.config import Settings
from teamlore.stores.redis.channel_lock import ChannelLocks, ChannelsBusy
from teamlore.workers.celery_app import INGEST, make_celery
from teamlore.workers.tasks import busy_delay

from .conftest import event
from .redis_server import OwnRedis
from .test_hostile_input import _line, _stored, _Worker

A, B = ("T1", "C1"), ("T1", "C2")


def locks_on(own_redis: OwnRedis, lease_s: float = 60.0) -> ChannelLocks:
    return ChannelLocks(redis.Redis.from_url(own_redis.url), int(lease_s * 1000))


def test_a_channel_is_held_by_one_worker_at_a_time_and_others_are_free(own_redis: OwnRedis) -> None:
    first, second = locks_on(own_redis), locks_on(own_redis)
    taken = first.take([A, A])
    assert list(taken) == [A]
    assert second.take([A, B]).keys() == {B}  # A is held; B, the control, is free
    first.release(taken)
    again = second.take([A])
    assert again.keys() == {A} and again[A] > taken[A]  # fencing tokens only grow


def test_a_late_release_never_frees_the_lock_a_newer_holder_took(own_redis: OwnRedis) -> None:
    slow, quick = locks_on(own_redis, lease_s=0.2), locks_on(own_redis)
    stale = slow.take([A])
    time.sleep(0.4)  # the slow worker's lease ran out
    fresh = quick.take([A])
    assert fresh and fresh[A] > stale[A]
    slow.release(stale)  # too late: not its lock any more
    assert quick.holder(A) == fresh[A]
    quick.release(fresh)  # control: the holder's own release frees it
    assert quick.holder(A) is None


def worker_env(redis_url: str, data_dir: Path) -> dict[str, str]:
    """A worker on ``redis_url`` whose held or early batches are tried again every 2 s (busy_delay
    of an 8 s visibility timeout; a channel waits 60 s for a batch that never comes)."""
    return {
        "TEAMLORE_REDIS_URL": redis_url,
        "TEAMLORE_DATA_DIR": str(data_dir),
        "TEAMLORE_WIKI_WINDOW_S": "0",
        "TEAMLORE_CELERY_VISIBILITY_TIMEOUT_S": "8",
    }


def test_a_worker_applies_the_free_channels_and_leaves_a_held_one_on_the_queue(tmp_path, own_redis) -> None:
    data_dir = tmp_path / "prod"
    env = worker_env(own_redis.url, data_dir)
    worker = _Worker(data_dir, tmp_path / "worker.log", env)
    other = locks_on(own_redis)  # another worker, holding C1
    try:
        held = other.take([A])
        events = [_line("a-1"), _line("b-1", channel="C2", text="The lease ends in June.")]
        app = make_celery(Settings(redis_url=own_redis.url, data_dir=data_dir, _env_file=None))
        app.send_task("teamlore.ingest", args=[events], queue=INGEST)
        worker.wait_for("of channels another worker holds")
        assert _stored(data_dir) == {"b-1"}  # the free channel, at once; C1's event waits
        time.sleep(busy_delay(8.0) + 0.5)  # a retry while C1 is still held: waits again
        assert _stored(data_dir) == {"b-1"}

        other.release(held)
        deadline = time.monotonic() + 30
        while _stored(data_dir) != {"a-1", "b-1"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _stored(data_dir) == {"a-1", "b-1"}
        assert other.holder(A) is None  # the worker let go of C1 when done
    finally:
        worker.stop()
        other.close()


def test_a_hold_is_renewed_while_its_worker_works_and_lapses_when_it_stops(own_redis: OwnRedis) -> None:
    worker, rival = locks_on(own_redis, lease_s=0.3), locks_on(own_redis)
    with worker.holding([A]) as taken:
        time.sleep(1.0)  # three leases: renewed all along
        assert rival.take([A]) == {}
        assert rival.holder(A) == taken[A]
    assert rival.holder(A) is None  # released at the end
    stopped = worker.take([A])  # taken, never renewed: as a killed worker leaves it
    time.sleep(0.5)
    assert rival.take([A]).keys() == {A} and rival.holder(A) != stopped[A]


def test_an_admin_job_waits_for_every_channel_it_needs_and_takes_them_all_or_none(
    own_redis: OwnRedis,
) -> None:
    admin, ingest = locks_on(own_redis), locks_on(own_redis)
    held = ingest.take([B])
    releaser = threading.Timer(0.3, ingest.release, args=[held])
    releaser.start()
    with admin.holding_all([B, A], wait_s=5) as taken:  # B comes free while it waits
        assert taken.keys() == {A, B}
        assert ingest.take([A, B]) == {}  # meanwhile no batch of either channel goes
    releaser.join()
    kept = ingest.take([B])
    with pytest.raises(ChannelsBusy), admin.holding_all([A, B], wait_s=0.3):
        pass
    assert admin.holder(A) is None  # it gave back A, which it had taken, when B never came
    ingest.release(kept)


def _in_process_worker(tmp_path: Path, url: str):
    """The worker's task functions in this process, on an embedded store and ``url``."""
    from teamlore.workers import tasks

    for cached in (tasks._lore, tasks._channel_locks, tasks._channel_order, tasks._dead_letters):
        cached.cache_clear()
    settings = Settings(data_dir=tmp_path, redis_url=url, wiki_window_s=0, admin_wait_s=0.3, _env_file=None)
    tasks.prepare_worker(settings)
    return tasks


def test_a_reindex_holds_its_channel_and_waits_while_a_batch_holds_it(
    tmp_path, own_redis, monkeypatch
) -> None:
    from teamlore.capabilities import reindex as reindexing
    from teamlore.workers.pipeline import ingest

    tasks = _in_process_worker(tmp_path, own_redis.url)
    rival = locks_on(own_redis)
    seen: list[int | None] = []
    original = reindexing.reindex_channel

    def watched(*args, **kwargs):
        seen.append(rival.holder(A))
        return original(*args, **kwargs)

    monkeypatch.setattr(reindexing, "reindex_channel", watched)
    try:
        lore = tasks._lore()
        ingest([event("The build server runs Debian.", workspace="T1", message_id="m1")], lore.pipeline)
        held = rival.take([A])  # a batch of C1 is being applied
        with pytest.raises(ChannelsBusy):
            tasks.reindex("T1", "C1")
        assert seen == []  # it never started
        rival.release(held)
        assert tasks.reindex("T1", "C1") == 1  # control: the channel free, it runs
        assert seen and seen[0] is not None  # holding C1 all along
        assert rival.holder(A) is None  # and lets go after
    finally:
        tasks._lore().close()
        tasks._lore.cache_clear()


def test_an_erasure_holds_every_channel_of_the_workspace(tmp_path, own_redis, monkeypatch) -> None:
    from teamlore.workers.pipeline import ingest

    tasks = _in_process_worker(tmp_path, own_redis.url)
    rival = locks_on(own_redis)
    try:
        lore = tasks._lore()
        said = [
            event("The build server runs Debian.", workspace="T1", message_id="m1", author_id="U9"),
            event("The lease ends in June.", workspace="T1", channel="C2", message_id="m2", author_id="U9"),
        ]
        ingest(said, lore.pipeline)
        held = rival.take([B])  # a batch of C2, where the person also wrote, is being applied
        with pytest.raises(ChannelsBusy):
            tasks.erase_person("T1", "U9", "admin")
        stored = lore.stores.messages.get_message
        assert stored("T1", "C1", "m1").deleted_at is None  # nothing erased
        assert rival.holder(A) is None  # and C1, taken first, was given back
        rival.release(held)
        assert tasks.erase_person("T1", "U9", "admin") == 2  # control: free, it erases
        assert stored("T1", "C1", "m1").deleted_at is not None
    finally:
        tasks._lore().close()
        tasks._lore.cache_clear()


def test_the_command_line_reindex_and_erase_wait_for_a_held_channel_too(tmp_path, own_redis, capsys) -> None:
    from teamlore.app import Teamlore
    from teamlore.cli import main

    data_dir = tmp_path / "cli"
    settings = Settings(data_dir=data_dir, redis_url=own_redis.url, admin_wait_s=0.3, _env_file=None)
    lore = Teamlore(settings)
    lore.ingest([event("The build server runs Debian.", workspace="T1", message_id="m1", author_id="U9")])
    lore.close()
    rival = locks_on(own_redis)
    held = rival.take([A])  # a worker is applying a batch of C1

    def run(*args: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as done:
            main([*args, "--data-dir", str(data_dir)])
        captured = capsys.readouterr()
        return int(done.value.code or 0), captured.out + captured.err

    environ = {"TEAMLORE_REDIS_URL": own_redis.url, "TEAMLORE_ADMIN_WAIT_S": "0.3"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environ.items():
            patch.setenv(name, value)
        code, said = run("reindex", "-w", "T1", "-c", "C1", "--json")
        assert code == 1 and "C1 stayed held by a worker" in said and "Traceback" not in said
        code, said = run("erase", "-w", "T1", "--author", "U9", "--by", "admin")
        assert code == 1 and "C1 stayed held by a worker" in said
        rival.release(held)  # control: the channel free, both run
        code, said = run("reindex", "-w", "T1", "-c", "C1", "--json")
        assert code == 0, said
        code, said = run("erase", "-w", "T1", "--author", "U9", "--by", "admin")
        assert code == 0, said
    assert rival.holder(A) is None
