"""Messages per second through Redis and Celery workers, embedding excluded (reported apart).

    python bench/pipeline_throughput.py [--messages 5000] [--workers 2] [--batch 100]
    python bench/pipeline_throughput.py --stack [--messages 2000] [--workers 1 2 4]

``--stack``: the server stack with no shared file (issue 18). A redis-server, an nx-27017 (its
transactions one at a time: tests/nx_serial.py) and the Weaviate wire double
(tests/weaviate_wire.py) of the run's own, all on this machine; the history is cut into batches
of one channel each (as connectors and imports send them), the channels' batches interleaved;
it is ingested once inline (its passages fill a MongoDB embedding cache that each measured
database starts with, so no run embeds), then for each ``--workers`` count that many worker
processes (concurrency 1, each with its own empty data folder, a database and collections of the
run's own) take it from the queue; timed from the first enqueue until every event's key is in
MongoDB's ledger. The servers are Python processes sharing the cores with the workers, so the
CPU time each process group spent is measured too (from /proc): the workers' CPU seconds per
message say what one core of workers takes when the stores run elsewhere, the figure "per core
on paper".

Without ``--stack``:

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
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--stack", action="store_true", help="Redis, MongoDB and Weaviate: no shared file")
    args = parser.parse_args()
    if args.stack:
        stack(args.messages, args.workers, args.batch)
        return
    args.workers = args.workers[0]
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


SECRET = "bench-hash-secret"


def stack(messages: int, counts: list[int], batch: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pymongo import MongoClient

    from tests.mongo_server import OwnMongo
    from tests.redis_server import OwnRedis
    from tests.weaviate_wire import WireWeaviate, hermetic_client

    events = generate(messages)
    expected = len({e.idempotency_key for e in events})
    batches = by_channel(events, batch)
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        broker, mongo, wire = (
            OwnRedis(base / "redis").start(),
            OwnMongo(base / "nx", serial=True).start(),
            WireWeaviate().start(),
        )
        servers = {"mongodb": mongo.proc, "weaviate": wire.proc, "redis": broker.proc}
        client: MongoClient = MongoClient(mongo.url)
        try:
            where = {
                "mongo_url": mongo.url,
                "weaviate_url": wire.url,
                "weaviate_grpc_port": wire.grpc_port,
                "hash_secret": SECRET,
            }

            def inline(name: str) -> tuple[float, float]:
                settings = Settings(
                    data_dir=base / name,
                    mongo_db=name,
                    weaviate_collection=f"Bench{name}",
                    _env_file=None,
                    **where,
                )
                lore = Teamlore(settings)
                started = time.perf_counter()
                for each in batches:
                    ingest(each, lore.pipeline)
                seconds, embed_s = time.perf_counter() - started, lore.embedder.stats.seconds
                lore.close()
                return seconds, embed_s

            with hermetic_client(wire.pypi_url):
                _, embed_s = inline("warm")
                _copy_vectors(client, "warm", "inline")
                inline_s, _ = inline("inline")
            rows = []
            for count in counts:
                name = f"w{count}"
                _copy_vectors(client, "warm", name)
                before = {k: cpu_seconds(p.pid) for k, p in servers.items() if p is not None}
                seconds, worker_cpu = _through_workers(
                    base, name, count, broker.url, where, batches, client, expected
                )
                spent = {k: cpu_seconds(p.pid) - before[k] for k, p in servers.items() if p is not None}
                rows.append((count, seconds, worker_cpu, spent))
        finally:
            client.close()
            wire.stop()
            mongo.stop()
            broker.stop()
    n = len(events)
    rate = n / inline_s
    print(f"{n:,} messages; warm-up embedding {embed_s:.1f} s; inline (one process) {inline_s:.1f} s")
    print(f"inline: {rate:.0f} msg/s")
    print(f"{len(batches)} batches of one channel each (up to {batch} events)")
    columns = ["workers", "seconds", "msg/s", "vs one worker", "CPU s: workers", "MongoDB double"]
    print("| " + " | ".join([*columns, "Weaviate double", "Redis"]) + " |")
    print("|---|---|---|---|---|---|---|---|")
    one = rows[0][1] if rows and rows[0][0] == 1 else None
    for count, seconds, worker_cpu, spent in rows:
        ratio = f"{one / seconds:.2f}x" if one else "-"
        cpu = " | ".join(f"{spent.get(k, 0.0):.1f}" for k in ("mongodb", "weaviate", "redis"))
        print(f"| {count} | {seconds:.1f} | {n / seconds:.0f} | {ratio} | {worker_cpu:.1f} | {cpu} |")
    per_message = sum(r[2] for r in rows) / (n * len(rows))
    print(
        f"workers' CPU: {per_message * 1000:.1f} ms a message, so one core of workers takes about"
        f" {1 / per_message:.0f} msg/s when MongoDB and Weaviate run elsewhere"
    )


def by_channel(events, size: int) -> list[list]:  # type: ignore[no-untyped-def]
    """Each channel's events in time order, in batches of ``size``; the channels' batches interleaved."""
    from itertools import zip_longest

    channels: dict[str, list] = {}
    for event in events:
        channels.setdefault(event.channel, []).append(event)
    split = [[chunk[i : i + size] for i in range(0, len(chunk), size)] for chunk in channels.values()]
    return [b for row in zip_longest(*split) for b in row if b]


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, group: bool = False) -> float:
    """User and system CPU seconds of ``pid`` (``group``: of every live process in its process
    group, and the children they have waited for), from /proc."""
    total = 0
    for entry in Path("/proc").iterdir() if group else [Path(f"/proc/{pid}")]:
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if group and int(fields[2]) != pid:  # field 5: the process group
            continue
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / _TICK


def _copy_vectors(client, source: str, target: str) -> None:  # type: ignore[no-untyped-def]
    docs = list(client[source]["embeddings"].find({}))
    for i in range(0, len(docs), 1000):
        client[target]["embeddings"].insert_many(docs[i : i + 1000])


def _through_workers(  # type: ignore[no-untyped-def]
    base: Path, name: str, count: int, redis_url: str, where: dict, batches, client, expected: int
) -> tuple[float, float]:
    """Seconds until every event is in the ledger, and the workers' CPU seconds meanwhile."""
    env = {
        **os.environ,
        "TEAMLORE_REDIS_URL": redis_url,
        "TEAMLORE_MONGO_URL": where["mongo_url"],
        "TEAMLORE_MONGO_DB": name,
        "TEAMLORE_WEAVIATE_URL": where["weaviate_url"],
        "TEAMLORE_WEAVIATE_GRPC_PORT": str(where["weaviate_grpc_port"]),
        "TEAMLORE_WEAVIATE_COLLECTION": f"Bench{name}",
        "TEAMLORE_HASH_SECRET": SECRET,
        "OMP_NUM_THREADS": "1",
    }
    logs, workers = [], []
    for i in range(count):
        data_dir = base / f"{name}-{i}"
        data_dir.mkdir()
        log = base / f"{name}-{i}.log"
        logs.append(log)
        with log.open("ab") as out:
            workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "teamlore.cli", "worker", "--concurrency", "1"],
                    env={**env, "TEAMLORE_DATA_DIR": str(data_dir)},
                    start_new_session=True,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        deadline = time.monotonic() + 120
        while not all("ready" in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                raise RuntimeError("a worker did not start: " + logs[0].read_text(errors="replace")[-2000:])
            time.sleep(0.2)
        producer = Producer(Settings(data_dir=base / f"{name}-producer", redis_url=redis_url, _env_file=None))
        cpu_before = sum(cpu_seconds(w.pid, group=True) for w in workers)
        started = time.perf_counter()
        for each in batches:
            producer.enqueue(each)
        ledger = client[name]["event_ledger"]
        while ledger.count_documents({}) < expected:
            if any(w.poll() is not None for w in workers):
                raise RuntimeError("a worker died: " + logs[0].read_text(errors="replace")[-2000:])
            time.sleep(0.2)
        seconds = time.perf_counter() - started
        return seconds, sum(cpu_seconds(w.pid, group=True) for w in workers) - cpu_before
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGTERM)
                w.wait(timeout=120)


if __name__ == "__main__":
    main()
