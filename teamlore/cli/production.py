"""The production pipeline's commands: worker, beat, status, doctor."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any

import redis
import typer

from teamlore.app import Teamlore
from teamlore.capabilities.production import QUEUES, queue_depths, run_beat, run_worker
from teamlore.cli.support import DataDir, JsonFlag, emit_json, open_lore, out
from teamlore.config import Settings
from teamlore.errors import BackendUnavailable, InvalidInput
from teamlore.stores.protocols import BreakerRow
from teamlore.timeutil import iso


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
    app.command("beat")(beat)
    app.command("status")(status)  # needs no Redis: the embedded default shows the model ledger
    app.command("doctor")(doctor)


def worker(
    queues: Annotated[str, typer.Option(help="Comma-separated queues.")] = ",".join(QUEUES),
    concurrency: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    loglevel: Annotated[str, typer.Option()] = "INFO",
    data_dir: DataDir = None,
) -> int:
    """Run a Celery worker with Teamlore's tasks (needs TEAMLORE_REDIS_URL)."""
    settings = Settings() if data_dir is None else Settings(data_dir=data_dir)
    run_worker(settings, queues, concurrency, loglevel)
    return 0


def beat(loglevel: Annotated[str, typer.Option()] = "INFO", data_dir: DataDir = None) -> int:
    """Run Celery beat: asks for due pages to be rewritten every TEAMLORE_FLUSH_EVERY_S."""
    run_beat(open_lore(data_dir).settings, loglevel)
    return 0


def status(data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Queue depths, dirty pages, the oldest pending page, the spool, the dead-letter list; the model
    spend ledger."""
    lore = open_lore(data_dir)
    data: dict[str, Any] = {"model": _spend(lore)}
    if lore.settings.redis_url:
        data.update(_queues(lore))
    if as_json:
        emit_json(data)
        return 0
    if lore.settings.redis_url:
        out.print(
            ", ".join(f"{q}: {n}" for q, n in data["queues"].items())
            + f"; dirty pages {data['dirty_pages']}; oldest pending {data['oldest_pending_s']} s"
            f"; spooled batches {data['spooled_batches']}",
            markup=False,
        )
        dead = data["dead_letter"]
        if dead["count"]:
            out.print(
                f"dead-letter list: {dead['count']} waiting, oldest from {dead['oldest']}"
                " (`teamlore dead-letter list`)",
                markup=False,
            )
    else:
        out.print("embedded default: nothing is queued (TEAMLORE_REDIS_URL is not set)", markup=False)
    _print_spend(data["model"])
    return 0


def _queues(lore: Teamlore) -> dict[str, Any]:
    client = redis.Redis.from_url(lore.settings.redis_url, decode_responses=True)
    try:
        depths, dead, oldest_dead = queue_depths(client)
    except redis.RedisError as exc:
        raise BackendUnavailable(f"Redis at {lore.settings.redis_url} is unreachable: {exc}") from exc
    pending = lore.wiki.dirty.pending()
    now = datetime.now(UTC)
    oldest = min((due for _, due, _ in pending), default=None)
    spool = lore.settings.data_dir / "spool.jsonl"
    return {
        "queues": depths,
        "dirty_pages": len(pending),
        "oldest_pending_s": None if oldest is None else round((now - oldest).total_seconds(), 1),
        "spooled_batches": sum(1 for _ in spool.open()) if spool.exists() else 0,
        "dead_letter": {"count": dead, "oldest": oldest_dead.at if oldest_dead else None},
    }


def _spend(lore: Teamlore) -> dict[str, Any]:
    """The ledger as stored (it outlives configuration changes), whether a model is set, and each
    role's circuit breaker as it last changed (a role never tripped is closed)."""
    stored = {row.role: row for row in lore.stores.spend.breakers()}
    roles = list(stored)
    if lore.settings.llm_base_url:
        from teamlore.llm.client import Role  # the openai package is there when a model is set

        roles = [role.value for role in Role] + [r for r in stored if r not in {x.value for x in Role}]
    return {
        "endpoint": lore.settings.llm_base_url or None,
        "spend": [asdict(row) for row in lore.stores.spend.totals()],
        "breakers": [_breaker_json(role, stored.get(role)) for role in roles],
    }


def _breaker_json(role: str, row: BreakerRow | None) -> dict[str, Any]:
    if row is None:
        return {"role": role, "state": "closed", "failures": 0, "changed_at": None, "retry_at": None}
    return {
        "role": role,
        "state": row.state,
        "failures": row.failures,
        "changed_at": iso(row.changed_at),
        "retry_at": None if row.retry_at is None else iso(row.retry_at),
    }


def _print_spend(model: dict[str, Any]) -> None:
    endpoint = model["endpoint"] or "none (TEAMLORE_LLM_BASE_URL is not set: heuristics only)"
    out.print(f"model endpoint: {endpoint}", markup=False)
    if model["breakers"]:
        out.print("model roles: " + ", ".join(_breaker_text(b) for b in model["breakers"]), markup=False)
    if not model["spend"]:
        out.print("model spend: no calls recorded", markup=False)
        return
    out.print("model spend (role, model: calls, failures, fallbacks, rejected, cache hits, tokens in/out):")
    for row in model["spend"]:
        out.print(
            f"  {row['role']}, {row['model']}: {row['calls']} calls, {row['failures']} failed, "
            f"{row['fallbacks']} fallbacks, {row['rejected']} rejected, {row['cache_hits']} cache hits, "
            f"{row['prompt_tokens']:,} / {row['completion_tokens']:,} tokens",
            markup=False,
        )


def _breaker_text(breaker: dict[str, Any]) -> str:
    if breaker["state"] == "closed":
        return f"{breaker['role']} closed"
    if breaker["state"] == "half_open":
        return f"{breaker['role']} half-open (a trial call is deciding)"
    return (
        f"{breaker['role']} OPEN ({breaker['failures']} failed requests in a row; "
        f"fallback used until {breaker['retry_at']}, then one trial call)"
    )


def doctor(
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Run only this check (repeat); e.g. redis, workers.")
    ] = None,
    liveness: Annotated[
        bool,
        typer.Option(
            "--liveness",
            help="Only what a liveness probe needs: settings parse, the data folder is writable; no"
            " network call.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> int:
    """Check the configuration and every configured service; say what is wrong and how to fix it."""
    from teamlore.doctor import LIVENESS, run_checks, select

    if liveness and only:
        raise InvalidInput("give --liveness or --only, not both")
    checks = run_checks(checks=LIVENESS if liveness else select(only))
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
