"""Hypothesis strategies for events as a careless user or an attacker would write them.

A drawn ``Shape`` is one line of an events file (or one element of a push's ``events`` list): a
good event, an event with one hostile field (refused by the event's validation), or a line whose
JSON itself is hostile (refused by the JSON reader: deep nesting, a giant number, NaN, bytes that
are not UTF-8, a truncated document). Good events are built from safe parts, so the oracle (which
lines must be taken) never asks the code under test. Their texts come from a fixed pool, so a run
embeds each text once and thousands of events stay cheap. Used by tests/test_fuzz_events.py and
bench/fuzz_events.py.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

WS = "T1"
MAX_CHARS = 2_000  # the fuzz store's TEAMLORE_MAX_MESSAGE_CHARS: an oversized text stays small

GOOD = "good"
BAD_EVENT = "bad event"  # valid JSON, refused by the event's validation
BAD_JSON = "bad json"  # refused before any event exists: the whole push body is a 400

TEXTS = (
    "We decided Redis is the queue for the billing service.",
    "The office lease ends in June.",
    "Dana owns the payments ledger.",
    "The launch moved to 12 May.",
    "Status: the migration is blocked on Stripe Connect.",
    "Q: who owns the deploy pipeline?",
    "lunch?",
    "The API rate limit is 100 requests per minute.",
    "Tabs\tand\nnewlines\r\nare fine in a message.",
    "Emoji 🎉 and accents: café, naïve, Zürich.",
    "日本語のメッセージもそのまま保存される。",
    "שלום, the RTL text stays as written.",
    "Zero\u200bwidth and line\u2028separator characters are text too.",
    "",
    "x" * MAX_CHARS,
)
_SAFE = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"))
_ID_CHARS = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zs", "Zl", "Zp"))
_IDS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Shape:
    raw: bytes  # the line, as written to a file or spliced into a push body
    verdict: str  # GOOD, BAD_EVENT or BAD_JSON
    message_id: str | None  # the id a good event is stored under
    channel: str
    why: str  # what was done to it, for a failing example's report


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@st.composite
def good_fields(draw) -> dict[str, Any]:
    moment = draw(
        st.datetimes(datetime(1970, 1, 1), datetime(9999, 12, 30, 23, 59, 59), timezones=st.just(UTC))
    )
    return {
        "kind": "message.created",
        "platform": "slack",
        "workspace": WS,
        "channel": draw(st.sampled_from(["C1", "C2"])),
        "channel_name": draw(st.text(_SAFE, max_size=30)),
        "channel_visibility": draw(st.sampled_from(["public", "private", "dm"])),
        "message_id": f"m{next(_IDS)}-{draw(st.text(_ID_CHARS, max_size=8))}",
        "thread_id": None,
        "author_id": draw(st.text(_SAFE, max_size=20)),
        "author_name": draw(st.text(_SAFE, max_size=40)),
        "ts": _iso(moment),
        "text": draw(st.sampled_from(TEXTS)),
        "permalink": "https://example.slack.com/archives/C1/p1",
        "attachments": draw(
            st.lists(
                st.fixed_dictionaries(
                    {"name": st.text(_SAFE, min_size=1, max_size=40), "size": st.integers(0, 2**63 - 1)}
                ),
                max_size=2,
            )
        ),
    }


_SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)
_CONTROL = st.sampled_from([chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)])
_LINE_BREAK = st.sampled_from(["\n", "\r", "\t", "\x00", "\x1b"])
# Integers of at most 20 digits: a longer one is refused as JSON (bad_json), not as an event.
_INT = st.integers(-(10**20) + 1, 10**20 - 1)
_WRONG_TYPE = st.one_of(
    _INT,
    st.booleans(),
    st.lists(_INT, max_size=2),
    st.dictionaries(st.text(max_size=3), _INT, max_size=2),
)
_OUT_OF_RANGE = st.one_of(
    st.datetimes(datetime(1, 1, 1), datetime(1969, 12, 31, 23, 59, 59)).map(
        lambda d: d.isoformat() + "+01:00"
    ),
    st.datetimes(datetime(1, 1, 1), datetime(1969, 12, 31, 23, 59, 59), timezones=st.just(UTC)).map(_iso),
    st.datetimes(datetime(9999, 12, 31), datetime(9999, 12, 31, 23, 59, 59), timezones=st.just(UTC)).map(
        _iso
    ),
    st.sampled_from(
        ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", "yesterday", "", "2026-13-01"]
    ),
    st.datetimes(datetime(1970, 1, 2), datetime(9999, 12, 30)).map(lambda d: d.isoformat()),  # no zone
    st.sampled_from([10**19, -1, -(10**15), 1e300]),
)


def _spliced(text: str, bad: str, at: int) -> str:
    at = min(at, len(text))
    return text[:at] + bad + text[at:]


@st.composite
def _hostile_field(draw) -> tuple[str, Any]:
    """One field and the value that must get the event refused."""
    field = draw(st.sampled_from(["text", "line", "id", "ts", "kind", "attachments", "missing"]))
    at = draw(st.integers(0, 40))
    if field == "text":
        bad = draw(st.one_of(_SURROGATE, _CONTROL))
        value = draw(
            st.one_of(
                st.just(_spliced(draw(st.sampled_from(TEXTS)), bad, at)),
                st.just("y" * (MAX_CHARS + 1)),
                _WRONG_TYPE,
            )
        )
        return "text", value
    if field == "line":
        name = draw(st.sampled_from(["author_name", "channel_name", "author_id", "permalink"]))
        value = draw(
            st.one_of(
                st.builds(
                    _spliced, st.text(_SAFE, max_size=20), st.one_of(_SURROGATE, _LINE_BREAK), st.just(at)
                ),
                st.just("n" * 2_001),
                _WRONG_TYPE,
            )
        )
        return name, value
    if field == "id":
        name = draw(st.sampled_from(["message_id", "channel", "workspace", "platform", "thread_id"]))
        value = draw(
            st.one_of(
                st.builds(
                    _spliced,
                    st.text(_ID_CHARS, max_size=10),
                    st.one_of(_SURROGATE, st.just(" "), _CONTROL),
                    st.just(at),
                ),
                st.just("i" * 201),
                _WRONG_TYPE,
                st.just("") if name != "thread_id" else _WRONG_TYPE,
            )
        )
        return name, value
    if field == "ts":
        return "ts", draw(_OUT_OF_RANGE)
    if field == "kind":
        return "kind", draw(
            st.one_of(st.sampled_from(["message.exploded", "", "MESSAGE.CREATED"]), _WRONG_TYPE)
        )
    if field == "attachments":
        value = draw(
            st.sampled_from(
                [
                    [{"name": "a.png", "size": 2**64}],
                    [{"name": "a.png", "size": -1}],
                    [{"name": "a\ud800.png"}],
                    [{"name": ""}],
                    [{"name": "a.png"}] * 101,
                    "a.png",
                    {"name": "a.png"},
                ]
            )
        )
        return "attachments", value
    return draw(st.sampled_from(["kind", "platform", "workspace", "channel", "message_id", "ts"])), ...


@st.composite
def bad_event(draw) -> Shape:
    fields = draw(good_fields())
    name, value = draw(_hostile_field())
    if value is ...:
        del fields[name]
        why = f"no {name}"
    else:
        fields[name] = value
        why = f"{name} = {value!r:.60}"
    if draw(st.integers(0, 19)) == 0:  # now and then, not an object at all
        fields, why = draw(st.one_of(_WRONG_TYPE, st.text(max_size=5), st.none())), "not an object"
    raw = json.dumps(fields).encode()  # a lone surrogate is written as its \\ud8xx escape: valid JSON
    return Shape(raw, BAD_EVENT, None, "", why)


@st.composite
def bad_json(draw) -> Shape:
    depth = draw(st.sampled_from([1_100, 5_000, 100_000]))  # past the recursion limit, far past it
    raw = draw(
        st.sampled_from(
            [
                b"[" * depth,
                b"[" * depth + b"]" * depth,
                b'{"a":' * depth + b"1" + b"}" * depth,
                b'{"kind": "message.created", "n": ' + b"9" * draw(st.integers(21, 5_000)) + b"}",
                b'{"kind": "message.created", "n": -' + b"1" * draw(st.integers(21, 400)) + b"}",
                b'{"kind": "message.created", "n": NaN}',
                b'{"kind": "message.created", "n": -Infinity}',
                b'{"kind": "message.created", "n": 1e999}',
                b'{"kind": "message.created", "text": "caf\xe9"}',
                b'{"kind": "message.created", "text": "\xff\xfe"}',
                b'{"kind": "message.created", "text": "unterminated',
                b"{not json}",
            ]
        )
    )
    return Shape(raw, BAD_JSON, None, "", f"hostile JSON {raw[:30]!r}")


@st.composite
def good_event(draw) -> Shape:
    fields = draw(good_fields())
    return Shape(json.dumps(fields).encode(), GOOD, fields["message_id"], fields["channel"], "good")


def shapes(good_weight: int = 2) -> st.SearchStrategy[Shape]:
    """Good events, mixed with events refused by validation and lines refused as JSON."""
    return st.one_of(*([good_event()] * good_weight), bad_event(), bad_json())


def event_shapes() -> st.SearchStrategy[Shape]:
    """As ``shapes`` without hostile JSON: the elements of a push body that is itself JSON."""
    return st.one_of(good_event(), good_event(), bad_event())


def push_body(items: list[Shape]) -> bytes:
    return b'{"events": [' + b", ".join(item.raw for item in items) + b"]}"


def expected_push_status(items: list[Shape]) -> int:
    """200 when every item is good; 400 when the body is not JSON we take; else 422."""
    if any(item.verdict == BAD_JSON for item in items):
        return 400
    return 422 if any(item.verdict == BAD_EVENT for item in items) else 200
