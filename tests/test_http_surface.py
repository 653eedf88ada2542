"""The HTTP surface through a real server, as an attacker or a careless client would use it: ids
with control characters, token listing beyond a grant, far-future times, unknown routes, and the
headers every response carries."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.web import create_app
from teamlore.web.auth import CSRF_COOKIE, TOKEN_COOKIE

from .conftest import WS, Clock
from .test_api import ROUTES, Site, _seed, fresh_item
from .web_server import serving


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[Site]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("surface"), push_secret="s3cret", _env_file=None)
    lore = Teamlore(settings, embedder=embedder, clock=Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC)))
    ids = _seed(lore)
    with serving(create_app(lore, flush_pages=False)) as url:
        yield Site(lore, url, ids)
    lore.close()


def _send(site: Site, method: str, path: str, token: str) -> httpx.Response:
    if path.startswith("/wiki"):
        with httpx.Client(base_url=site.url, timeout=30) as client:
            client.cookies.set(TOKEN_COOKIE, token)
            client.cookies.set(CSRF_COOKIE, "csrf-test")
            return client.request(method, path, data={"csrf": "csrf-test"} if method == "POST" else None)
    with site.client(token) as client:
        return client.request(method, path)


def _paths(site: Site, key: tuple[str, str], bad: str) -> Iterator[tuple[str, str, str]]:
    """(which id is bad, the bad path, the same path with good ids) for each id the route names."""
    _, template = ROUTES[key]
    if "{channel}" not in key[1]:
        template += ("&" if "?" in template else "?") + "channel={channel}"
    good = {
        "channel": "C1",
        "fact": site.ids["fact_C1"],
        "message": site.ids["message_C1"],
        "item": fresh_item(site.lore, "C1") if "{item}" in template else "",
    }
    for name in [n for n in good if "{" + n + "}" in template] + ["slug"] * ("overview" in template):
        ids = {**good, name: good[name] + bad} if name != "slug" else good
        path = template.format(**ids)
        if name == "slug":
            path = path.replace("overview", "over" + bad + "view", 1)
        yield name, path, template.format(**good)


@pytest.mark.parametrize("key", sorted(ROUTES), ids=lambda k: f"{k[0]} {k[1]}")
def test_a_control_character_in_any_id_is_bad_input_not_an_outage(site, key):
    token = site.token("admin", None)  # every channel: the grant check cannot be what refuses
    paths = list(_paths(site, key, "%00"))
    for name, path, _ in paths:
        refused = _send(site, key[0], path, token)
        assert refused.status_code == 400, (name, path, refused.status_code, refused.text[:300])
        if path.startswith("/api"):
            body = refused.json()
            assert body["status"] == 400 and "control characters" in body["error"]
            assert "\x00" not in body["error"]
    # Control: the same request with the ids as they are is served.
    assert _send(site, key[0], paths[-1][2], token).status_code in (200, 303)


@pytest.mark.parametrize("bad", ["%01", "%1f", "%7f", "%0a", "%20x"])
def test_every_kind_of_control_character_or_space_in_a_channel_is_refused(site, bad):
    with site.client(site.token("reader", None)) as client:
        refused = client.get(f"/api/search?q=billing&channel=C1{bad}")
        workspace = client.get(f"/api/search?q=billing&workspace={WS}{bad}")
        erase = client.post(f"/api/admin/erase?author=U1{bad}")
        served = client.get("/api/search?q=billing&channel=C1")
    assert (refused.status_code, workspace.status_code, erase.status_code) == (400, 400, 400)
    assert refused.json()["error"].startswith("channel:")
    assert served.status_code == 200 and served.json()["results"]
