"""Two OS processes of the server configuration, each with its own empty data folder, one
MongoDB (nx-27017, a server process of its own): what one writes of the state no event's
transaction touches, the other reads. Each sharing test has its control: the same two processes
on separate MongoDB databases share nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .mongo_server import drop_database, fresh_database

ROOT = Path(__file__).resolve().parent.parent


class Node:
    """One process's environment: its own data folder, a MongoDB database."""

    def __init__(self, folder: Path, mongo_url: str, database: str) -> None:
        self.folder, self.mongo_url, self.database = folder, mongo_url, database
        folder.mkdir(parents=True)
        assert not any(folder.iterdir())  # starts empty

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMLORE_")}
        env.update(
            TEAMLORE_DATA_DIR=str(self.folder),
            TEAMLORE_MONGO_URL=self.mongo_url,
            TEAMLORE_MONGO_DB=self.database,
        )
        return env

    def start(self, *args: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "tests.shared_state_process", *args]
        return subprocess.Popen(
            command, cwd=ROOT, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def run(self, *args: str) -> dict:
        return finish(self.start(*args))


def finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def nodes(tmp_path: Path, nx_server: str):
    """Nodes a and b share a database; node c has one of its own (the control)."""
    shared, own = fresh_database(), fresh_database()
    made = {
        "a": Node(tmp_path / "a", nx_server, shared),
        "b": Node(tmp_path / "b", nx_server, shared),
        "c": Node(tmp_path / "c", nx_server, own),
    }
    yield made
    drop_database(nx_server, shared)
    drop_database(nx_server, own)


def test_a_token_made_by_one_process_is_accepted_by_another_and_its_revocation_too(nodes):
    made = nodes["a"].run("create-token")
    assert nodes["b"].run("authenticate", made["secret"]) == {"ok": True, "channels": ["C1"]}
    refused = nodes["c"].run("authenticate", made["secret"])  # control: another database
    assert refused == {"ok": False, "error": "unknown API token"}
    nodes["b"].run("revoke", made["token_id"])
    assert nodes["a"].run("authenticate", made["secret"]) == {
        "ok": False,
        "error": "this API token was revoked",
    }


def test_a_backfill_stopped_in_one_process_is_resumed_by_another(nodes):
    first = nodes["a"].run("backfill", "1")
    assert first == {"resumed_from": "", "delivered": ["1", "2"], "total": 2, "done": False}
    second = nodes["b"].run("backfill", "10")
    assert second == {"resumed_from": "p2", "delivered": ["3", "4", "5"], "total": 5, "done": True}
    assert nodes["a"].run("backfill", "10")["delivered"] == []  # finished, for every process
    control = nodes["c"].run("backfill", "10")  # another database: starts over
    assert control == {"resumed_from": "", "delivered": ["1", "2", "3", "4", "5"], "total": 5, "done": True}


def test_model_spend_recorded_by_two_processes_at_once_adds_up_in_both(nodes):
    running = [nodes["a"].start("spend", "40"), nodes["b"].start("spend", "40")]
    for proc in running:
        finish(proc)
    assert nodes["a"].run("totals") == {"calls": 80, "prompt_tokens": 800}
    assert nodes["b"].run("totals") == {"calls": 80, "prompt_tokens": 800}
    assert nodes["c"].run("spend", "40") == {"calls": 40, "prompt_tokens": 400}  # control: its own


def _rows(folder: Path) -> dict[str, int]:
    db = sqlite3.connect(folder / "teamlore.sqlite3")
    try:
        return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in OPERATIONAL}
    finally:
        db.close()


OPERATIONAL = ("api_tokens", "backfill_checkpoints", "llm_spend")


def test_with_mongodb_no_process_keeps_this_state_in_its_data_folder(nodes, tmp_path):
    embedded = Node(tmp_path / "embedded", "", "unused")  # control: no MongoDB, the one file
    for node in (nodes["a"], embedded):
        made = node.run("create-token")
        node.run("backfill", "1")
        node.run("spend", "1")
        assert node.run("authenticate", made["secret"])["ok"] is True
    assert nodes["b"].run("totals")["calls"] == 1
    for node in (nodes["a"], nodes["b"]):  # no SQLite file at all in the server stack
        assert not (node.folder / "teamlore.sqlite3").exists()
    assert _rows(embedded.folder) == dict.fromkeys(OPERATIONAL, 1)
