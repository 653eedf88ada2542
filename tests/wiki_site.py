"""The demo wiki for browser tests and screenshots: the bundled sample imported into a fresh
store, plus one open review item, served by a real uvicorn."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from teamlore.app import Teamlore
from teamlore.capabilities.importing import import_items, open_source
from teamlore.config import Settings
from teamlore.domain import Scope, parse_event
from teamlore.embedding import Embedder
from teamlore.workers.pipeline import ingest

WORKSPACE = "T0ACME"
PUBLIC = ["C01ENG", "C02PRODUCT", "C03OPS"]
# A possible contradiction a reviewer settles in the browser test (after the sample's last day).
DISPUTE = (
    ("1777900000.000001", "2026-05-04T09:00:00Z", "chen", "Chen owns the partner portal."),
    ("1777990000.000002", "2026-05-05T10:00:00Z", "ben", "I think Lena owns the partner portal."),
)


def build_demo(folder: Path, embedder: Embedder | None = None) -> Teamlore:
    lore = Teamlore(Settings(data_dir=folder, _env_file=None), embedder=embedder)
    sample = resources.files("teamlore.samples").joinpath("acme.jsonl")
    with resources.as_file(sample) as path:
        import_items(open_source(path, lore.settings.max_message_chars).items, lore.pipeline)
    lore.wiki.flush(everything=True)  # version 1 of every page; the dispute makes #eng's overview v2
    events = [
        parse_event(
            {
                "kind": "message.created",
                "platform": "slack",
                "workspace": WORKSPACE,
                "channel": "C01ENG",
                "channel_name": "eng",
                "message_id": message_id,
                "author_id": f"U_{author.upper()}",
                "author_name": author,
                "ts": ts,
                "text": text,
                "permalink": f"https://acme.slack.com/archives/C01ENG/p{message_id.replace('.', '')}",
            },
            lore.settings.max_message_chars,
        )
        for message_id, ts, author, text in DISPUTE
    ]
    for one in events:
        ingest([one], lore.pipeline)
    lore.wiki.flush(everything=True)
    if not lore.review.items(Scope(WORKSPACE, ["C01ENG"])):
        raise RuntimeError("the demo dispute opened no review item; the resolver changed?")
    return lore


_BUILT: list[Path] = []


def demo_copy(folder: Path, embedder: Embedder | None = None) -> Teamlore:
    """A fresh copy of the demo store in ``folder``: built once per test run (30 s), copied for
    each module that needs one (a module may change its copy, e.g. settle a review item)."""
    if not _BUILT:
        built = Path(tempfile.mkdtemp(prefix="teamlore-demo-"))
        atexit.register(shutil.rmtree, built, True)
        build_demo(built, embedder).close()
        _BUILT.append(built)
    shutil.copytree(_BUILT[0], folder, dirs_exist_ok=True)
    return Teamlore(Settings(data_dir=folder, _env_file=None), embedder=embedder)


CHROMIUM = Path("/usr/bin/chromium")
AXE = Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"


def sign_in(page, base: str, token: str) -> None:
    """Sign in through the login form, as a person would (Playwright page)."""
    page.goto(f"{base}/login")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/wiki")
