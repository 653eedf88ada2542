"""Erasure leaves nothing: after `teamlore erase`, a person's distinctive words (their messages,
a thread question others answered, an edited and a deleted message, facts, pages) are found on
no surface (CLI, HTTP API, wiki HTML, MCP tools) and in no file of the data folder (the SQLite
file, its -wal and -shm), and neither is any plain hash of their text. Controls: the same scans
find them before the erasure, and find another person's words (and hashes) after it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from typer.testing import CliRunner

from teamlore.app import Teamlore
from teamlore.cli import app as cli_app
from teamlore.config import Settings
from teamlore.domain import content_hash, normalize_statement
from teamlore.mcp_server.tools import Caller, ReadTools
from teamlore.web import create_app

from .conftest import WS
from .web_server import serving

ZED, ANN = ("U9", "zed"), ("U2", "ann")
THEIRS = ["quokkaflux", "periwinkl", "snorkelwhal", "brambleduck", "yarrowmint", "glimmerbox"]
CONTROL = "tiddlywomp"
# Keyword search ORs the words: one query finds every one of their statements, and the control.
EVERY_WORD = "Quokkaflux Periwinkle Snorkelwhale Brambleduck Yarrowmint Glimmerbox Tiddlywomp"
QUERIES = [EVERY_WORD, "is the offsite still on", "who owns the billing service"]


def _line(n: int, who: tuple[str, str], text: str, thread: int | None = None, kind: str = "created") -> str:
    return json.dumps(
        {
            "kind": f"message.{kind}",
            "platform": "slack",
            "workspace": WS,
            "channel": "C1",
            "channel_name": "eng",
            "channel_visibility": "public",
            "message_id": f"m{n}",
            "thread_id": None if thread is None else f"m{thread}",
            "author_id": who[0],
            "author_name": who[1],
            "ts": f"2026-01-05T{10 + n:02d}:00:00Z",
            "text": text,
            "permalink": f"https://example.slack.com/archives/C1/pm{n}",
        }
    )


EVENTS = [
    _line(1, ZED, "The Quokkaflux gateway codename is Periwinkle."),
    _line(2, ZED, "Is the Snorkelwhale offsite still on?", thread=2),
    _line(3, ANN, "yes, still on", thread=2),
    _line(4, ZED, "Who owns the Brambleduck billing service?", thread=4),
    _line(5, ANN, "dana", thread=4),
    _line(6, ANN, "The Tiddlywomp cluster moves to Frankfurt in March."),
    _line(7, ZED, "The Yarrowmint budget is forty thousand euros."),
    _line(7, ZED, "", kind="deleted"),
    _line(8, ZED, "The Glimmerbox release is on Tuesday."),
    _line(8, ZED, "The Glimmerbox release moved to Thursday.", kind="edited"),
]
THEIR_MESSAGES = {"m1", "m2", "m4", "m7", "m8"}
THEIR_TEXTS = [
    "The Quokkaflux gateway codename is Periwinkle.",
    "Is the Snorkelwhale offsite still on?",
    "Who owns the Brambleduck billing service?",
    "The Yarrowmint budget is forty thousand euros.",
    "The Glimmerbox release is on Tuesday.",
    "The Glimmerbox release moved to Thursday.",
]


def _cli(*args: str) -> str:
    done = CliRunner().invoke(cli_app, list(args))
    assert done.exit_code == 0, done.output
    return done.output


def _cli_search(data: Path) -> str:
    return _cli(
        "search", EVERY_WORD, "--mode", "keyword", "--history", "--limit", "50",
        "-w", WS, "-c", "C1", "--json", "--data-dir", str(data),
    )  # fmt: skip


def _hash_forms(text: str, embedding_name: str) -> set[str]:
    """Every plain hash of a text the code writes or wrote: the message hash and its 16-character
    prefix (ledger keys), the statement hash, the full SHA-256s, and the embedding cache key."""
    raw = hashlib.sha256(text.encode()).hexdigest()
    normal = hashlib.sha256(normalize_statement(text).encode()).hexdigest()
    cache_key = hashlib.sha256(f"{embedding_name}\x1fpassage\x1f{text}".encode()).hexdigest()[:40]
    return {raw, raw[:32], raw[:16], normal, content_hash(text), cache_key}


def _stored_hashes(db_path: Path) -> tuple[set[str], set[str], dict[str, str]]:
    """Read from the file before the erasure: the hashes and cache keys stored for their text,
    the ids of the facts that hold their words, and every statement (fact id -> text)."""
    db = sqlite3.connect(db_path)
    words = " OR ".join(f"lower(statement) LIKE '%{w}%'" for w in THEIRS)
    hashes = {r[0] for r in db.execute("SELECT content_hash FROM messages WHERE author_id = 'U9'")}
    hashes |= {
        r[0] for r in db.execute("SELECT embedding_key FROM message_versions WHERE author_id = 'U9'") if r[0]
    }
    facts = db.execute(
        f"SELECT fact_id, statement, content_hash, embedding_key FROM fact_versions WHERE {words}"
    )
    held: dict[str, str] = {}
    for fact_id, statement, fact_hash, key in facts:
        held[fact_id] = statement
        hashes |= {fact_hash, *([key] if key else [])}
    for (key,) in db.execute("SELECT key FROM event_ledger"):
        if key.split("\x1f")[3] in THEIR_MESSAGES and "#" in key:
            hashes.add(key.rsplit("#", 1)[-1])  # the ledger key's hash of the event's text
    statements = dict(db.execute("SELECT fact_id, statement FROM fact_versions").fetchall())
    db.close()
    return hashes, set(held), statements


def _files(data_dir: Path) -> bytes:
    return b"\n".join(p.read_bytes().lower() for p in sorted(data_dir.rglob("*")) if p.is_file())


def _leaks(blob: str | bytes, hashes: set[str], query: str = "") -> list[str]:
    """Their words and hashes in ``blob``, leaving out the echo of the query asked."""
    text = blob.lower() if isinstance(blob, str) else blob.decode("latin-1")
    for echo in (query, query.replace(" ", "+"), query.replace(" ", "%20")) if query else ():
        text = text.replace(echo.lower(), "")
    return [w for w in THEIRS if w in text] + [h for h in hashes if h.lower() in text]


@pytest.fixture
def cli_embedder(embedder, monkeypatch):
    """The CLI in this process, with the session's (real, already loaded) model."""
    monkeypatch.setattr("teamlore.app.build_embedder", lambda settings: embedder)
    return embedder


