"""One connector process spooling while Redis is unreachable, for the multi-writer spool test:
``python -m tests.spool_writer DATA_DIR WRITER COUNT``. Each batch is one event with a message id
of its own (``WRITER-i``), sent to a broker nobody listens on, so every batch is spooled."""

from __future__ import annotations

import sys
from pathlib import Path

from teamlore.config import Settings
from teamlore.domain import parse_event
from teamlore.workers.producer import Producer
from tests.redis_server import free_port


def event(writer: str, i: int):
    data = {
        "kind": "message.created",
        "platform": "slack",
        "workspace": "T1",
        "channel": "C1",
        "channel_name": "c1",
        "channel_visibility": "public",
        "message_id": f"{writer}-{i}",
        "author_id": "U1",
        "author_name": "alice",
        "ts": "2026-01-05T10:00:00Z",
        "text": f"writer {writer} says {i}",
    }
    return parse_event(data, 40_000)


if __name__ == "__main__":
    data_dir, writer, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    dead = f"redis://127.0.0.1:{free_port()}/0"
    producer = Producer(Settings(data_dir=data_dir, redis_url=dead, producer_retry_s=0, _env_file=None))
    for i in range(count):
        delivery = producer.enqueue([event(writer, i)])
        assert delivery.spooled == 1, delivery
    print("done", flush=True)
