"""The production pipeline's commands: worker, beat, status, doctor."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import redis
import typer

from teamlore.cli.support import DataDir, JsonFlag, emit_json, open_lore, out
from teamlore.errors import BackendUnavailable, ConfigurationError
from teamlore.workers.celery_app import ADMIN, INGEST, MAINTENANCE, make_celery


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
    app.command("beat")(beat)
    app.command("status")(status)
    app.command("doctor")(doctor)


def worker(
    queues: Annotated[str, typer.Option(help="Comma-separated queues.")] = f"{INGEST},{MAINTENANCE},{ADMIN}",
    concurrency: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    loglevel: Annotated[str, typer.Option()] = "INFO",
    data_dir: DataDir = None,
) -> int:
    """Run a Celery worker with Teamlore's tasks (needs TEAMLORE_REDIS_URL)."""
    lore = open_lore(data_dir)
    celery = make_celery(lore.settings)
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
    return 0


def beat(loglevel: Annotated[str, typer.Option()] = "INFO", data_dir: DataDir = None) -> int:
    """Run Celery beat: asks for due pages to be rewritten every TEAMLORE_FLUSH_EVERY_S."""
    lore = open_lore(data_dir)
    schedule = lore.settings.data_dir / "celerybeat-schedule"
    make_celery(lore.settings).start(["beat", f"--loglevel={loglevel}", f"--schedule={schedule}"])
    return 0


def status(data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Queue depths, dirty pages, the oldest pending page, the spool."""
    lore = open_lore(data_dir)
    if not lore.settings.redis_url:
        raise ConfigurationError("TEAMLORE_REDIS_URL is not set: nothing is queued in the embedded default")
    client = redis.Redis.from_url(lore.settings.redis_url, decode_responses=True)
    try:
        depths = {queue: client.llen(queue) for queue in (INGEST, MAINTENANCE, ADMIN)}
    except redis.RedisError as exc:
        raise BackendUnavailable(f"Redis at {lore.settings.redis_url} is unreachable: {exc}") from exc
    pending = lore.wiki.dirty.pending()
    now = datetime.now(UTC)
    oldest = min((due for _, due, _ in pending), default=None)
    spool = lore.settings.data_dir / "spool.jsonl"
    spooled = sum(1 for _ in spool.open()) if spool.exists() else 0
    data = {
        "queues": depths,
        "dirty_pages": len(pending),
        "oldest_pending_s": None if oldest is None else round((now - oldest).total_seconds(), 1),
        "spooled_batches": spooled,
    }
    if as_json:
        emit_json(data)
    else:
        out.print(
            ", ".join(f"{q}: {n}" for q, n in depths.items()) + f"; dirty pages {len(pending)}"
            f"; oldest pending {data['oldest_pending_s']} s; spooled batches {spooled}",
            markup=False,
        )
    return 0


def doctor(
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Run only this check (repeat); e.g. redis, workers.")
    ] = None,
    as_json: JsonFlag = False,
) -> int:
    """Check the configuration and every configured service; say what is wrong and how to fix it."""
    from teamlore.doctor import run_checks, select

    checks = run_checks(checks=select(only))
    if as_json:
        emit_json(
            [
                {"name": c.name, "ok": c.ok, "warning": c.warning, "detail": c.detail, "fix": c.fix}
                for c in checks
            ]
        )
    else:
        for c in checks:
            mark = "ok  " if c.ok and not c.warning else ("warn" if c.ok else "FAIL")
            out.print(f"{mark} {c.name}: {c.detail}", markup=False)
            if c.fix and (c.warning or not c.ok):
                out.print(f"     fix: {c.fix}", markup=False, style="dim")
    return 0 if all(c.ok for c in checks) else 1
