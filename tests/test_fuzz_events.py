"""Property: hostile event shapes mixed with good events, through the events-file reader into the
store and through the signed push over real HTTP (issue 16). Every good event is stored, every bad
one refused with one line that names it, no exception escapes, no push answers 500.

Derandomized and small enough for CI; bench/fuzz_events.py runs the same shapes by the ten thousand.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teamlore.app import Teamlore
from teamlore.capabilities.importing import import_items
from teamlore.capabilities.push import sign
from teamlore.config import Settings
from teamlore.connectors.events_file import read_events_file
from teamlore.web import create_app

from .hostile_events import GOOD, MAX_CHARS, WS, Shape, event_shapes, expected_push_status, push_body, shapes
from .web_server import serving

SECRET = "fuzz-secret"
FUZZ = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_FILES = itertools.count(1)
_KEYS = itertools.count(1)


@dataclass
class Store:
    lore: Teamlore
    folder: Path
    http: httpx.Client

    def stored(self, item: Shape) -> bool:
        return self.lore.stores.messages.get_message(WS, item.channel, item.message_id or "") is not None

    def push(self, body: bytes) -> httpx.Response:
        stamp = str(int(self.lore.clock().timestamp()))
        headers = {
            "Content-Type": "application/json",
            "X-Teamlore-Timestamp": stamp,
            "X-Teamlore-Signature": sign(SECRET, stamp, body),
            "Idempotency-Key": f"fuzz-{next(_KEYS)}",
        }
        return self.http.post("/api/push", content=body, headers=headers)


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Iterator[Store]:
    folder = tmp_path_factory.mktemp("fuzz")
    config = Settings(
        data_dir=folder / "store", max_message_chars=MAX_CHARS, push_secret=SECRET, _env_file=None
    )
    lore = Teamlore(config, embedder=embedder)
    with serving(create_app(lore, flush_pages=False)) as url, httpx.Client(base_url=url, timeout=60) as http:
        yield Store(lore, folder, http)
    lore.close()


def _write(store: Store, lines: list[Shape]) -> Path:
    path = store.folder / f"events-{next(_FILES)}.jsonl"
    path.write_bytes(b"\n".join(line.raw for line in lines) + b"\n")
    return path


def _bad_lines(lines: list[Shape]) -> list[int]:
    return [number for number, line in enumerate(lines, start=1) if line.verdict != GOOD]


# The reader alone is cheap: many examples. Storing embeds every good message: fewer.
@settings(FUZZ, max_examples=200)
@given(lines=st.lists(shapes(), min_size=1, max_size=8))
def test_the_events_reader_takes_every_good_line_and_refuses_every_bad_one_with_one_line(store, lines):
    path = _write(store, lines)
    items = list(read_events_file(path, MAX_CHARS))
    assert [item.location for item in items] == [f"{path.name}:{n}" for n in range(1, len(lines) + 1)]
    for item, line in zip(items, lines, strict=True):
        if line.verdict == GOOD:
            assert item.error is None and item.event is not None, (item.error, line.why)
            assert item.event.message_id == line.message_id
        else:
            assert item.event is None and item.error is not None, line.why
            assert str(item.error) and "\n" not in str(item.error)


@settings(FUZZ, max_examples=15)
@given(lines=st.lists(shapes(), min_size=1, max_size=3))
def test_an_events_file_of_hostile_and_good_lines_stores_every_good_one_and_names_every_bad_one(store, lines):
    path = _write(store, lines)
    summary = import_items(read_events_file(path, MAX_CHARS), store.lore.pipeline)
    bad = _bad_lines(lines)
    assert summary.skipped == len(bad), (summary.errors, [line.why for line in lines])
    assert [error.split(": ", 1)[0] for error in summary.errors] == [f"{path.name}:{n}" for n in bad]
    assert all("\n" not in error for error in summary.errors)
    assert summary.taken == len(lines) - len(bad)
    assert all(store.stored(line) for line in lines if line.verdict == GOOD)


@settings(FUZZ, max_examples=60)
@given(
    items=st.one_of(
        st.lists(event_shapes(), min_size=1, max_size=5), st.lists(shapes(), min_size=1, max_size=5)
    )
)
def test_a_push_of_hostile_and_good_events_is_taken_whole_or_refused_whole_and_never_a_500(store, items):
    response = store.push(push_body(items))
    expected = expected_push_status(items)
    assert response.status_code == expected, (response.text, [item.why for item in items])
    body = response.json()
    if expected == 200:
        assert body["accepted"] == len(items)
        assert all(store.stored(item) for item in items)
        return
    assert set(body) == {"error", "status"} and body["status"] == expected
    assert "\n" not in body["error"]
    if expected == 422:  # names the first bad events by their place in the list
        bad = [index for index, item in enumerate(items) if item.verdict != GOOD]
        assert all(f"event {index}: " in body["error"] for index in bad[:3]), body["error"]
    assert not any(store.stored(item) for item in items if item.verdict == GOOD)
