"""Screenshots of the web wiki's main pages, from the demo workspace, in headless Chromium.

    python bench/screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]

Builds the demo store (the bundled sample plus one open review item) in a temporary folder,
serves it with uvicorn on a free port, signs in with a fresh admin token and saves one PNG per
page. Uses Debian's chromium through Playwright (no browser download).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from teamlore.capabilities.facts import SearchMode  # noqa: E402
from teamlore.domain import ReadView, Scope  # noqa: E402
from teamlore.web import create_app  # noqa: E402
from tests.web_server import serving  # noqa: E402
from tests.wiki_site import CHROMIUM, WORKSPACE, build_demo, sign_in  # noqa: E402

SHOTS = (
    ("login", "/login"),
    ("channels", "/wiki"),
    ("channel", "/wiki/C02PRODUCT"),
    ("page", "/wiki/C02PRODUCT/entity-atlas-2-0"),
    ("page-as-of", "/wiki/C02PRODUCT/entity-atlas-2-0?as_of=2026-02-01"),
    ("history", "/wiki/C01ENG/overview/history"),
    ("message", "/wiki/C02PRODUCT/messages/1773049524.897750"),
    ("message-thread", "/wiki/C01ENG/messages/1767864021.443204"),
    ("action-items", "/wiki/C01ENG/action-items"),
    ("search", "/wiki/search?q=when+does+Atlas+2.0+launch"),
    ("activity", "/wiki/activity"),
    ("review", "/wiki/review"),
)

PHONE = ("fact-timeline", "history")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--chromium", type=Path, default=CHROMIUM)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        lore = build_demo(Path(folder))
        _, token = lore.access.create("screenshots", "admin", WORKSPACE, None)
        # A fact with a past: the launch date that was replaced (its timeline has two versions).
        replaced = lore.reader.search(
            "launch date is set Tuesday March 3",
            Scope(WORKSPACE, ["C02PRODUCT"]),
            ReadView(include_history=True),
            SearchMode.KEYWORD,
            k=1,
        )
        shots = list(SHOTS)
        if replaced.hits:
            shots.append(("fact-timeline", f"/wiki/C02PRODUCT/facts/{replaced.hits[0].fact.fact_id}"))
        with serving(create_app(lore, flush_pages=False)) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(args.chromium))
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            for name, path in shots:
                if name == "login":
                    page.goto(base + path)
                    page.screenshot(path=str(args.out / f"{name}.png"), full_page=True)
                    sign_in(page, base, token)
                    continue
                page.goto(base + path)
                # Long lists (activity) are shown by their first screenful.
                page.screenshot(path=str(args.out / f"{name}.png"), full_page=name != "activity")
                print(f"{name}: {args.out / (name + '.png')}")
            # The same reader on a phone: the timeline and the diff reflow at 390 px.
            page.set_viewport_size({"width": 390, "height": 844})
            for name, path in shots:
                if name in PHONE:
                    page.goto(base + path)
                    page.screenshot(path=str(args.out / f"{name}-phone.png"), full_page=True)
                    print(f"{name}-phone: {args.out / (name + '-phone.png')}")
            browser.close()
        lore.close()


if __name__ == "__main__":
    main()
