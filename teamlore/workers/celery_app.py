"""The Celery app: Redis broker, JSON only, late acks, time limits, one task at a time per process.

Separate queues keep a re-index or an erasure from starving live messages. Tasks are thin
wrappers over the pipeline functions (``teamlore.workers.tasks``).
"""

from __future__ import annotations

from celery import Celery
from kombu.entity import Queue

from teamlore.config import Settings
from teamlore.errors import ConfigurationError

INGEST, MAINTENANCE, ADMIN = "teamlore.ingest", "teamlore.maintenance", "teamlore.admin"


def make_celery(settings: Settings) -> Celery:
    """The Celery app for these settings; the production pipeline needs TEAMLORE_REDIS_URL."""
    if not settings.redis_url:
        raise ConfigurationError("TEAMLORE_REDIS_URL is not set: the production pipeline needs Redis")
    app = Celery("teamlore", broker=settings.redis_url, include=["teamlore.workers.tasks"])
    transport: dict[str, float] = {"visibility_timeout": settings.celery_visibility_timeout_s}
    if settings.celery_restore_every_s:
        # kombu sweeps every unacked_restore_interval seconds but scans Redis only on every
        # unacked_restore_throttle-th sweep (defaults 10 and 10); a throttle of 1 makes the
        # interval the whole period.
        transport |= {
            "unacked_restore_interval": settings.celery_restore_every_s,
            "unacked_restore_throttle": 1,
        }
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        task_acks_late=True,  # a task killed mid-way is delivered again
        task_reject_on_worker_lost=True,
        # A task past the soft limit is interrupted, past the hard one its process is killed; either
        # way it is delivered again (not acknowledged), and the ingest task counts the deliveries.
        task_soft_time_limit=settings.celery_soft_time_limit_s,
        task_time_limit=settings.celery_time_limit_s,
        task_acks_on_timeout=False,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        broker_transport_options=transport,
        task_queues=(Queue(INGEST), Queue(MAINTENANCE), Queue(ADMIN)),
        task_default_queue=INGEST,
        task_routes={
            "teamlore.ingest": {"queue": INGEST},
            "teamlore.flush_pages": {"queue": MAINTENANCE},
            "teamlore.erase_person": {"queue": ADMIN},
            "teamlore.reindex_channel": {"queue": ADMIN},
            "teamlore.rewrite_page": {"queue": MAINTENANCE},
        },
        beat_schedule={
            "flush-due-pages": {"task": "teamlore.flush_pages", "schedule": settings.flush_every_s},
        },
        worker_hijack_root_logger=False,
    )
    return app
