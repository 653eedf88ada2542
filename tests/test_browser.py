"""The web wiki in headless Chromium (Debian's, driven by Playwright): sign in, follow a citation to
its source, look at a page as of a past date, search, and settle a review item as a reviewer.

The demo workspace (the bundled sample plus one open dispute) is imported once for the module.
CI installs chromium (.ci/run); only a machine without it skips, and CI never does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from teamlore.app import Teamlore
from teamlore.domain import Scope
from teamlore.web import create_app

from .web_server import serving
from .wiki_site import CHROMIUM, PUBLIC, WORKSPACE, demo_copy, sign_in

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytest.skip(f"no {CHROMIUM}: apt-get install chromium (CI installs it)", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402 - after the skip


@dataclass
class Wiki:
    lore: Teamlore
    base: str
    reader: str  # the public channels only
    reviewer: str


@pytest.fixture(scope="module")
def wiki(tmp_path_factory, embedder) -> Iterator[Wiki]:
    lore = demo_copy(tmp_path_factory.mktemp("demo"), embedder)
    reader = lore.access.create("browser reader", "reader", WORKSPACE, PUBLIC)[1]
    reviewer = lore.access.create("rita", "reviewer", WORKSPACE, ["C01ENG"])[1]
    with serving(create_app(lore, flush_pages=False)) as base:
        yield Wiki(lore, base, reader, reviewer)
    lore.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    context = browser.new_context()  # a fresh cookie jar per test
    yield context.new_page()
    context.close()


def test_signing_in_shows_only_the_channels_the_token_grants(wiki, page):
    page.goto(f"{wiki.base}/wiki")
    expect(page).to_have_url(re.compile(r"/login\?next=/wiki$"))
    sign_in(page, wiki.base, wiki.reader)
    channels = page.get_by_role("main").get_by_role("heading", level=2)
    expect(channels).to_have_text(["#eng", "#ops", "#product"])  # not the private #leadership
    page.goto(f"{wiki.base}/wiki/G04LEAD")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not allowed")


def test_a_citation_opens_its_source_message(wiki, page):
    sign_in(page, wiki.base, wiki.reader)
    page.goto(f"{wiki.base}/wiki/C02PRODUCT/entity-atlas-2-0")
    # The current statement, not the struck-out value it replaced (which names it too).
    statement = page.get_by_role("listitem").filter(
        has_text="pushed to March 24", has_not=page.locator("s, del")
    )
    statement.get_by_role("link", name="priya, 2026-03-09").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Source message")
    message = page.get_by_role("article")
    expect(message).to_contain_text("priya")
    expect(message).to_contain_text("2026-03-09 09:45 UTC")
    expect(message.locator("blockquote")).to_have_text(
        "Heads up: the Atlas 2.0 launch is pushed to March 24. The multi-region load test found a "
        "latency regression we want fixed first. The docs freeze stays March 10."
    )
    expect(message.get_by_role("link", name=re.compile("acme.slack.com"))).to_have_attribute(
        "href", "https://acme.slack.com/archives/C02PRODUCT/p1773049524897750"
    )


def test_as_of_a_date_before_a_change_shows_the_old_value(wiki, page):
    sign_in(page, wiki.base, wiki.reader)
    page.goto(f"{wiki.base}/wiki/C02PRODUCT/entity-atlas-2-0")
    dates = page.get_by_role("region", name="Dates and schedule")
    # Today: March 24 is current; March 3 and March 17 only under "Previously", struck through.
    expect(dates).to_contain_text("pushed to March 24")
    expect(dates.locator("del, s").filter(has_text="Tuesday March 3")).to_have_count(1)
    expect(dates.locator("del, s").filter(has_text="to March 17")).to_have_count(1)
    page.get_by_label("As of").fill("2026-02-01")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"as_of=2026-02-01"))
    dates = page.get_by_role("region", name="Dates and schedule")
    expect(dates.get_by_role("listitem").first).to_contain_text(
        "Atlas 2.0 launch date is set: Tuesday March 3."
    )
    expect(dates.locator("del, s")).to_have_count(0)
    expect(dates).not_to_contain_text("March 24")
    expect(dates).not_to_contain_text("March 17")


def test_search_finds_cited_facts(wiki, page):
    sign_in(page, wiki.base, wiki.reader)
    page.get_by_role("link", name="Search").click()
    page.get_by_label("What are you looking for?").fill("Which database is the primary datastore?")
    page.get_by_label("Channel").select_option(label="#eng")
    page.get_by_role("main").get_by_role("button", name="Search").click()
    results = page.locator("ol.results > li")
    expect(results.first).to_be_visible()
    expect(page.locator("ol.results")).to_contain_text("CockroachDB")
    assert all("#eng" in text for text in results.locator(".meta").all_inner_texts())


def test_a_reviewer_accepts_a_review_item(wiki, page):
    scope = Scope(WORKSPACE, ["C01ENG"])
    # The demo's dispute (the resolver may open other items on the sample too).
    [item] = [
        i
        for i in wiki.lore.review.items(scope)
        if wiki.lore.reader.get(i.older_fact, scope).fact.statement == "Chen owns the partner portal."
    ]
    sign_in(page, wiki.base, wiki.reader)
    expect(page.get_by_role("link", name="Review queue")).to_have_count(0)  # a reader sees no queue
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, wiki.base, wiki.reviewer)
    page.get_by_role("link", name="Review queue").click()
    entry = page.get_by_role("region", name=re.compile(f"Item {item.id} "))
    expect(entry).to_contain_text("I think Lena owns the partner portal.")
    entry.get_by_role("button", name="Accept the change").click()
    expect(page.get_by_role("status")).to_have_text(f"Review item {item.id} settled.")
    expect(page.get_by_role("region", name=re.compile(f"Item {item.id} "))).to_have_count(0)
    [closed] = [i for i in wiki.lore.review.items(scope, "accepted") if i.id == item.id]
    assert closed.reviewer.startswith("rita (token ")
    older = wiki.lore.reader.get(item.older_fact, scope)
    assert older is None  # superseded: no longer current
