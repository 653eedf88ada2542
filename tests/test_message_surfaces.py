"""A message no fact covers reaches every surface (CLI, HTTP API, web wiki, MCP, the bots' answers)
as what it is, cited by its source message, and never outside its channel's scope: each
exclusion paired with the same request inside the grant."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.answering import ChannelAnswerer
from teamlore.web import create_app
from teamlore.web.auth import TOKEN_COOKIE

from .conftest import WS, Clock, event
from .helpers import KeepsNothing, put
from .test_cli import run
from .test_mcp import connected, over_stdio
from .web_server import serving

PUBLIC = "Our status page is hosted by Statuspage."
PRIVATE = "The Globex renewal is 40 dollars a seat."
ASK_PUBLIC = "where is our status page hosted"
ASK_PRIVATE = "what does the Globex renewal cost per seat"


@dataclass
class Bare:
    data_dir: Path
    lore: Teamlore
    url: str
    c1: str  # a reader token for C1 (public)
    c2: str  # a reader token for C2 (private)


@pytest.fixture(scope="module")
def bare(tmp_path_factory, embedder) -> Iterator[Bare]:
    """A store whose extractor keeps nothing: every message is a bare message."""
    data_dir = tmp_path_factory.mktemp("bare")
    lore = Teamlore(
        Settings(data_dir=data_dir, _env_file=None),
        embedder=embedder,
        extractor=KeepsNothing(),
        clock=Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC)),
    )
    put(
        lore,
        event(PUBLIC, channel="C1", message_id="p1", author_name="rita"),
        event("anyone up for lunch", channel="C1", message_id="p2", ts="2026-01-05T12:00:00Z"),
        event(PRIVATE, channel="C2", message_id="s1", channel_visibility="private", author_name="omar"),
    )
    c1 = lore.access.create("c1", "reader", WS, ["C1"])[1]
    c2 = lore.access.create("c2", "reader", WS, ["C2"])[1]
    with serving(create_app(lore, flush_pages=False)) as url:
        yield Bare(data_dir, lore, url, c1, c2)
    lore.close()


def _api(bare: Bare, token: str, path: str, **params: str) -> httpx.Response:
    with httpx.Client(base_url=bare.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        return client.get(path, params=params)


def test_api_search_returns_the_message_as_a_message_with_its_source(bare):
    body = _api(bare, bare.c1, "/api/search", q=ASK_PUBLIC, channel="C1", limit="1").json()
    hit = body["results"][0]
    assert (hit["kind"], hit["text"], hit["message_id"], hit["author"]) == ("message", PUBLIC, "p1", "rita")
    assert hit["sources"][0]["message_id"] == "p1" and hit["sources"][0]["permalink"]
    assert body["receipt"]["kinds"] == {"message": 1}


def test_api_never_serves_a_private_message_to_another_channels_token(bare):
    assert _api(bare, bare.c1, "/api/search", q=ASK_PRIVATE, channel="C2").status_code == 403
    everything = _api(bare, bare.c1, "/api/search", q=ASK_PRIVATE).json()["results"]
    assert PRIVATE not in json.dumps(everything) and all(h["channel"] == "C1" for h in everything)
    inside = _api(bare, bare.c2, "/api/search", q=ASK_PRIVATE).json()["results"]
    assert [h["text"] for h in inside] == [PRIVATE]  # the control


def test_api_ask_answers_from_a_message_and_cites_it(bare):
    body = _api(bare, bare.c1, "/api/ask", q=ASK_PUBLIC, channel="C1").json()
    assert body["known"] and PUBLIC in body["answer"]
    assert [(c["kind"], c["message_id"]) for c in body["citations"]] == [("message", "p1")]
    other = _api(bare, bare.c1, "/api/ask", q=ASK_PRIVATE).json()
    assert PRIVATE not in json.dumps(other)


def test_the_wiki_search_shows_a_message_and_links_it(bare):
    def page(token: str, q: str) -> str:
        with httpx.Client(base_url=bare.url, timeout=60) as client:
            client.cookies.set(TOKEN_COOKIE, token)
            return client.get("/wiki/search", params={"q": q}).text

    shown = page(bare.c1, ASK_PUBLIC)
    assert PUBLIC in shown and "/wiki/C1/messages/p1" in shown and "no fact covers it" in shown
    assert PRIVATE not in page(bare.c1, ASK_PRIVATE)
    assert PRIVATE in page(bare.c2, ASK_PRIVATE)  # the control


def test_the_cli_search_prints_and_emits_a_message_hit(bare):
    done = run("search", ASK_PUBLIC, "-w", WS, "-c", "C1", "--limit", "1", "--json", data_dir=bare.data_dir)
    assert done.returncode == 0, done.stderr
    hit = json.loads(done.stdout)["results"][0]
    assert (hit["kind"], hit["text"]) == ("message", PUBLIC)
    plain = run("search", ASK_PUBLIC, "-w", WS, "-c", "C1", "--limit", "1", data_dir=bare.data_dir)
    assert PUBLIC in plain.stdout and "message (no fact covers it)" in plain.stdout
    outside = run("search", ASK_PRIVATE, "-w", WS, "-c", "C1", "--json", data_dir=bare.data_dir)
    assert PRIVATE not in outside.stdout
    inside = run("search", ASK_PRIVATE, "-w", WS, "-c", "C2", "--json", data_dir=bare.data_dir)
    assert PRIVATE in inside.stdout  # the control


def test_mcp_search_finds_a_message_inside_the_grant_only(bare):
    with connected(over_stdio(bare.data_dir, bare.c1)) as session:
        hits = session.data("search_facts", query=ASK_PUBLIC)["results"]
        assert (hits[0]["kind"], hits[0]["text"]) == ("message", PUBLIC)
        assert PRIVATE not in json.dumps(session.data("search_facts", query=ASK_PRIVATE))
    with connected(over_stdio(bare.data_dir, bare.c2)) as session:
        assert PRIVATE in json.dumps(session.data("search_facts", query=ASK_PRIVATE))  # the control


def test_a_bot_answers_from_a_message_of_its_own_channel_only(bare):
    answerer = ChannelAnswerer(bare.lore)
    reply = answerer.reply(WS, "C1", "U7", ASK_PUBLIC, author_is_bot=False)
    assert PUBLIC in reply.text and "[rita, 2026-01-05]" in reply.text
    elsewhere = answerer.reply(WS, "C1", "U7", ASK_PRIVATE, author_is_bot=False)
    assert "Globex" not in elsewhere.text
    inside = answerer.reply(WS, "C2", "U7", ASK_PRIVATE, author_is_bot=False)
    assert PRIVATE in inside.text  # the control


OLD = "The staging database is PostgreSQL 14."
NEW = "The staging database is PostgreSQL 16."


@pytest.fixture(scope="module")
def changed(tmp_path_factory, embedder) -> Iterator[Bare]:
    """A store whose extractor keeps facts: C1's staging database changed from 14 to 16; C2
    (private) said the old value too and never changed it."""
    data_dir = tmp_path_factory.mktemp("changed")
    lore = Teamlore(
        Settings(data_dir=data_dir, _env_file=None),
        embedder=embedder,
        clock=Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC)),
    )
    put(lore, event(OLD, channel="C1", message_id="m1", author_name="rita", ts="2026-01-05T10:00:00Z"))
    put(lore, event(NEW, channel="C1", message_id="m2", author_name="omar", ts="2026-02-05T10:00:00Z"))
    put(lore, event(OLD, channel="C2", message_id="s1", channel_visibility="private", ts="2026-01-06T10:00Z"))
    c1 = lore.access.create("c1", "reader", WS, ["C1"])[1]
    c2 = lore.access.create("c2", "reader", WS, ["C2"])[1]
    with serving(create_app(lore, flush_pages=False)) as url:
        yield Bare(data_dir, lore, url, c1, c2)
    lore.close()


def test_a_replaced_value_is_shown_under_the_current_one_on_every_surface(changed):
    query = "staging database PostgreSQL 14"
    hit = _api(changed, changed.c1, "/api/search", q=query, channel="C1").json()["results"][0]
    assert (hit["kind"], hit["text"]) == ("fact", NEW)
    assert [(r["message_id"], r["text"], r["author"]) for r in hit["replaced"]] == [("m1", OLD, "rita")]
    with httpx.Client(base_url=changed.url, timeout=60) as client:
        client.cookies.set(TOKEN_COOKIE, changed.c1)
        page = client.get("/wiki/search", params={"q": query}).text
    assert "Replaces what rita said on 2026-01-05" in page and "/wiki/C1/messages/m1" in page
    plain = run("search", query, "-w", WS, "-c", "C1", "--limit", "3", data_dir=changed.data_dir)
    assert f"replaces what rita said on 2026-01-05T10:00:00Z: {OLD}" in plain.stdout
    # The control: in C2 nothing replaced the old value; it is the current fact there, replacing
    # nothing, and C1's change never reaches it.
    private = _api(changed, changed.c2, "/api/search", q=query, channel="C2").json()["results"][0]
    assert (private["text"], private["replaced"]) == (OLD, [])
