"""The signed push endpoint through a real server: each bad request is a clear 4xx and changes
nothing in the store; a good batch lands (inline, or on the queue when Redis is configured)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import redis

from teamlore.app import Teamlore
from teamlore.capabilities.push import sign
from teamlore.config import Settings
from teamlore.web import create_app
from teamlore.workers.celery_app import INGEST

from .conftest import WS, Clock
from .redis_server import OwnRedis
from .web_server import serving

SECRET = "push-secret"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@dataclass
class Push:
    lore: Teamlore
    http: httpx.Client
    clock: Clock

    def send(
        self,
        body: bytes,
        key: str = "k1",
        secret: str = SECRET,
        at: datetime | None = None,
        signature: str | None = None,
    ) -> httpx.Response:
        stamp = str(int((at or self.clock()).timestamp()))
        headers = {
            "Content-Type": "application/json",
            "X-Teamlore-Timestamp": stamp,
            "X-Teamlore-Signature": signature or sign(secret, stamp, body),
            "Idempotency-Key": key,
        }
        return self.http.post("/api/push", content=body, headers=headers)

    def counts(self) -> tuple[int, int, int]:
        if not self.lore.settings.db_path.exists():  # the server stack keeps no file
            return (0, 0, 0)
        db = sqlite3.connect(self.lore.settings.db_path)
        try:
            return tuple(
                db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("messages", "fact_versions", "push_seen")
            )
        finally:
            db.close()


def _event(n: int, text: str = "We decided Redis is the queue.", **fields) -> dict:
    return {
        "kind": "message.created",
        "platform": "slack",
        "workspace": WS,
        "channel": "C1",
        "channel_name": "eng",
        "message_id": f"{n}.0001",
        "author_id": "U1",
        "author_name": "alice",
        "ts": "2026-01-05T10:00:00Z",
        "text": text,
        "permalink": f"https://example.slack.com/archives/C1/p{n}",
        **fields,
    }


def _body(*events: dict) -> bytes:
    return json.dumps({"events": list(events)}).encode()


def _site(tmp_path, embedder, **settings) -> Iterator[Push]:
    clock = Clock(NOW)
    config = Settings(data_dir=tmp_path / "push", _env_file=None, **settings)
    lore = Teamlore(config, embedder=embedder, clock=clock)
    with serving(create_app(lore, flush_pages=False)) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield Push(lore, http, clock)
    lore.close()


@pytest.fixture
def push(tmp_path, embedder) -> Iterator[Push]:
    yield from _site(tmp_path, embedder, push_secret=SECRET, push_max_events=3, push_max_bytes=20_000)


def test_a_good_batch_lands(push):
    response = push.send(_body(_event(1), _event(2, "The office lease ends in December.")))
    assert response.status_code == 200, response.text
    assert response.json()["accepted"] == 2 and response.json()["delivery"] == "inline"
    assert push.lore.stores.messages.get_message(WS, "C1", "2.0001").text.startswith("The office lease")
    assert push.counts()[:2] == (2, 2)


@pytest.mark.parametrize(
    ("case", "status", "words"),
    [
        ("bad signature", 401, "bad signature"),
        ("wrong secret", 401, "bad signature"),
        ("stale timestamp", 401, "stale timestamp"),
        ("future timestamp", 401, "stale timestamp"),
        ("no idempotency key", 400, "Idempotency-Key"),
        ("oversized batch", 413, "limit is 3"),
        ("oversized body", 413, "limit is 20,000"),
        ("malformed event", 422, "event 1: message 2.0001: ts"),
        ("not json", 400, "not JSON"),
        ("no events", 400, "at least one event"),
    ],
)
def test_a_bad_push_is_refused_clearly_and_changes_nothing(push, case, status, words):
    good = _body(_event(1), _event(2, "The office lease ends in December."))
    requests = {
        "bad signature": lambda: push.send(good, signature="sha256=" + "0" * 64),
        "wrong secret": lambda: push.send(good, secret="guess"),
        "stale timestamp": lambda: push.send(good, at=NOW - timedelta(minutes=6)),
        "future timestamp": lambda: push.send(good, at=NOW + timedelta(minutes=6)),
        "no idempotency key": lambda: push.send(good, key=""),
        "oversized batch": lambda: push.send(_body(*(_event(n) for n in range(4)))),
        "oversized body": lambda: push.send(_body(_event(1, "x" * 25_000))),
        "malformed event": lambda: push.send(_body(_event(1), _event(2, ts="yesterday"))),
        "not json": lambda: push.send(b"events: 1"),
        "no events": lambda: push.send(_body()),
    }
    response = requests[case]()
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert words in message and "\n" not in message
    assert push.counts() == (0, 0, 0)
    # Control: the same good batch, correctly signed, lands after the refusal.
    assert push.send(good, key="fresh").status_code == 200
    assert push.counts()[:2] == (2, 2)


def test_a_replay_is_refused_by_key_or_by_signature(push):
    body = _body(_event(1))
    assert push.send(body, key="once").status_code == 200
    before = push.counts()
    again = push.send(body, key="once")
    other_key = push.send(body, key="twice")  # same signed request, a new key: still a replay
    assert (again.status_code, other_key.status_code) == (409, 409)
    assert "accepted before" in again.json()["error"]
    assert push.counts() == before
    # Control: a new request (new timestamp, so a new signature) with a new key is accepted.
    push.clock.advance(seconds=30)
    assert push.send(_body(_event(2, "The office lease ends in December.")), key="new").status_code == 200


def test_a_signature_is_checked_on_its_exact_bytes(push):
    """A replay with a new key and a byte added to the signature is refused as a bad signature
    (401), not read as the same signature with whitespace around it."""
    body = _body(_event(1))
    stamp = str(int(push.clock().timestamp()))
    good = sign(SECRET, stamp, body)
    assert push.send(body, key="once").status_code == 200
    before = push.counts()
    for suffix in (b"\xa0", b"\x85"):
        headers = {
            "Content-Type": "application/json",
            "X-Teamlore-Timestamp": stamp,
            "X-Teamlore-Signature": good.encode() + suffix,
            "Idempotency-Key": f"again-{suffix.hex()}",
        }
        response = push.http.post("/api/push", content=body, headers=headers)
        assert response.status_code == 401, (suffix, response.text)
        assert "bad signature" in response.json()["error"]
    assert push.counts() == before
    # Control: the exact signature with a new key is a replay (409), recorded under what was verified.
    assert push.send(body, key="twice").status_code == 409


def test_push_is_off_without_a_secret(tmp_path, embedder):
    for site in _site(tmp_path, embedder):
        response = site.send(_body(_event(1)), secret="")
        assert response.status_code == 503 and "TEAMLORE_PUSH_SECRET" in response.json()["error"]
        assert site.counts() == (0, 0, 0)


def test_with_redis_a_good_batch_goes_to_the_workers_queue(tmp_path, embedder):
    server = OwnRedis(tmp_path / "redis", aof=False).start()
    try:
        for site in _site(tmp_path, embedder, push_secret=SECRET, redis_url=server.url):
            response = site.send(_body(_event(1), _event(2, "The office lease ends in December.")))
            assert response.status_code == 200, response.text
            assert response.json()["delivery"] == "queued"
            assert redis.Redis.from_url(server.url).llen(INGEST) == 1
            assert site.counts() == (0, 0, 2)  # the workers store it; key and signature are remembered
            assert (
                site.send(_body(_event(1), _event(2, "The office lease ends in December."))).status_code
                == 409
            )
    finally:
        server.stop()


def test_in_the_server_stack_a_push_accepted_by_one_api_process_is_refused_by_another(
    tmp_path, embedder, nx_server, weaviate_wire
):
    """With MongoDB and Redis the replay guard is Redis's, shared by every API process, each with
    its own data folder; the control, the same two without MongoDB, keeps the guard in each
    process's file, so the second accepts the replay."""
    from contextlib import ExitStack, contextmanager

    from .mongo_server import drop_database, fresh_database

    server = OwnRedis(tmp_path / "redis", aof=False).start()
    database = fresh_database()
    site = contextmanager(_site)
    body = _body(_event(1))
    try:
        # The server stack: MongoDB, Redis and Weaviate (its facts; the pushes are only queued here).
        stack = {
            "mongo_url": nx_server,
            "mongo_db": database,
            "weaviate_url": weaviate_wire.url,
            "weaviate_grpc_port": weaviate_wire.grpc_port,
            "weaviate_collection": f"TeamlorePush{database[-12:]}",
        }
        for mongo, second_status in ((stack, 409), ({}, 200)):
            with ExitStack() as stack:
                a, b = (
                    stack.enter_context(
                        site(
                            tmp_path / f"{name}{len(mongo)}",
                            embedder,
                            push_secret=SECRET,
                            redis_url=server.url,
                            **mongo,
                        )
                    )
                    for name in ("a", "b")
                )
                assert a.send(body, key=f"k{len(mongo)}").status_code == 200
                replay = b.send(body, key=f"k{len(mongo)}")
                assert replay.status_code == second_status, replay.text
                kept = 0 if mongo else 2  # key and signature in each file, or in neither
                assert (a.counts()[2], b.counts()[2]) == (kept, kept)
    finally:
        drop_database(nx_server, database)
        server.stop()
