"""A MongoDB-wire-protocol server of the test's own (nx-27017, over in-memory SQLite), on a
free port, or a real MongoDB named by TEAMLORE_TEST_MONGO_URL."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from .helpers import stop_process
from .redis_server import free_port


def nx_executable() -> str:
    beside = Path(sys.executable).parent / "nx-27017"
    found = str(beside) if beside.exists() else shutil.which("nx-27017")
    if found is None:
        raise RuntimeError("nx-27017 is not installed: pip install -e '.[test]'")
    return found


class OwnMongo:
    """``nx-27017 --db memory -p PORT``; pid and log files in ``folder``, never the defaults in /tmp.
    ``durable`` keeps the data in a file in ``folder`` instead, so a restart finds it again;
    ``serial`` runs its transactions one at a time (tests/nx_serial.py), for several processes
    committing at once."""

    def __init__(self, folder: Path, durable: bool = False, serial: bool = False) -> None:
        self.folder, self.port, self.serial = folder, free_port(), serial
        self.db = str(folder / "nx.sqlite3") if durable else "memory"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def start(self) -> OwnMongo:
        self.folder.mkdir(parents=True, exist_ok=True)
        server = [sys.executable, "-m", "tests.nx_serial"] if self.serial else [nx_executable()]
        args = [*server, "--db", self.db, "-p", str(self.port), "--host", "127.0.0.1"]
        args += ["--pid-file", str(self.folder / "nx.pid"), "--log-file", str(self.folder / "nx.log")]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_answers(self.url, self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


def wait_until_answers(url: str, proc: subprocess.Popen | None = None, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        client: MongoClient = MongoClient(url, serverSelectionTimeoutMS=500)
        try:
            client.admin.command("ping")
            return
        except PyMongoError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the MongoDB server exited with {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"no MongoDB answered at {url} within {seconds:g}s") from None
            time.sleep(0.1)
        finally:
            client.close()


def fresh_database(prefix: str = "tl") -> str:
    """A database name of the test's own: tests share a server, never a database."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def drop_database(url: str, name: str) -> None:
    client: MongoClient = MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        client.drop_database(name)
    finally:
        client.close()