def test_an_erased_person_leaves_no_word_and_no_hash_on_any_surface_or_file(tmp_path, cli_embedder):
    data = tmp_path / "data"
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(EVENTS) + "\n")
    _cli("import", str(events), "--data-dir", str(data))
    db_path = data / "teamlore.sqlite3"
    hashes, their_facts, statements = _stored_hashes(db_path)
    for text in THEIR_TEXTS + [statements[f] for f in their_facts]:
        hashes |= _hash_forms(text, cli_embedder.name)
    control_statement = next(s for s in statements.values() if CONTROL in s.lower())
    control_hash = content_hash(control_statement)
    # Controls before: the answers were built from their questions, the file holds their words,
    # and the search asked again below finds every one of their statements.
    assert any("(re:" in s and "brambleduck" in s.lower() for s in statements.values())
    assert set(THEIRS) <= set(_leaks(_cli_search(data), set())) and hashes & set(_leaks(_files(data), hashes))

    report = json.loads(
        _cli("erase", "-w", WS, "--author", "U9", "--by", "dpo", "--json", "--data-dir", str(data))
    )
    answers = {f for f in their_facts if "(re:" in statements[f]}
    assert report["answers_reread"] == 2 and answers and answers <= set(report["facts_erased"])

    found = _cli_search(data)
    assert not _leaks(found, hashes, EVERY_WORD) and CONTROL in found.lower()
    answer = _cli("ask", EVERY_WORD, "-w", WS, "-c", "C1", "--json", "--data-dir", str(data))
    assert not _leaks(answer, hashes, EVERY_WORD)

    lore = Teamlore(Settings(data_dir=data, _env_file=None), embedder=cli_embedder)
    try:
        lore.wiki.flush(everything=True)
        token = lore.access.create("reader", "reader", WS, ["C1"])[1]
        mcp = ReadTools(lore, Caller(lore.access, lambda: token))
        with serving(create_app(lore, flush_pages=False)) as url:
            shown = _surfaces(url, token, mcp, their_facts | set(statements))
        for (path, query), body in shown.items():
            assert not _leaks(body, hashes, query), path
        assert any(CONTROL in body.lower() for body in shown.values())  # control: still served
        on_disk = _files(data)
    finally:
        lore.close()
    assert not _leaks(on_disk, hashes)
    assert CONTROL.encode() in on_disk and control_hash.encode() in on_disk  # control


def _surfaces(url: str, token: str, mcp: ReadTools, fact_ids: set[str]) -> dict[tuple[str, str], str]:
    """Every surface's answer to every query, and every page, fact history and source message."""
    import httpx

    shown: dict[tuple[str, str], str] = {}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:

        def get(path: str, **params: Any) -> None:
            answer = http.get(path, params=params)
            assert answer.status_code in (200, 404), (path, answer.text)
            shown[(f"{path} {params}", str(params.get("q", "")))] = answer.text

        for query in QUERIES:
            for history in ("false", "true"):
                get("/api/search", q=query, history=history)
            get("/api/ask", q=query)
            get("/wiki/search", q=query)
            shown[("mcp search", query)] = json.dumps(mcp.search_facts(query, include_history=True))
            shown[("mcp ask", query)] = json.dumps(mcp.ask(query))
        get("/api/pages")
        get("/api/activity", since="2026-01-01")
        get("/wiki/C1")
        slugs = {p["slug"] for p in http.get("/api/pages").json()}
        for slug in slugs:
            get(f"/api/pages/{slug}")
            get(f"/api/pages/{slug}/versions")
            get(f"/wiki/C1/{slug}")
            get(f"/wiki/C1/{slug}/history")
        for fact_id in sorted(fact_ids):
            get(f"/api/facts/{fact_id}/history")
            get(f"/wiki/C1/facts/{fact_id}")
            try:
                shown[(f"mcp history {fact_id}", "")] = json.dumps(mcp.get_fact_history(fact_id))
            except ToolError as refused:
                shown[(f"mcp history {fact_id}", "")] = str(refused)
        for n in range(1, 9):
            get(f"/api/messages/m{n}")
            get(f"/wiki/C1/messages/m{n}")
    return shown
