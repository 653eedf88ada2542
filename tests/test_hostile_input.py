"""Hostile input through the real command line and a real HTTP server (issue 16, rows 1, 2, 6, 11).

A bad event is refused with one line naming it and why, the good events of the same file are
imported, the exit code is 2 and no traceback is printed; the push answers a 4xx in the error
shape, never a 500. A file that is no events file at all gets one line, not one per line of it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from .test_cli import run
from .test_connector_imports import dce_file, dce_message
from .test_mattermost_export import JAN5_MS, write_jsonl
from .test_production import Worker
from .test_push import _body, _event, push  # noqa: F401  (the fixture)
from .test_teams import graph_message

GOOD = "The deploy window for the billing service is Tuesday morning."


def _line(message_id: str, **fields) -> dict:
    return {
        "kind": "message.created",
        "platform": "slack",
        "workspace": "T1",
        "channel": "C1",
        "channel_name": "eng",
        "message_id": message_id,
        "author_id": "U1",
        "author_name": "alice",
        "ts": "2026-01-05T10:00:00Z",
        "text": GOOD,
        **fields,
    }


def _stored(data_dir: Path) -> set[str]:
    db = sqlite3.connect(data_dir / "teamlore.sqlite3")
    try:
        return {row[0] for row in db.execute("SELECT message_id FROM messages")}
    finally:
        db.close()


def _skipped(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert all(line.startswith("skipped ") for line in lines), stderr
    return lines


# (raw line, words its refusal must hold); each line is a hostile shape of one event.
HOSTILE = [
    (json.dumps(_line("m-surrogate", text="caf\ud800e")), "m-surrogate: text: holds a lone surrogate"),
    (json.dumps(_line("m-nul", text="a\x00b")), "m-nul: text: holds a control character (U+0000)"),
    (json.dumps(_line("m-bell", text="ring \x07")), "m-bell: text: holds a control character (U+0007)"),
    (json.dumps(_line("m-name", author_name="al\nice")), "m-name: author_name: holds a control"),
    ("[" * 100_000, "JSON nested too deeply"),
    ('{"kind": "message.created", "size": ' + "9" * 5_000 + "}", "a number with 5,000 digits"),
    (json.dumps(_line("m-inf")).replace('"ts"', '"n": 1e999, "ts"'), "out of range"),
    (json.dumps(_line("m-year1", ts="0001-01-01T00:00:00+01:00")), "m-year1: ts: 0001-01-01T00:00:00+01:00"),
    (json.dumps(_line("m-far", ts="9999-12-31T00:00:00Z")), "m-far: ts: 9999-12-31T00:00:00+00:00"),
    (json.dumps(_line("m-big", text="x" * 40_001)), "m-big: event: text is 40,001 characters"),
    (json.dumps(_line("m-type", text=["not", "text"])), "m-type: text: Input should be a valid string"),
    (
        json.dumps(_line("m-size", attachments=[{"name": "a.png", "size": 2**64}])),
        "m-size: attachments.0.size",
    ),
]


def test_import_refuses_each_hostile_line_with_one_line_and_takes_the_rest(tmp_path):
    events = tmp_path / "events.jsonl"
    good = [json.dumps(_line("good-1")), json.dumps(_line("good-2", text="The office lease ends in June."))]
    events.write_text("\n".join([good[0], *(raw for raw, _ in HOSTILE), good[1]]) + "\n")
    done = run("import", str(events), "--json", data_dir=tmp_path / "store")
    assert done.returncode == 2, done.stderr
    lines = _skipped(done.stderr)
    assert len(lines) == len(HOSTILE)
    for number, (line, (_, words)) in enumerate(zip(lines, HOSTILE, strict=True), start=2):
        assert line.startswith(f"skipped events.jsonl:{number}: ") and words in line, line
    summary = json.loads(done.stdout)
    assert summary["taken"] == 2 and summary["skipped"] == len(HOSTILE)
    assert _stored(tmp_path / "store") == {"good-1", "good-2"}


def test_a_refusal_is_printed_as_written_even_at_line_1234(tmp_path):
    # Found by bench/fuzz_events.py: the console read ":1234:" as an emoji code and printed a 🔢.
    events = tmp_path / "events.jsonl"
    events.write_text(
        json.dumps(_line("good-1")) + "\n" * 1233 + json.dumps(_line(":smile:", kind="x")) + "\n"
    )
    done = run("import", str(events), data_dir=tmp_path / "store")
    assert done.returncode == 2
    assert _skipped(done.stderr) == [
        "skipped events.jsonl:1234: message :smile:: kind: must be one of 'message.created', "
        "'message.edited' or 'message.deleted'"
    ]


def test_a_time_at_the_edges_of_the_range_is_taken(tmp_path):
    events = tmp_path / "events.jsonl"
    edges = [_line("first", ts="1970-01-01T00:00:00Z"), _line("last", ts="9999-12-30T23:59:59Z")]
    events.write_text("\n".join(json.dumps(e) for e in edges) + "\n")
    done = run("import", str(events), data_dir=tmp_path / "store")
    assert done.returncode == 0, done.stderr
    assert _stored(tmp_path / "store") == {"first", "last"}


def _one_line(done) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_a_binary_file_gets_one_line_not_one_per_line(tmp_path):
    blob = tmp_path / "photo.jpg.jsonl"
    blob.write_bytes(bytes((i * 7919 + i // 3) % 256 for i in range(200_000)))
    assert blob.read_bytes().count(b"\n") > 700  # the old reader said one thing per line
    line = _one_line(run("import", str(blob), data_dir=tmp_path / "store"))
    assert "photo.jpg.jsonl is not an events file: binary data" in line


def test_a_text_file_that_is_not_json_lines_gets_one_line(tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text("".join(f"{n},alice{n},eng\n" for n in range(500)))
    line = _one_line(run("import", str(csv), data_dir=tmp_path / "store"))
    assert "people.csv is not an events file: none of its first 20 line(s) is a JSON object" in line


def test_a_truncated_slack_export_zip_is_not_a_readable_zip(tmp_path):
    archive = tmp_path / "slack-export.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("channels.json", json.dumps([{"id": "C1", "name": "eng"}]))
        day = [
            {"ts": f"1767607200.{n:06d}", "user": "U1", "text": f"{GOOD} {n} " + os.urandom(400).hex()}
            for n in range(40)
        ]
        zipped.writestr("eng/2026-01-05.json", json.dumps(day))
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    line = _one_line(run("import", str(archive), data_dir=tmp_path / "store"))
    assert "slack-export.zip is not a readable zip (truncated or damaged?)" in line


def _slack_export(folder: Path) -> Path:
    (folder / "eng").mkdir(parents=True)
    (folder / "channels.json").write_text(json.dumps([{"id": "C1", "name": "eng"}]))
    day = [
        {"ts": "1767607200.000100", "user": "U1", "text": GOOD},
        {"ts": "1767607201.000100", "user": "U1", "text": "caf\ud800e"},
        {"ts": "1767607202.000100", "user": "U1", "text": {"wrong": "type"}},
    ]
    (folder / "eng" / "2026-01-05.json").write_text(json.dumps(day))
    return folder


def _discord_export(folder: Path) -> Path:
    folder.mkdir()
    bad_time = {**dce_message("3", GOOD), "timestamp": "0001-01-01T00:00:00+01:00"}
    wrong = {**dce_message("4", GOOD), "attachments": 5}
    messages = [dce_message("1", GOOD), dce_message("2", "caf\ud800e"), bad_time, wrong]
    channel = {"id": "200", "type": "GuildTextChat", "name": "eng", "categoryId": None}
    return dce_file(folder, "eng.json", channel, messages)


def _graph_export(folder: Path) -> Path:
    folder.mkdir()
    wrong = {**graph_message("3", GOOD, 3), "from": 5}
    messages = [graph_message("1", GOOD, 1), graph_message("2", "caf\ud800e", 2), wrong]
    path = folder / "messages.json"
    path.write_text(
        json.dumps({"@odata.context": "https://graph/teams/x/channels/y/messages", "value": messages})
    )
    return path


def _mattermost_export(folder: Path) -> Path:
    folder.mkdir()
    post = {"team": "acme", "channel": "eng", "user": "alice"}
    return write_jsonl(
        folder / "export.jsonl",
        [
            {"type": "version", "version": 1},
            {"type": "post", "post": {**post, "message": GOOD, "create_at": JAN5_MS}},
            {"type": "post", "post": {**post, "message": "caf\ud800e", "create_at": JAN5_MS + 1}},
            {"type": "post", "post": {**post, "message": GOOD, "create_at": 10**19}},
            {"type": "post", "post": {**post, "message": GOOD, "create_at": JAN5_MS + 2, "replies": 7}},
        ],
    )


@pytest.mark.parametrize(
    ("build", "refused", "stored"),
    [
        (_slack_export, ["#2: message 1767607201.000100: text: holds a lone surrogate", "#3: "], 1),
        (
            _discord_export,
            ["message 2: message 2: text: holds a lone", "message 3: message 3: ts", "message 4"],
            1,
        ),
        (_graph_export, ["message 2: message 2: text: holds a lone", "message 3: malformed message"], 1),
        (_mattermost_export, [":3: message", ":4: malformed message"], 2),
    ],
    ids=["slack", "discord", "graph", "mattermost"],
)
def test_every_export_format_refuses_a_hostile_message_and_takes_the_rest(tmp_path, build, refused, stored):
    source = build(tmp_path / "export")
    done = run("import", str(source), data_dir=tmp_path / "store")
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = _skipped(done.stderr)
    assert len(lines) == len(refused), lines
    for line, words in zip(lines, refused, strict=True):
        assert words in line, line
    assert len(_stored(tmp_path / "store")) == stored


# The push: a bad body is a 4xx in the documented shape ({"error": one line, "status": N}), the
# good batch after it lands.
@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (
            _body(_event(1), _event(2, "caf\ud800e")),
            422,
            "event 1: message 2.0001: text: holds a lone surrogate",
        ),
        (_body(_event(1, "a\x00b")), 422, "event 0: message 1.0001: text: holds a control character"),
        (_body(_event(1, ts="0001-01-01T00:00:00+01:00")), 422, "event 0: message 1.0001: ts: 0001-01-01"),
        (_body(_event(1, ts="9999-12-31T00:00:00Z")), 422, "ts: 9999-12-31T00:00:00+00:00 is outside"),
        (b'{"events": ' + b"[" * 9_000 + b"]" * 9_000 + b"}", 400, "bad body: JSON nested too deeply"),
        (b'{"events": [{"size": ' + b"9" * 5_000 + b"}]}", 400, "bad body: a number with 5,000 digits"),
        (b'{"events": [NaN]}', 400, "bad body: NaN is not a JSON number"),
        (b'{"events": "\xff"}', 400, "bad body: not valid UTF-8"),
        (_body(["not", "an", "event"]), 422, "event 0: an event must be a JSON object"),
    ],
    ids=["surrogate", "nul", "year-1", "far-future", "deep", "giant-int", "nan", "not-utf8", "wrong-type"],
)
def test_a_hostile_push_is_a_4xx_in_the_error_shape_and_stores_nothing(push, body, status, words):  # noqa: F811
    response = push.send(body)
    assert response.status_code == status, response.text
    assert response.json() == {"error": response.json()["error"], "status": status}
    assert words in response.json()["error"] and "\n" not in response.json()["error"]
    assert push.counts() == (0, 0, 0)
    retry = push.send(_body(_event(1), _event(2, "The office lease ends in June.")), key="k2")
    assert retry.status_code == 200, retry.text


class _Worker(Worker):
    """test_production's worker process, on a Redis of the test's own."""

    def __init__(self, data_dir: Path, log: Path, env: dict[str, str]) -> None:
        self.log, self._out = log, log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "teamlore.cli", "worker", "--concurrency", "1"],
            env={**os.environ, **env},
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_for("ready")


# With Redis: the producer (here `teamlore import`) refuses a bad event before it is queued, the
# rest reach the worker; a bad event that reaches the worker anyway (queued by an older producer,
# or under a smaller TEAMLORE_MAX_MESSAGE_CHARS) is logged in one line, never lost
# silently (the worker's dead-letter list keeps it), and the good events of its batch are stored.
def test_with_redis_the_producer_refuses_before_queueing_and_the_worker_reports_what_it_refuses(tmp_path):
    from teamlore.config import Settings
    from teamlore.workers.celery_app import INGEST, make_celery

    from .redis_server import OwnRedis

    broker = OwnRedis(tmp_path / "redis", aof=False).start()
    data_dir = tmp_path / "prod"
    env = {
        "TEAMLORE_REDIS_URL": broker.url,
        "TEAMLORE_DATA_DIR": str(data_dir),
        "TEAMLORE_WIKI_WINDOW_S": "0",
    }
    worker = _Worker(data_dir, tmp_path / "worker.log", env)
    try:
        events = tmp_path / "events.jsonl"
        lines = [
            _line("q-1"),
            _line("q-bad", text="caf\ud800e"),
            _line("q-2", text="The lease ends in June."),
        ]
        events.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        done = subprocess.run(
            [sys.executable, "-m", "teamlore.cli", "import", str(events)],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=120,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.strip() == (
            "skipped events.jsonl:2: message q-bad: text: holds a lone surrogate (U+D800) at character 3"
        )
        assert "enqueued 2 event(s)" in done.stdout
        raw = [_line("q-3", text="Dana owns the billing service."), _line("q-raw", text="a\x00b")]
        app = make_celery(Settings(redis_url=broker.url, data_dir=data_dir, _env_file=None))
        app.send_task("teamlore.ingest", args=[raw], queue=INGEST)
        worker.wait_for("event refused: message q-raw: text: holds a control character (U+0000)")
        deadline = time.monotonic() + 60
        while _stored(data_dir) != {"q-1", "q-2", "q-3"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _stored(data_dir) == {"q-1", "q-2", "q-3"}
    finally:
        worker.stop()
        broker.stop()


# Found by bench/fuzz_events.py: an author name holding a backslash ("\\o/", "C:\\") was used as a
# re.sub replacement template by extraction: a traceback from `teamlore import`, a 500 from the
# push, a failed worker batch (fixed in extraction/statements.py).
def test_an_author_name_with_a_backslash_is_stored(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(_line("m-backslash", author_name="dana\\")) + "\n")
    done = run("import", str(events), data_dir=tmp_path / "store")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _stored(tmp_path / "store") == {"m-backslash"}
