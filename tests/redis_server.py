"""A redis-server of the test's own, on a free port in a temporary folder (never the machine's)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OwnRedis:
    def __init__(self, folder: Path, aof: bool = True) -> None:
        self.folder, self.aof, self.port = folder, aof, free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OwnRedis:
        self.folder.mkdir(parents=True, exist_ok=True)
        args = [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.folder),
            "--save",
            "",
            "--appendonly",
            "yes" if self.aof else "no",
            "--appendfsync",
            "always",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with redis.Redis.from_url(self.url) as client:  # closed: no socket left to the collector
            for _ in range(100):
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None
