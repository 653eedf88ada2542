"""`teamlore doctor`: every finding names what is wrong and how to fix it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from teamlore.config import Settings
from teamlore.doctor import check_redis, check_workers, run_checks

from .redis_server import OwnRedis, free_port


def _by_name(checks):
    return {c.name: c for c in checks}


def test_a_healthy_embedded_setup_passes_every_check(tmp_path):
    checks = _by_name(run_checks(Settings(data_dir=tmp_path / "d", _env_file=None)))
    assert all(c.ok and not c.warning for c in checks.values()), checks
    assert "384-dimensional" in checks["embedder"].detail


def test_an_unreachable_redis_fails_with_the_fix(tmp_path):
    check = check_redis(
        Settings(data_dir=tmp_path, redis_url=f"redis://127.0.0.1:{free_port()}/0", _env_file=None)
    )
    assert not check.ok and "TEAMLORE_REDIS_URL" in check.fix


def test_redis_without_aof_is_a_warning_and_with_aof_is_not(tmp_path):
    plain = OwnRedis(tmp_path / "plain", aof=False).start()
    durable = OwnRedis(tmp_path / "durable", aof=True).start()
    try:
        without = check_redis(Settings(data_dir=tmp_path, redis_url=plain.url, _env_file=None))
        with_aof = check_redis(Settings(data_dir=tmp_path, redis_url=durable.url, _env_file=None))
    finally:
        plain.stop()
        durable.stop()
    assert without.ok and without.warning and "appendonly" in without.fix
    assert with_aof.ok and not with_aof.warning


def test_no_worker_answering_is_a_failure_that_says_to_start_one(tmp_path):
    server = OwnRedis(tmp_path / "r").start()
    try:
        check = check_workers(Settings(data_dir=tmp_path, redis_url=server.url, _env_file=None))
    finally:
        server.stop()
    assert not check.ok and "teamlore worker" in check.fix


@pytest.mark.parametrize(
    ("env", "exit_code", "line"),
    [
        ({}, 0, "ok   embedder"),
        ({"TEAMLORE_WIKI_WINDOW_S": "soon"}, 1, "FAIL configuration: TEAMLORE_WIKI_WINDOW_S"),
        (
            {"TEAMLORE_WIKI_WINDOWS": "30"},
            0,
            "warn environment: ignored (not Teamlore settings): TEAMLORE_WIKI_WINDOWS",
        ),
    ],
)
def test_the_command_prints_one_line_per_check_and_exits_nonzero_on_failure(tmp_path, env, exit_code, line):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TEAMLORE_")}
    done = subprocess.run(
        [sys.executable, "-m", "teamlore", "doctor"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**clean, "TEAMLORE_DATA_DIR": str(tmp_path / "d"), **env},
        timeout=120,
    )
    assert done.returncode == exit_code, done.stdout + done.stderr
    assert line in done.stdout
    assert "Traceback" not in done.stderr


def test_weaviate_is_checked_only_when_configured_and_an_unreachable_one_fails(tmp_path):
    from teamlore.doctor import check_weaviate

    unset = check_weaviate(Settings(data_dir=tmp_path, _env_file=None))
    down = check_weaviate(
        Settings(data_dir=tmp_path, weaviate_url=f"http://127.0.0.1:{free_port()}", _env_file=None)
    )
    assert unset.ok and "not configured" in unset.detail
    assert not down.ok and "TEAMLORE_WEAVIATE_URL" in down.fix


def test_mongo_is_checked_when_configured_ok_when_up_and_failing_with_the_fix_when_down(tmp_path, nx_server):
    from teamlore.doctor import check_mongo

    facts = {"weaviate_url": "http://127.0.0.1:9"}  # the server stack's facts (not contacted here)
    unset = check_mongo(Settings(data_dir=tmp_path, _env_file=None))
    up = check_mongo(
        Settings(data_dir=tmp_path, mongo_url=nx_server, mongo_db="doctor", _env_file=None, **facts)
    )
    down = check_mongo(
        Settings(
            data_dir=tmp_path,
            mongo_url=f"mongodb://127.0.0.1:{free_port()}/?directConnection=true",
            mongo_timeout_s=1,
            _env_file=None,
            **facts,
        )
    )
    assert unset.ok and "not configured" in unset.detail
    assert up.ok and "schema current" in up.detail  # control: a server that answers
    assert not down.ok and "TEAMLORE_MONGO_URL" in down.fix


def test_mongo_without_weaviate_fails_the_mongo_check_with_the_fix(tmp_path, nx_server):
    from teamlore.doctor import check_mongo

    alone = check_mongo(Settings(data_dir=tmp_path, mongo_url=nx_server, mongo_db="doctor", _env_file=None))
    assert not alone.ok and "\n" not in alone.detail
    assert "TEAMLORE_WEAVIATE_URL" in alone.detail and "TEAMLORE_WEAVIATE_URL" in alone.fix


def test_a_mongo_check_that_fails_leaves_no_client_for_the_collector_to_find_later(tmp_path, nx_server):
    """The failed start's error held the client (and any socket PyMongo leaked when its monitors
    were cancelled mid-connect) until the collector ran at some later moment, in another test."""
    from pymongo import AsyncMongoClient

    from teamlore.doctor import check_mongo

    def clients_after(url: str, timeout_s: float) -> int:
        gc.collect()
        gc.disable()  # only the runtime's own collection may run
        try:
            settings = Settings(
                data_dir=tmp_path,
                mongo_url=url,
                mongo_timeout_s=timeout_s,
                weaviate_url="http://127.0.0.1:9",  # not contacted: check_mongo checks MongoDB
                _env_file=None,
            )
            check_mongo(settings)
            return sum(isinstance(o, AsyncMongoClient) for o in gc.get_objects())
        finally:
            gc.enable()

    down = f"mongodb://127.0.0.1:{free_port()}/?directConnection=true"
    assert clients_after(down, 1) == 0
    assert clients_after(nx_server, 10) == 0  # control: a check that succeeds closes its client too


def test_an_unwritable_data_folder_fails_the_embedded_default_but_not_the_server_stack(tmp_path):
    from teamlore.doctor import check_data_dir

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "data"  # cannot be made, even by root
    embedded = check_data_dir(Settings(data_dir=folder, _env_file=None))
    assert not embedded.ok and "TEAMLORE_DATA_DIR" in embedded.fix
    stack = Settings(data_dir=folder, mongo_url="mongodb://db", hash_secret="s", _env_file=None)
    served = check_data_dir(stack)
    assert served.ok and "spools" in served.detail
    unkeyed = check_data_dir(Settings(data_dir=folder, mongo_url="mongodb://db", _env_file=None))
    assert not unkeyed.ok  # without TEAMLORE_HASH_SECRET the stack would write its key there
