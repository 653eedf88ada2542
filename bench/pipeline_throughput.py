"""Messages per second through Redis and Celery workers, embedding excluded (reported apart).

    python bench/pipeline_throughput.py [--messages 5000] [--workers 2] [--batch 100]

Needs a Redis on 127.0.0.1:6379 (database 10 is flushed and used). Steps:
1. generate a synthetic history (bench/synthetic.py) and embed every statement the extractor will
   propose into the data dir's embedding cache (timed: the embedding figure);
2. start ``--workers`` worker processes (concurrency 1 each) on that data dir;
3. enqueue the history in batches through ``Producer`` and time until every message is stored
   (the pipeline figure: extraction, resolution, SQLite writes, wiki marks, task overhead).
Task overhead per message is estimated as (pipeline time - inline time for the same history)
/ messages, with the inline time measured on a fresh store with the same warm cache.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import generate  # noqa: E402

from teamlore.app import Teamlore  # noqa: E402
from teamlore.config import Settings  # noqa: E402
from teamlore.workers.pipeline import ingest  # noqa: E402
from teamlore.workers.producer import Producer  # noqa: E402

REDIS_URL = "redis://127.0.0.1:6379/10"


def warm_cache(data_dir: Path, events) -> float:
    """Ingest the history once in a scratch store: every passage the pipeline will ask for is then
    in that store's embedding cache (thread answers included). Returns the embedding seconds."""
    lore = Teamlore(Settings(data_dir=data_dir, _env_file=None))
    for i in range(0, len(events), 256):
        ingest(events[i : i + 256], lore.pipeline)
    seconds = lore.embedder.stats.seconds
    lore.close()
    return seconds


def with_cache_only(source: Path, target: Path) -> None:
    """A fresh store whose only content is the source store's embedding cache."""
    Teamlore(Settings(data_dir=target, _env_file=None)).close()
    conn = sqlite3.connect(target / "teamlore.sqlite3")
    conn.execute("ATTACH DATABASE ? AS warm", (str(source / "teamlore.sqlite3"),))
    conn.execute("INSERT INTO embeddings SELECT * FROM warm.embeddings")
    conn.commit()
    conn.close()


def stored(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return sqlite3.connect(db, timeout=30).execute("SELECT count(*) FROM messages").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    events = generate(args.messages)
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        cache_dir, inline_dir, queued_dir = base / "cache", base / "inline", base / "queued"
        embed_s = warm_cache(cache_dir, events)
        for target in (inline_dir, queued_dir):
            with_cache_only(cache_dir, target)
        # Inline, same warm cache: the pipeline's own cost.
        lore = Teamlore(Settings(data_dir=inline_dir, _env_file=None))
        started = time.perf_counter()
        for i in range(0, len(events), args.batch):
            ingest(events[i : i + args.batch], lore.pipeline)
        inline_s = time.perf_counter() - started
        inline_embedded = lore.embedder.stats.computed
        lore.close()
        env = {**os.environ, "TEAMLORE_REDIS_URL": REDIS_URL, "TEAMLORE_DATA_DIR": str(queued_dir)}
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "teamlore.cli",
                    "worker",
                    "--concurrency",
                    "1",
                    "--loglevel",
                    "WARNING",
                ],
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(args.workers)
        ]
        try:
            time.sleep(5)  # let the workers start
            producer = Producer(Settings(data_dir=queued_dir, redis_url=REDIS_URL, _env_file=None))
            started = time.perf_counter()
            for i in range(0, len(events), args.batch):
                producer.enqueue(events[i : i + args.batch])
            total = len({(e.channel, e.message_id) for e in events})
            while stored(queued_dir / "teamlore.sqlite3") < total:
                time.sleep(0.2)
            queued_s = time.perf_counter() - started
        finally:
            for w in workers:
                os.killpg(w.pid, signal.SIGTERM)
                w.wait(timeout=60)
        client.flushdb()
    n = len(events)
    print(
        "| messages | workers | embedding (warm-up) s | inline s | inline msg/s | through Redis s | "
        "through Redis msg/s | (Redis − inline) ms/msg | passages embedded during runs |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {n:,} | {args.workers} | {embed_s:.1f} | {inline_s:.1f} | {n / inline_s:.0f} | {queued_s:.1f} | "
        f"{n / queued_s:.0f} | {max(0.0, (queued_s - inline_s) / n * 1000):.2f} | {inline_embedded} |"
    )


if __name__ == "__main__":
    main()
