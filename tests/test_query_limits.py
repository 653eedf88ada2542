"""One maximum query length on every surface (issue 16, row 3): the CLI, the API, the wiki and the
bots refuse a query one character over ``MAX_QUERY_CHARS`` the same way, and answer one at the
limit (the control: the same query on the other side of the boundary). MCP: tests/test_mcp.py."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from teamlore.app import Teamlore
from teamlore.capabilities.limits import MAX_QUERY_CHARS
from teamlore.config import Settings
from teamlore.connectors.answering import ChannelAnswerer
from teamlore.web import create_app
from teamlore.web.auth import TOKEN_COOKIE

from .conftest import WS, event
from .helpers import put
from .test_cli import run
from .web_server import serving

AT_LIMIT = ("billing service owner " * 100)[:MAX_QUERY_CHARS]
OVER = AT_LIMIT + "x"
REFUSAL = f"is {MAX_QUERY_CHARS + 1:,} characters; the limit is {MAX_QUERY_CHARS:,}"


@dataclass
class Site:
    lore: Teamlore
    data_dir: Path
    http: httpx.Client


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[Site]:
    data_dir = tmp_path_factory.mktemp("limits")
    lore = Teamlore(Settings(data_dir=data_dir, _env_file=None), embedder=embedder)
    put(lore, event("Dana owns the billing service."), event("The office lease ends in June."))
    token = lore.access.create("reader", "reader", WS, ["C1"])[1]
    with (
        serving(create_app(lore, flush_pages=False)) as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
    ):
        http.cookies.set(TOKEN_COOKIE, token)
        yield Site(lore, data_dir, http)
    lore.close()


@pytest.mark.parametrize("route", ["/api/search", "/api/ask"])
def test_the_api_refuses_a_query_over_the_limit_with_400_and_answers_one_at_it(site, route):
    over = site.http.get(route, params={"q": OVER})
    assert over.status_code == 400, over.text
    assert REFUSAL in over.json()["error"] and over.json()["status"] == 400
    assert site.http.get(route, params={"q": AT_LIMIT}).status_code == 200


def test_the_wiki_search_refuses_a_query_over_the_limit_and_answers_one_at_it(site):
    over = site.http.get("/wiki/search", params={"q": OVER})
    assert over.status_code == 400 and REFUSAL in over.text
    at = site.http.get("/wiki/search", params={"q": AT_LIMIT})
    assert at.status_code == 200 and "billing service" in at.text


@pytest.mark.parametrize("command", ["search", "ask"])
def test_the_cli_refuses_a_query_over_the_limit_with_one_line_and_answers_one_at_it(site, command):
    over = run(command, OVER, "-w", WS, "-c", "C1", data_dir=site.data_dir)
    assert over.returncode == 2 and "Traceback" not in over.stderr
    assert over.stderr.strip().startswith("error: ") and REFUSAL in over.stderr
    assert len(over.stderr.strip().splitlines()) == 1
    at = run(command, AT_LIMIT, "-w", WS, "-c", "C1", "--json", data_dir=site.data_dir)
    assert at.returncode == 0, at.stderr


def test_the_bots_refuse_a_question_over_the_limit_in_their_reply_and_answer_one_at_it(site):
    answerer = ChannelAnswerer(site.lore)
    refused = answerer.reply(WS, "C1", "U1", OVER, author_is_bot=False)
    assert refused is not None and refused.answer is None and REFUSAL in refused.text
    answered = answerer.reply(WS, "C1", "U1", AT_LIMIT, author_is_bot=False)
    assert answered is not None and answered.answer is not None
