"""The production pipeline as the CLI drives it: the queues, a worker and beat, queue depths and
the dead-letter list. The surfaces come through here; Celery and the tasks stay in ``workers``."""

from __future__ import annotations

import redis

from teamlore.config import Settings
from teamlore.errors import ConfigurationError
from teamlore.workers.celery_app import ADMIN, INGEST, MAINTENANCE, make_celery
from teamlore.workers.dead_letter import DeadLetter, DeadLetters

__all__ = [
    "DeadLetter",
    "QUEUES",
    "dead_letters",
    "queue_depths",
    "replay_dead_letters",
    "run_beat",
    "run_worker",
]

QUEUES = (INGEST, MAINTENANCE, ADMIN)


def run_worker(settings: Settings, queues: str, concurrency: int, loglevel: str) -> None:
    """A Celery worker with Teamlore's tasks, in this process, until it is stopped."""
    from teamlore.workers.tasks import prepare_worker

    celery = make_celery(settings)
    prepare_worker(settings)  # no store is opened here: each pool process opens its own
    celery.worker_main(
        [
            "worker",
            f"--queues={queues}",
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            "--without-gossip",
            "--without-mingle",
        ]
    )


def run_beat(settings: Settings, loglevel: str) -> None:
    """Celery beat, its schedule file in the data folder."""
    schedule = settings.data_dir / "celerybeat-schedule"
    make_celery(settings).start(["beat", f"--loglevel={loglevel}", f"--schedule={schedule}"])


def queue_depths(client: redis.Redis) -> tuple[dict[str, int], int, DeadLetter | None]:
    """Each queue's length, and the dead-letter list's size and oldest entry (Redis errors pass up)."""
    depths = {queue: client.llen(queue) for queue in QUEUES}
    dead, oldest = DeadLetters(client).summary()
    return depths, dead, oldest


def dead_letters(settings: Settings) -> DeadLetters:
    if not settings.redis_url:
        raise ConfigurationError("TEAMLORE_REDIS_URL is not set: the dead-letter list lives in Redis")
    return DeadLetters.from_url(settings.redis_url)


def replay_dead_letters(settings: Settings, ids: list[str] | None) -> list[DeadLetter]:
    """Put entries (every one, without ids) back on the ingest queue."""
    from teamlore.workers.producer import Producer

    producer = Producer(settings)
    return dead_letters(settings).replay(producer.send, ids)
