"""Backfills started by the bot joining a channel: run one at a time on a worker thread.

A listener must answer its platform at once, and a backfill under Slack's limits can take hours,
so a join only queues the channel here. A channel already queued or running is not queued twice;
a failed backfill is logged (its checkpoint keeps what it delivered; the admin command resumes).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Job = tuple[str, str]  # (workspace, channel)


class BackgroundBackfills:
    def __init__(self, run: Callable[[str, str], object]) -> None:
        self._run = run
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._pending: set[Job] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="teamlore-backfill", daemon=True)
        self._thread.start()

    def submit(self, workspace: str, channel: str) -> bool:
        """Queue a channel's backfill; False when it is already queued or running."""
        job = (workspace, channel)
        with self._lock:
            if job in self._pending:
                return False
            self._pending.add(job)
        log.info("backfill queued for %s/%s", workspace, channel)
        self._jobs.put(job)
        return True

    def join(self, timeout: float | None = None) -> None:
        """Wait until every queued backfill has run (tests, and a clean shutdown)."""
        done = threading.Event()

        def wait_for_jobs() -> None:
            self._jobs.join()
            done.set()

        threading.Thread(target=wait_for_jobs, daemon=True).start()
        done.wait(timeout)

    def close(self) -> None:
        self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                self._run(*job)
                log.info("backfill finished for %s/%s", *job)
            except Exception:  # a thread that dies stops every later backfill: log and go on
                log.exception("backfill of %s/%s failed; run the admin backfill to resume", *job)
            finally:
                with self._lock:
                    self._pending.discard(job)
                self._jobs.task_done()
        self._jobs.task_done()
