"""Every kind of wiki page, checked by axe-core in headless Chromium at a desktop and a phone
width: any WCAG 2 A or AA violation fails the test, with axe's own description of it.

axe-core comes from the npm registry through the repository's own files (tests/axe/package.json
and its lock file; .ci/run runs ``npm ci`` there). It is injected as an init script, which the
page's Content-Security-Policy does not govern, so the wiki itself never needs inline script.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from teamlore.capabilities.facts import SearchMode
from teamlore.domain import ReadView, Scope
from teamlore.web import create_app

from .web_server import serving
from .wiki_site import AXE, CHROMIUM, PUBLIC, WORKSPACE, demo_copy, sign_in

if not (CHROMIUM.exists() and AXE.exists()) and not os.environ.get("CI"):
    pytest.skip(f"needs {CHROMIUM} and {AXE} (cd tests/axe && npm ci; CI does both)", allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402 - after the skip

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
WIDTHS = {"desktop": 1280, "phone": 390}
PAGES = {
    "login": "/login",
    "channels": "/wiki",
    "channel": "/wiki/C02PRODUCT",
    "page": "/wiki/C02PRODUCT/entity-atlas-2-0",
    "page as of a date": "/wiki/C02PRODUCT/entity-atlas-2-0?as_of=2026-02-01",
    "older version": "/wiki/C01ENG/overview?version=1",
    "history and diff": "/wiki/C01ENG/overview/history",
    "fact timeline": "{timeline}",
    "source message in a thread": "/wiki/C01ENG/messages/1767864021.443204",
    "search results": "/wiki/search?q=when+does+Atlas+2.0+launch&as_of=2026-02-20",
    "search form": "/wiki/search",
    "activity": "/wiki/activity",
    "review queue": "/wiki/review",
    "not found": "/wiki/NOPECHAN",
    "not allowed": "/wiki/G04LEAD",
    "bad date": "/wiki/C02PRODUCT/entity-atlas-2-0?as_of=soon",
    "unknown route": "/wiki/no/such/route/here",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[dict]:
    lore = demo_copy(tmp_path_factory.mktemp("a11y"), embedder)
    # A reviewer of the public channels: sees the review queue (with the demo's open item).
    token = lore.access.create("a11y reviewer", "reviewer", WORKSPACE, PUBLIC)[1]
    replaced = lore.reader.search(
        "launch date is set Tuesday March 3",
        Scope(WORKSPACE, ["C02PRODUCT"]),
        ReadView(include_history=True),
        SearchMode.KEYWORD,
        k=1,
    )
    timeline = f"/wiki/C02PRODUCT/facts/{replaced.hits[0].fact.fact_id}"
    with serving(create_app(lore, flush_pages=False)) as base:
        yield {"base": base, "token": token, "timeline": timeline}
    lore.close()


@pytest.fixture(scope="module")
def contexts(site) -> Iterator[dict]:
    """One signed-in browser context per width, axe loaded into every page it opens."""
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        opened = {}
        for name, width in WIDTHS.items():
            context = chromium.new_context(viewport={"width": width, "height": 900})
            context.add_init_script(path=str(AXE))
            sign_in(context.new_page(), site["base"], site["token"])
            opened[name] = context
        yield opened
        chromium.close()


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("kind", list(PAGES))
def test_every_page_type_has_no_wcag_aa_violation(site, contexts, kind, width):
    context = contexts[width]
    if kind == "login":  # seen signed out: a fresh context of the same width
        context = context.browser.new_context(viewport={"width": WIDTHS[width], "height": 900})
        context.add_init_script(path=str(AXE))
    tab = context.new_page()
    path = PAGES[kind].format(timeline=site["timeline"])
    answer = tab.goto(site["base"] + path)
    assert answer is not None and answer.status < 500
    found = violations(tab)
    tab.close()
    if kind == "login":
        context.close()
    assert found == [], f"{kind} at {WIDTHS[width]} px: " + "; ".join(found)


def test_control_axe_does_report_a_violation_put_into_a_page(site, contexts):
    tab = contexts["phone"].new_page()
    tab.goto(site["base"] + "/wiki")
    assert violations(tab) == []
    tab.evaluate("document.querySelector('main').insertAdjacentHTML('beforeend', '<img src=\"x.png\">')")
    assert any(v.startswith("image-alt ") for v in violations(tab))
    tab.close()


def violations(tab) -> list[str]:
    """axe-core's WCAG 2 A/AA violations on the page as it stands, one line each."""
    assert tab.evaluate("typeof axe === 'object' && typeof axe.run === 'function'"), "axe-core not loaded"
    return tab.evaluate(
        "async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}})).violations"
        ".map(v => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map(n => n.target.join(' ')).join(', ')}`)",
        WCAG_AA,
    )
