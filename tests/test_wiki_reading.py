"""Reading the wiki as staff do, in headless Chromium on the bundled sample: every change explains
itself, two clocks, paged activity, action items that age honestly, as-of dates that mean the
past, plain error pages, readable history, and a timeline and a diff that fit a phone."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from urllib.parse import urljoin

import httpx
import pytest

from teamlore.web import create_app

from .web_server import serving
from .wiki_site import CHROMIUM, PUBLIC, WORKSPACE, demo_copy, sign_in

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytest.skip(f"no {CHROMIUM}: apt-get install chromium (CI installs it)", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402 - after the skip

ATLAS = "/wiki/C02PRODUCT/entity-atlas-2-0"
MARCH_3 = "Atlas 2.0 launch date is set: Tuesday March 3."
MARCH_17 = "Update: the Atlas 2.0 launch has slipped from March 3 to March 17."
BILLING_THREAD = "1767864021.443204"  # "Q: who owns the billing service?" and three replies


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[dict]:
    lore = demo_copy(tmp_path_factory.mktemp("reading"), embedder)
    reader = lore.access.create("staff reader", "reader", WORKSPACE, PUBLIC)[1]
    everywhere = lore.access.create("all-channel reader", "reader", WORKSPACE, None)[1]
    with serving(create_app(lore, flush_pages=False)) as base:
        yield {"lore": lore, "base": base, "reader": reader, "everywhere": everywhere}
    lore.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, site) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    sign_in(tab, site["base"], site["reader"])
    yield tab
    context.close()


def test_a_replaced_value_links_the_statement_and_message_that_replaced_it(site, page):
    page.goto(site["base"] + ATLAS)
    previously = (
        page.get_by_role("region", name="Dates and schedule")
        .get_by_role("listitem")
        .filter(has=page.locator("del, s", has_text=MARCH_3))
    )
    expect(previously).to_contain_text(MARCH_3)
    expect(previously).to_contain_text(f"replaced by: {MARCH_17}")
    expect(previously.get_by_role("link", name="priya, 2026-02-12")).to_have_attribute(
        "href", re.compile(r"^/wiki/C02PRODUCT/messages/")
    )
    previously.get_by_role("link", name="timeline").click()
    # The superseded launch date's timeline names and links the newer statement and its message.
    expect(page.get_by_role("heading", level=1)).to_have_text("Timeline of a fact")
    replaced = page.locator(".replaced-by")
    expect(replaced).to_contain_text("Replaced on 2026-02-12 by")
    expect(replaced.get_by_role("link", name="priya, 2026-02-12")).to_have_attribute(
        "href", re.compile(r"/wiki/C02PRODUCT/messages/")
    )
    step = page.get_by_role("listitem").filter(has_text="Replaced by:")
    expect(step).to_contain_text("Said 2026-02-12 09:45 UTC")
    expect(step).to_contain_text("Teamlore learned it")
    replaced.get_by_role("link", name=MARCH_17).click()
    # ... and the newer one says what it replaced: the link works both ways.
    expect(page.locator(".statement")).to_contain_text(MARCH_17)
    expect(page.get_by_role("main").locator(".notice", has_text="It replaced")).to_contain_text(MARCH_3)


def test_a_source_message_lists_the_facts_it_produced_and_its_thread(site, page):
    page.goto(f"{site['base']}/wiki/C02PRODUCT/messages/1773049524.897750")
    produced = page.get_by_role("region", name="Facts from this message")
    expect(
        produced.get_by_role("link", name="Heads up: the Atlas 2.0 launch is pushed to March 24.")
    ).to_be_visible()
    # "The docs freeze stays March 10." repeats the freeze's date: it is evidence for the standing
    # fact, which the launch moving no longer retires (a name both mention, another thing said).
    expect(produced).to_contain_text("Atlas docs freeze is March 10.")
    expect(page.get_by_role("region", name="The thread")).to_have_count(0)  # not in a thread
    page.goto(f"{site['base']}/wiki/C01ENG/messages/{BILLING_THREAD}")
    thread = page.get_by_role("region", name="The thread")
    expect(thread.get_by_role("listitem")).to_have_count(4)  # the question and three replies
    expect(thread.locator("[aria-current]")).to_contain_text("(this message)")
    thread.get_by_role("listitem").nth(1).get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Source message")
    expect(
        page.get_by_role("region", name="Facts from this message").get_by_role("listitem")
    ).not_to_have_count(0)


def test_activity_shows_when_it_was_said_apart_from_when_teamlore_learned_it_a_page_at_a_time(site, page):
    page.goto(site["base"] + "/wiki/activity")
    entries = page.locator("ol.activity > li")
    expect(entries).to_have_count(50)
    newest = entries.first
    # The newest change is the dispute's "Lena" statement: said in May, learned at import (today).
    expect(newest).to_contain_text("Said 2026-05-05 10:00 UTC")
    expect(newest).to_contain_text(re.compile(r"Teamlore learned it 20\d\d-\d\d-\d\d"))
    first_page = entries.all_inner_texts()
    pager = page.get_by_role("navigation", name="Activity pages")
    pager.get_by_role("link", name="Older").click()
    expect(page).to_have_url(re.compile(r"before=\d+"))
    second_page = page.locator("ol.activity > li").all_inner_texts()
    assert second_page and not set(second_page) & set(first_page)
    pager.get_by_role("link", name="Newer").click()
    assert page.locator("ol.activity > li").all_inner_texts() == first_page


def test_the_activity_api_pages_by_cursor_through_every_event_once(site):
    lore, seen, url = site["lore"], [], f"{site['base']}/api/activity?limit=40"
    headers = {"Authorization": f"Bearer {site['reader']}"}
    with httpx.Client(headers=headers) as client:
        while url:
            answer = client.get(url)
            assert answer.status_code == 200, answer.text
            seen += [e["seq"] for e in answer.json()]
            url = answer.links.get("next", {}).get("url")
            url = urljoin(site["base"], url) if url else None
    expected = lore.recent_activity(
        lore.access.scope(lore.access.authenticate(site["reader"]), None, None), limit=500
    )
    assert len(seen) > 100  # the old page stopped at 100 with no notice
    assert seen == [a.event.seq for a in expected]  # newest first, none twice, none missed


def test_overdue_action_items_are_listed_apart_and_stay_open(site, page):
    page.goto(site["base"] + "/wiki/C01ENG/action-items")
    section = page.locator("section.wiki-section", has=page.get_by_text("add a canary stage"))
    overdue = section.locator("p", has_text="Overdue (past the deadline, still open):")
    expect(overdue).to_be_visible()
    canary = section.get_by_role("listitem").filter(has_text="canary stage")
    expect(canary).to_contain_text("past due 2026-04-15")
    # Below the "Overdue" heading, not among the open items above it; and still not struck out.
    assert canary.first.evaluate(
        "(li, p) => !!(p.compareDocumentPosition(li) & Node.DOCUMENT_POSITION_FOLLOWING)",
        overdue.element_handle(),
    )
    expect(canary.locator("del, s")).to_have_count(0)
    # The later statement that the canary stage is live is linked beside it (it does not close it).
    expect(canary).to_contain_text("update: canary stage is live in the deploy pipeline")
    expect(canary.get_by_role("link", name="ben, 2026-04-14")).to_have_attribute(
        "href", re.compile("/messages/")
    )
    # Control: an item with no later status about it links none ("dana will review after standup"
    # shares only "after" and "standup" with a later status about a deploy after standup).
    dana = page.get_by_role("listitem").filter(has_text="dana will review after standup")
    expect(dana).not_to_contain_text("update:")


def test_as_of_search_shows_statuses_as_they_were_then_with_iso_dates(site, page):
    page.goto(site["base"] + "/wiki/search")
    date = page.get_by_label("As of")
    expect(date).to_have_attribute("placeholder", "YYYY-MM-DD")
    expect(date).to_have_attribute("type", "text")
    page.get_by_label("What are you looking for?").fill("launch date is set Tuesday March 3")
    page.get_by_label("Channel").select_option(label="#product")
    date.fill("2026-02-01")
    page.get_by_role("main").get_by_role("button", name="Search").click()
    hit = page.locator("ol.results > li").filter(has_text=MARCH_3)
    expect(hit).to_have_count(1)
    expect(hit.locator(".badge")).to_have_count(0)  # active on 1 February, whatever it is now
    # Control: its timeline says what it is today.
    hit.get_by_role("link", name=MARCH_3).click()
    expect(page.locator(".statement .badge")).to_have_text("superseded")


def _search(page: Page, q: str, channel: str | None = None) -> None:
    """Fill the search form as a person would and send it."""
    page.get_by_label("What are you looking for?").fill(q)
    if channel is not None:
        page.get_by_label("Channel").select_option(label=channel)
    page.get_by_role("main").get_by_role("button", name="Search").click()


def test_nonsense_says_nothing_found_and_a_real_question_finds_results(site, page):
    page.goto(site["base"] + "/wiki/search")
    _search(page, "xyzzy plugh")
    expect(page.get_by_role("status")).to_contain_text("Nothing found in #eng, #ops, #product")
    expect(page.locator("ol.results > li")).to_have_count(0)
    _search(page, "who owns the billing service")  # control
    expect(page.locator("ol.results > li").first).to_contain_text("billing")
    expect(page.locator(".nothing-found")).to_have_count(0)


def test_nothing_in_the_channel_asked_points_to_the_channel_that_has_it(site, page):
    page.goto(site["base"] + "/wiki/search")
    _search(page, "who has the pager", "#product")
    expect(page.get_by_role("status")).to_contain_text("Nothing found in #product")
    elsewhere = page.locator(".elsewhere").get_by_role("link").filter(has_text="#eng")
    expect(elsewhere).to_have_count(1)
    elsewhere.click()  # control: the channel it points to has the results
    expect(page.locator("ol.results > li").first).to_contain_text("pager")
    expect(page.locator(".nothing-found")).to_have_count(0)


def test_a_question_comes_after_its_answer_and_shows_it(site, page):
    page.goto(site["base"] + "/wiki/search")
    _search(page, "who owns billing now", "#eng")
    items = page.locator("ol.results > li")
    texts = items.all_inner_texts()
    asked = next(i for i, text in enumerate(texts) if text.startswith("Q: who owns billing now?"))
    owner = "Omar is the owner of the billing service"
    expect(items.nth(asked).locator(".answer")).to_contain_text(owner)
    answered_at = next(i for i, text in enumerate(texts) if owner in text)
    assert answered_at < asked
    # Control: a result that is no question carries no answer.
    expect(items.nth(answered_at).locator(".answer")).to_have_count(0)


def test_a_hedged_claim_is_contested_and_comes_after_the_settled_fact(site, page):
    page.goto(site["base"] + "/wiki/C01ENG/overview")
    main = page.get_by_role("main")
    text = main.inner_text()
    assert text.index("Chen owns the partner portal") < text.index("Lena owns the partner portal")
    hedged = main.get_by_role("listitem").filter(has_text="Lena owns the partner portal")
    expect(hedged.first).to_contain_text("contested")
    settled = main.get_by_role("listitem").filter(has_text="Chen owns the partner portal")  # control
    expect(settled.first).not_to_contain_text("contested")


def test_a_page_as_of_a_future_date_is_not_called_the_past(site, page):
    page.goto(f"{site['base']}{ATLAS}?as_of=2099-01-01")
    expect(page.get_by_role("main")).not_to_contain_text("You are looking at the past")
    expect(page.get_by_role("status")).to_contain_text("2099-01-01 is still to come")
    page.goto(f"{site['base']}{ATLAS}?as_of=2026-02-01")  # control: a past date is the past
    expect(page.get_by_role("status")).to_contain_text("You are looking at the past: 2026-02-01")


@pytest.mark.parametrize(
    ("path", "status", "heading", "says"),
    [
        # A token for every channel learns that a channel does not exist (a narrower token gets
        # 403 for any channel outside its grant, existing or not: it learns nothing).
        ("/wiki/NOPECHAN", 404, "Not found", "There is no channel NOPECHAN"),
        ("/wiki/no/such/route/here", 404, "Not found", "There is no page at this address."),
        ("/wiki/G04LEAD", 403, "Not allowed", "may not read channel G04LEAD"),
        (f"{ATLAS}?as_of=next+tuesday", 400, "That did not work", "Write the as-of date as YYYY-MM-DD"),
        (f"{ATLAS}?version=two", 422, "That address is not valid", "cannot read: version"),
    ],
)
def test_error_pages_keep_the_navigation_and_speak_plainly(site, page, path, status, heading, says):
    if path == "/wiki/NOPECHAN":
        page.get_by_role("button", name="Sign out").click()
        sign_in(page, site["base"], site["everywhere"])
    answer = page.goto(site["base"] + path)
    assert answer is not None and answer.status == status
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    expect(page.get_by_role("alert")).to_contain_text(says)
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Search")).to_be_visible()
    assert "ISO 8601" not in page.content() and "Input should be" not in page.content()
    assert page.locator("html").get_attribute("lang") == "en"
    expect(page).to_have_title(re.compile(r"\S.* · Teamlore"))
    expect(page.get_by_role("main")).to_have_count(1)


def test_an_unknown_channel_control_a_known_one_lists_its_pages(site, page):
    answer = page.goto(site["base"] + "/wiki/C02PRODUCT")
    assert answer is not None and answer.status == 200
    expect(page.get_by_role("link", name="Atlas 2.0")).to_be_visible()


def test_history_gives_each_version_a_reason_and_a_word_diff_without_raw_links(site, page):
    page.goto(site["base"] + "/wiki/C01ENG/overview/history")
    newest = page.locator("ol.page-versions > li").first
    expect(newest).to_contain_text("Version 2")
    reasons = newest.locator("ul.reasons")
    expect(reasons).to_contain_text("Stated: I think Lena owns the partner portal.")
    expect(reasons.get_by_role("link", name="ben’s message of 2026-05-05").first).to_be_visible()
    diff = page.get_by_role("group", name="Differences")
    expect(diff.locator("ins").first).to_be_visible()
    expect(diff).to_contain_text("I think Lena owns the partner portal.")
    assert "slack.com" not in diff.inner_text() and "](" not in diff.inner_text()
    # Every version says why it was written.
    for entry in page.locator("ol.page-versions > li").all():
        expect(entry.locator("summary, .meta").first).to_be_visible()


@pytest.mark.parametrize("path", ["timeline", "diff"])
def test_the_timeline_and_the_diff_fit_a_phone_screen(site, browser, path, tmp_path):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    tab = context.new_page()
    sign_in(tab, site["base"], site["reader"])
    if path == "timeline":
        tab.goto(site["base"] + ATLAS)
        tab.locator("li", has=tab.locator("del, s")).first.get_by_role("link", name="timeline").click()
        expect(tab.get_by_role("heading", level=1)).to_have_text("Timeline of a fact")
    else:
        tab.goto(site["base"] + "/wiki/C01ENG/overview/history")
        expect(tab.get_by_role("group", name="Differences")).to_be_visible()
    shot = tmp_path / f"{path}-390.png"
    tab.screenshot(path=str(shot), full_page=True)
    width, client = tab.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert client == 390 and width <= client, f"{path}: {width} px wide on a {client} px screen ({shot})"
    context.close()
