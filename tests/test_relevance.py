"""Relevance you can trust, on the bundled sample: what a query matches by no word and only weakly
by meaning is no result, so nonsense finds nothing on every surface, while a real question in the
same scope, with the same embedder, finds its answer. The floor itself is the boundary: with the
embedder's margin lowered below any cosine, the same nonsense finds the nearest chat again."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from teamlore.capabilities.facts import SearchMode
from teamlore.connectors.answering import ChannelAnswerer
from teamlore.domain import Scope
from teamlore.web import create_app

from .test_cli import run
from .test_mcp import connected, over_stdio
from .web_server import serving
from .wiki_site import PUBLIC, WORKSPACE, demo_copy

NONSENSE = ("xyzzy plugh", "purple monkey dishwasher", "flibbertigibbet wobble")
REAL = "who owns the billing service"
ENG = Scope(WORKSPACE, ["C01ENG"])


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("relevance")
    lore = demo_copy(folder, embedder)
    reader = lore.access.create("reader", "reader", WORKSPACE, PUBLIC)[1]
    with serving(create_app(lore, flush_pages=False)) as base:
        yield {"lore": lore, "base": base, "reader": reader, "folder": folder}
    lore.close()


def _search(site: dict, q: str, mode: str = "hybrid") -> list[dict]:
    with httpx.Client(
        base_url=site["base"], headers={"Authorization": f"Bearer {site['reader']}"}, timeout=60
    ) as client:
        response = client.get("/api/search", params={"q": q, "mode": mode, "limit": 20, "channel": "C01ENG"})
    response.raise_for_status()
    return response.json()["results"]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
@pytest.mark.parametrize("q", NONSENSE)
def test_nonsense_finds_nothing_and_a_real_question_finds_its_answer(site, q, mode):
    assert _search(site, q, mode) == []
    found = _search(site, REAL, mode)  # control: same scope, same embedder, same mode
    assert found and "billing" in found[0]["text"].lower()


def test_below_the_floor_is_the_boundary(site, embedder, monkeypatch):
    lore = site["lore"]
    assert lore.reader.search(NONSENSE[0], ENG, mode=SearchMode.SEMANTIC, k=5).hits == ()
    # Control: the same query and the same vectors with no margin above ordinary chat.
    monkeypatch.setattr(embedder, "relevance_margin", -2.0)
    assert len(lore.reader.search(NONSENSE[0], ENG, mode=SearchMode.SEMANTIC, k=5).hits) == 5


def test_the_cli_says_nothing_was_found_and_where_it_looked(site):
    nothing = run("search", NONSENSE[0], "-w", WORKSPACE, "-c", "C01ENG", data_dir=site["folder"])
    assert nothing.returncode == 0, nothing.stderr
    assert "Nothing found in #C01ENG." in nothing.stdout
    control = run("search", REAL, "-w", WORKSPACE, "-c", "C01ENG", data_dir=site["folder"])
    assert "Nothing found" not in control.stdout and "billing" in control.stdout


def _question(results: list[dict], opening: str) -> tuple[int, dict]:
    return next((i, hit) for i, hit in enumerate(results) if hit["text"].startswith(opening))


def test_a_question_ranks_below_its_answer_and_is_shown_with_it(site):
    results = _search(site, "who owns billing now")
    at, question = _question(results, "Q: who owns billing now?")
    answer = question["answer"]
    assert answer is not None and "Omar" in answer["text"]
    keys = [hit.get("fact_id") or f"message/{hit['channel']}/{hit['message_id']}" for hit in results]
    assert keys.index(answer["key"]) < at
    # Control: a question nobody answered in its thread is shown as it is, with no answer.
    results = _search(site, "is lunch a team thing here")
    _, unanswered = _question(results, "is lunch a team thing here")
    assert unanswered["answer"] is None


def test_mcp_and_a_bot_find_nothing_for_nonsense_and_answer_a_real_question(site):
    eng = site["lore"].access.create("eng", "reader", WORKSPACE, ["C01ENG"])[1]
    with connected(over_stdio(site["folder"], eng)) as session:
        assert session.data("search_facts", query=NONSENSE[0])["results"] == []
        found = session.data("search_facts", query=REAL)["results"]  # control
        assert found and "billing" in found[0]["text"].lower()
    answerer = ChannelAnswerer(site["lore"])
    nothing = answerer.reply(WORKSPACE, "C01ENG", "U7", NONSENSE[0], author_is_bot=False)
    answered = answerer.reply(WORKSPACE, "C01ENG", "U7", REAL, author_is_bot=False)  # control
    assert "Omar" not in nothing.text and "Omar" in answered.text
