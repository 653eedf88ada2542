"""The HTTP surface through a real server, as an attacker or a careless client would use it: ids
with control characters, token listing beyond a grant, far-future times, unknown routes, and the
headers every response carries."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import Request

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.errors import ConfigurationError
from teamlore.web import create_app
from teamlore.web.auth import CSRF_COOKIE, TOKEN_COOKIE

from .conftest import WS, Clock, event
from .helpers import put
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


def test_an_admin_lists_only_the_tokens_within_its_grant(site):
    lore = site.lore
    own, _ = lore.access.create("deploy bot for C1", "reader", WS, ["C1"])
    other, _ = lore.access.create("merger-talks reader", "reader", WS, ["C2"])
    both, _ = lore.access.create("digest bot", "reader", WS, ["C1", "C2"])
    every, _ = lore.access.create("root", "admin", WS, None)
    with site.client(site.token("admin", ["C1"])) as client:
        listed = client.get("/api/admin/tokens")
        revoke_other = client.delete(f"/api/admin/tokens/{other.token_id}")
    assert listed.status_code == 200
    seen = {t["token_id"] for t in listed.json()}
    assert own.token_id in seen
    assert not seen & {other.token_id, both.token_id, every.token_id}
    assert "C2" not in listed.text and "merger" not in listed.text
    assert revoke_other.status_code == 403
    # Control: an admin for every channel sees all of them.
    with site.client(site.token("admin", None)) as client:
        everything = {t["token_id"] for t in client.get("/api/admin/tokens").json()}
    assert {own.token_id, other.token_id, both.token_id, every.token_id} <= everything


@pytest.mark.parametrize(
    ("name", "status"), [("x" * 100_000, 400), ("x" * 101, 400), ("two\nlines", 400), ("x" * 100, 200)]
)
def test_a_token_name_is_bounded(site, name, status):
    with site.client(site.token("admin", None)) as client:
        before = len(client.get("/api/admin/tokens").json())
        created = client.post("/api/admin/tokens", json={"name": name, "channels": ["C1"]})
        after = len(client.get("/api/admin/tokens").json())
    assert created.status_code == status, created.text[:200]
    if status == 400:
        assert "at most 100 characters" in created.json()["error"] or "control" in created.json()["error"]
        assert len(created.text) < 300 and after == before
    else:
        assert after == before + 1


def test_the_cli_bounds_a_token_name_the_same_way(tmp_path):
    from .test_cli import run

    long = run("tokens", "create", "--name", "x" * 5_000, "-w", WS, "-c", "C1", data_dir=tmp_path)
    assert long.returncode == 2 and "at most 100 characters" in long.stderr
    assert len(long.stderr.strip().splitlines()) == 1 and "Traceback" not in long.stderr
    assert run("tokens", "list", "--json", data_dir=tmp_path).stdout.strip() == "[]"
    # Control: the longest name allowed is taken.
    longest = run("tokens", "create", "--name", "x" * 100, "-w", WS, "-c", "C1", data_dir=tmp_path)
    assert longest.returncode == 0, longest.stderr


@pytest.mark.parametrize(
    "when", ["9999-12-31", "9999-12-31T00:00:00Z", "9999-12-31T12:00:00+00:00", "9999-12-31T23:00:00-05:00"]
)
def test_a_read_at_or_after_the_open_bound_is_refused_on_every_read(site, when):
    fact = site.ids["fact_C1"]
    with site.client(site.token("reader", ["C1"])) as client:
        answers = [
            client.get("/api/search", params={"q": "billing", "as_of": when}),
            client.get("/api/search", params={"q": "billing", "known_at": when}),
            client.get(f"/api/facts/{fact}", params={"as_of": when}),
            client.get(f"/api/facts/{fact}", params={"known_at": when}),
            client.get("/api/ask", params={"q": "who owns billing", "as_of": when}),
            client.get("/api/activity", params={"since": when}),
            client.get("/api/pages/overview", params={"as_of": when}),
            client.get("/api/pages/overview", params={"known_at": when}),
        ]
    for response in answers:
        assert response.status_code == 400, (response.url, response.text)
        assert "open bound" in response.json()["error"] or "outside the years" in response.json()["error"]


def test_just_before_the_open_bound_search_and_a_fact_by_id_agree(site):
    # A fact of its own: other tests of the module settle review items about the seeded ones.
    [fact] = put(site.lore, event("The greenhouse sensor budget is 300 euros.", channel="C1"))[0].created
    with site.client(site.token("reader", ["C1"])) as client:
        asked = {"q": "greenhouse sensor budget", "as_of": "9999-12-30"}
        hits = client.get("/api/search", params=asked).json()
        shown = client.get(f"/api/facts/{fact}", params={"as_of": "9999-12-30"}).json()
    found = {h["fact_id"]: h["kind"] for h in hits["results"] if h.get("fact_id")}
    assert shown["kind"] == "fact" and found.get(fact) == "fact"


def test_the_cli_refuses_a_read_at_the_open_bound_too(tmp_path):
    from .test_cli import run

    done = run("search", "billing", "-w", WS, "-c", "C1", "--as-of", "9999-12-31", data_dir=tmp_path)
    assert done.returncode == 2 and "open bound" in done.stderr and "Traceback" not in done.stderr
    early = "0001-01-01T00:00:00+01:00"
    overflow = run("search", "x", "-w", WS, "-c", "C1", "--as-of", early, data_dir=tmp_path)
    assert overflow.returncode == 2 and "outside the years" in overflow.stderr


def _shape(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "status"} and body["status"] == status, body
    assert body["error"] and "\n" not in body["error"]
    return body["error"]


def test_every_api_error_has_the_documented_shape(site, monkeypatch):
    reader = site.token("reader", ["C1"])
    with site.client(reader) as client:
        assert "no such route" in _shape(client.get("/api/no-such-route"), 404)
        assert "no such route" in _shape(client.get("/nothing-here"), 404)
        wrong = client.put("/api/search", params={"q": "x"})
        assert "GET" in _shape(wrong, 405) and wrong.headers["allow"] == "GET"
        _shape(client.get("/api/search"), 422)
        _shape(client.get("/api/search", params={"q": "x", "as_of": "yesterday"}), 400)
        _shape(client.get("/api/search", params={"q": "x", "channel": "C2"}), 403)
        monkeypatch.setattr(site.lore.reader, "search", _boom)
        failed = client.get("/api/search", params={"q": "billing"})
    assert "internal error" in _shape(failed, 500) and "secret detail" not in failed.text
    assert failed.headers["x-content-type-options"] == "nosniff"
    with httpx.Client(base_url=site.url) as anonymous:
        _shape(anonymous.get("/api/search", params={"q": "x"}), 401)


def _boom(*args, **kwargs):
    raise RuntimeError("secret detail of an unexpected failure")


def test_a_csrf_header_with_any_characters_is_a_403_not_a_500(site):
    item = fresh_item(site.lore, "C1")
    with httpx.Client(base_url=site.url) as client:
        client.cookies.set(TOKEN_COOKIE, site.token("reviewer", ["C1"]))
        client.cookies.set(CSRF_COOKIE, "the-real-one")
        odd = client.post(
            f"/api/review/{item}/accept", params={"channel": "C1"}, headers={"X-CSRF-Token": "é".encode()}
        )
        assert "CSRF" in _shape(odd, 403)
        # Control: the right token passes.
        done = client.post(
            f"/api/review/{item}/accept", params={"channel": "C1"}, headers={"X-CSRF-Token": "the-real-one"}
        )
    assert done.status_code == 200, done.text


def test_every_response_carries_the_security_headers(site):
    with site.client(site.token("reader", ["C1"])) as client:
        responses = [
            client.get("/api/search", params={"q": "billing"}),
            client.get("/api/nothing"),
            client.put("/api/search"),
            client.get("/wiki"),
            client.get("/wiki/C1/overview"),
            client.get("/login"),
            client.get("/static/wiki.css"),
            client.get("/healthz"),
            client.get("/metrics"),
            client.get("/openapi.json"),
            client.get("/docs"),
        ]
    with httpx.Client(base_url=site.url) as anonymous:
        responses += [anonymous.get("/api/search", params={"q": "x"}), anonymous.get("/wiki")]
    for response in responses:
        headers = response.headers
        policy = {
            part.split()[0]: part.split()[1:] for part in headers["content-security-policy"].split("; ")
        }
        assert policy["frame-ancestors"] == ["'none'"], response.url
        assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
        assert policy["default-src"] == ["'none'"] and policy["object-src"] == ["'none'"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
    docs = responses[-3].text
    assert docs.count("<script") == docs.count("<script src=") == 2  # no inline script on /docs either
    assert "/static/swagger-init.js" in docs


def _csrf_cookie(url: str, forwarded: dict[str, str]) -> str:
    with httpx.Client(base_url=url) as client:
        response = client.get("/login", headers=forwarded)
    [cookie] = [c for c in response.headers.get_list("set-cookie") if c.startswith(CSRF_COOKIE)]
    return cookie


@pytest.mark.parametrize(
    ("trusted", "believed"),
    [("127.0.0.1", True), ("127.0.0.0/8, 10.0.0.0/8", True), ("*", True), ("10.9.8.7", False), ("", False)],
)
def test_forwarded_headers_are_believed_only_from_trusted_proxies(tmp_path, embedder, trusted, believed):
    settings = Settings(data_dir=tmp_path / "proxy", trusted_proxies=trusted, _env_file=None)
    lore = Teamlore(settings, embedder=embedder)
    app = create_app(lore, flush_pages=False)

    @app.get("/api/test-client-address")
    def client_address(request: Request) -> dict[str, str | None]:
        return {"host": request.client.host if request.client else None, "scheme": request.url.scheme}

    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    with serving(app) as url:
        secure = "secure" in _csrf_cookie(url, forwarded).lower()
        seen = httpx.get(f"{url}/api/test-client-address", headers=forwarded).json()
        plain = "secure" in _csrf_cookie(url, {}).lower()
    lore.close()
    assert secure is believed and not plain  # control: no forwarded header, no Secure
    expected = ("203.0.113.9", "https") if believed else ("127.0.0.1", "http")
    assert (seen["host"], seen["scheme"]) == expected


def test_a_trusted_proxies_setting_that_is_not_an_address_is_refused_at_start(tmp_path, embedder):
    settings = Settings(data_dir=tmp_path / "bad", trusted_proxies="10.0.0.1, proxy.internal", _env_file=None)
    lore = Teamlore(settings, embedder=embedder)
    try:
        with pytest.raises(ConfigurationError, match="proxy.internal"):
            create_app(lore, flush_pages=False)
    finally:
        lore.close()


def test_the_wiki_runs_under_the_policy_in_a_browser(site):
    """Headless Chromium reports no Content-Security-Policy violation on the wiki's pages, and
    their stylesheet loads (control: an inline script on a page is refused)."""
    from .wiki_site import CHROMIUM, sign_in

    if not CHROMIUM.exists():
        pytest.skip(f"no {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    fact = site.ids["fact_C1"]
    paths = ["/wiki", "/wiki/C1", "/wiki/C1/overview", "/wiki/C1/overview/history",
             f"/wiki/C1/facts/{fact}", "/wiki/search?q=billing", "/wiki/activity"]  # fmt: skip
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = browser.new_context().new_page()
            messages: list[str] = []
            styles: list[int] = []
            page.on("console", lambda m: messages.append(m.text))
            page.on("response", lambda r: styles.append(r.status) if r.url.endswith("wiki.css") else None)
            sign_in(page, site.url, site.token("reader", ["C1"]))
            for path in paths:
                page.goto(site.url + path)
                assert page.title(), path
            refused = [m for m in messages if "Content Security Policy" in m]
            assert refused == [] and styles and set(styles) <= {200, 304}
            page.evaluate("() => { const s = document.createElement('script'); s.textContent = "
                          "'window.ran = 1'; document.body.appendChild(s); }")  # fmt: skip
            assert page.evaluate("() => window.ran") is None
            assert any("Content Security Policy" in m for m in messages)
        finally:
            browser.close()


def test_an_unhealthy_store_is_a_503_in_the_error_shape(site, monkeypatch):
    import sqlite3

    def broken(self):
        raise sqlite3.OperationalError("disk I/O error")

    with httpx.Client(base_url=site.url) as client:
        assert client.get("/healthz").json() == {"status": "ok"}  # control
        monkeypatch.setattr(type(site.lore.stores.db), "conn", property(broken))
        assert "disk I/O error" in _shape(client.get("/healthz"), 503)
