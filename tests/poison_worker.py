"""`teamlore worker` with faults planted at the edge, for tests only: a batch holding an event
whose text contains POISON kills the worker process that takes it (``os._exit``, as a segfault or
the OOM killer would); one holding HANG never returns, even when the soft time limit interrupts
it (as a call stuck in C code would), so only the hard time limit ends it. Every delivery, every
time. Run: ``python -m tests.poison_worker worker ...``.
"""

from __future__ import annotations

import contextlib
import os
import time

from billiard.exceptions import SoftTimeLimitExceeded

from teamlore.cli import main
from teamlore.workers import tasks

_real_ingest = tasks.ingest


def _ingest_or_die(events, deps):
    if any("POISON" in event.text for event in events):
        os._exit(1)
    while any("HANG" in event.text for event in events):
        with contextlib.suppress(SoftTimeLimitExceeded):
            time.sleep(60)
    return _real_ingest(events, deps)


tasks.ingest = _ingest_or_die  # patched in the parent, so every forked pool process has it

if __name__ == "__main__":
    main()
