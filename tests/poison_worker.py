"""`teamlore worker` with one fault planted at the edge, for tests only: a batch holding an event
whose text contains POISON kills the worker process that takes it (``os._exit``, as a segfault or
the OOM killer would), every time it is delivered. Run: ``python -m tests.poison_worker worker ...``.
"""

from __future__ import annotations

import os

from teamlore.cli import main
from teamlore.workers import tasks

_real_ingest = tasks.ingest


def _ingest_or_die(events, deps):
    if any("POISON" in event.text for event in events):
        os._exit(1)
    return _real_ingest(events, deps)


tasks.ingest = _ingest_or_die  # patched in the parent, so every forked pool process has it

if __name__ == "__main__":
    main()
