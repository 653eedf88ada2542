"""The HTTP API through a real server: tokens, scope (403, never an empty 200), errors, admin."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import pytest
from fastapi.routing import APIRoute

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.domain import Scope
from teamlore.web import api as api_routes
from teamlore.web import create_app
from teamlore.web import pages as wiki_routes
from teamlore.web import timelines as why_routes
from teamlore.web.auth import CSRF_COOKIE, TOKEN_COOKIE

from .conftest import WS, Clock, event
from .helpers import put
from .redis_server import free_port
from .web_server import serving


@dataclass
class Site:
    lore: Teamlore
    url: str
    ids: dict[str, str]

    def token(self, role: str, channels: list[str] | None) -> str:
        return self.lore.access.create(f"{role}-{channels}", role, WS, channels)[1]

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def _seed(lore: Teamlore) -> dict[str, str]:
    """Two channels with the same story, each with a contested pair and a page in two versions."""
    ids: dict[str, str] = {}
    for channel in ("C1", "C2"):
        first = put(lore, event("Dana owns the billing service.", channel=channel, author_name="dana"))[0]
        put(
            lore,
            event(
                "I think Omar owns the billing service.",
                channel=channel,
                ts="2026-02-10T10:00:00Z",
                author_name="omar",
            ),
        )
        lore.wiki.flush(everything=True)
        put(lore, event("We decided Redis is the queue.", channel=channel, ts="2026-03-01T10:00:00Z"))
        lore.wiki.flush(everything=True)
        ids[f"fact_{channel}"] = first.created[0]
        ids[f"message_{channel}"] = first.event.message_id
    return ids


_SERVICES = iter(f"service{n}" for n in range(1000))


def fresh_item(lore: Teamlore, channel: str) -> str:
    """A new open review item in ``channel``: a possible contradiction about a new subject."""
    name = next(_SERVICES)
    put(lore, event(f"Dana owns the {name} pipeline.", channel=channel, author_name="dana"))
    put(lore, event(f"I think Omar owns the {name} pipeline.", channel=channel, ts="2026-02-10T10:00:00Z"))
    items = [i for i in lore.review.items(Scope(WS, [channel])) if i.status == "open"]
    return str(max(i.id for i in items))


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[Site]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("api"), push_secret="s3cret", _env_file=None)
    lore = Teamlore(settings, embedder=embedder, clock=Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC)))
    ids = _seed(lore)
    with serving(create_app(lore, flush_pages=False)) as url:
        yield Site(lore, url, ids)
    lore.close()


# Every route that reads a channel, with a request for channel C (ids of C's own fact, message,
# review item) and the role it needs. A new channel route missing here fails the coverage test.
ROUTES: dict[tuple[str, str], tuple[str, str]] = {
    ("GET", "/api/channels"): ("reader", "/api/channels"),
    ("GET", "/api/search"): ("reader", "/api/search?q=billing"),
    ("GET", "/api/ask"): ("reader", "/api/ask?q=who+owns+billing"),
    ("GET", "/api/activity"): ("reader", "/api/activity?since=2026-01-01"),
    ("GET", "/api/pages"): ("reader", "/api/pages"),
    ("GET", "/api/pages/{slug}"): ("reader", "/api/pages/overview"),
    ("GET", "/api/pages/{slug}/versions"): ("reader", "/api/pages/overview/versions"),
    ("GET", "/api/pages/{slug}/diff"): ("reader", "/api/pages/overview/diff?from=1&to=2"),
    ("GET", "/api/facts/{fact_id}"): ("reader", "/api/facts/{fact}"),
    ("GET", "/api/facts/{fact_id}/history"): ("reader", "/api/facts/{fact}/history"),
    ("GET", "/api/messages/{message_id}"): ("reader", "/api/messages/{message}"),
    ("GET", "/api/review"): ("reviewer", "/api/review"),
    ("POST", "/api/review/{item_id}/reject"): ("reviewer", "/api/review/{item}/reject"),
    ("POST", "/api/admin/reindex"): ("admin", "/api/admin/reindex"),
    ("POST", "/api/admin/pages/rebuild"): ("admin", "/api/admin/pages/rebuild"),
    # The wiki: the same dependency, the channel in the path or the query, the token in a cookie.
    ("GET", "/wiki"): ("reader", "/wiki"),
    ("GET", "/wiki/search"): ("reader", "/wiki/search?q=billing"),
    ("GET", "/wiki/activity"): ("reader", "/wiki/activity"),
    ("GET", "/wiki/review"): ("reviewer", "/wiki/review"),
    ("GET", "/wiki/{channel}"): ("reader", "/wiki/{channel}"),
    ("GET", "/wiki/{channel}/{slug}"): ("reader", "/wiki/{channel}/overview"),
    ("GET", "/wiki/{channel}/{slug}/history"): ("reader", "/wiki/{channel}/overview/history"),
    ("GET", "/wiki/{channel}/facts/{fact_id}"): ("reader", "/wiki/{channel}/facts/{fact}"),
    ("GET", "/wiki/{channel}/messages/{message_id}"): ("reader", "/wiki/{channel}/messages/{message}"),
    ("POST", "/wiki/{channel}/review/{item_id}/reject"): ("reviewer", "/wiki/{channel}/review/{item}/reject"),
    ("POST", "/wiki/{channel}/review/{item_id}/accept"): ("reviewer", "/wiki/{channel}/review/{item}/accept"),
    ("POST", "/api/review/{item_id}/accept"): ("reviewer", "/api/review/{item}/accept"),
}


def _channel_routes() -> set[tuple[str, str]]:
    found = set()
    for router in (api_routes.router, wiki_routes.router, why_routes.router):
        for route in router.routes:
            if not isinstance(route, APIRoute):
                continue
            if "channel" in _params(route.dependant) or "{channel}" in route.path:
                found |= {(method, route.path) for method in route.methods}
    return found


def _params(dependant) -> set[str]:
    own = {p.alias for p in dependant.query_params} | {p.alias for p in dependant.path_params}
    return own.union(*(_params(d) for d in dependant.dependencies))


def test_every_route_that_reads_a_channel_is_in_the_scope_table():
    assert _channel_routes() == set(ROUTES)


def test_every_route_goes_through_the_token_dependency_but_signing_in():
    def authorized(dependant) -> bool:
        return any(d.call.__name__ == "caller" or authorized(d) for d in dependant.dependencies)

    open_routes = {
        route.path
        for router in (api_routes.router, wiki_routes.router, why_routes.router)
        for route in router.routes
        if isinstance(route, APIRoute) and not authorized(route.dependant)
    }
    assert open_routes == {"/", "/login", "/logout"}


def _request(site: Site, key: tuple[str, str], channel: str, token: str) -> httpx.Response:
    method, _ = key
    role, template = ROUTES[key]
    path = template.format(
        channel=channel,
        fact=site.ids[f"fact_{channel}"],
        message=site.ids[f"message_{channel}"],
        item=fresh_item(site.lore, channel) if "{item}" in template else "",
    )
    in_path = "{channel}" in key[1]
    if not in_path:
        path += ("&" if "?" in path else "?") + f"channel={channel}"
    if path.startswith("/wiki"):
        with httpx.Client(base_url=site.url, timeout=30) as client:
            client.cookies.set(TOKEN_COOKIE, token)
            client.cookies.set(CSRF_COOKIE, "csrf-test")
            return client.request(method, path, data={"csrf": "csrf-test"} if method == "POST" else None)
    with site.client(token) as client:
        return client.request(method, path)


@pytest.mark.parametrize("key", sorted(ROUTES), ids=lambda k: f"{k[0]} {k[1]}")
def test_a_token_for_one_channel_is_refused_another_and_served_its_own(site, key):
    role = ROUTES[key][0]
    token = site.token(role, ["C1"])
    refused = _request(site, key, "C2", token)
    assert refused.status_code == 403, refused.text
    assert "C2" in refused.text and "billing" not in refused.text.lower()
    allowed = _request(site, key, "C1", token)
    assert allowed.status_code in (200, 303), allowed.text
    assert "location" not in allowed.headers or "/login" not in allowed.headers["location"]


def test_a_reader_token_cannot_review_or_administer_even_in_its_channel(site):
    token = site.token("reader", ["C1"])
    with site.client(token) as client:
        assert client.get("/api/review", params={"channel": "C1"}).status_code == 403
        assert client.post("/api/admin/reindex", params={"channel": "C1"}).status_code == 403
        assert client.get("/api/admin/tokens").status_code == 403
        # Control: the same token reads its channel.
        assert client.get("/api/pages", params={"channel": "C1"}).status_code == 200


@pytest.mark.parametrize(
    "header", [None, "Bearer nonsense", "Bearer tl_000000000000_" + "x" * 43, "Basic abc"]
)
def test_missing_or_bad_tokens_get_401_with_one_line(site, header):
    headers = {"Authorization": header} if header else {}
    with httpx.Client(base_url=site.url, headers=headers) as client:
        response = client.get("/api/search", params={"q": "billing", "channel": "C1"})
    assert response.status_code == 401
    assert "\n" not in response.json()["error"]


def test_no_channel_asked_reads_every_channel_granted_and_only_those(site):
    with site.client(site.token("reader", ["C1"])) as client:
        hits = client.get("/api/search", params={"q": "billing service"}).json()["results"]
    assert hits and {h["channel"] for h in hits} == {"C1"}
    with site.client(site.token("reader", None)) as client:
        hits = client.get("/api/search", params={"q": "billing service", "limit": 20}).json()["results"]
    assert {h["channel"] for h in hits} == {"C1", "C2"}


def test_a_fact_of_another_channel_by_id_alone_is_not_found(site):
    with site.client(site.token("reader", ["C1"])) as client:
        assert client.get(f"/api/facts/{site.ids['fact_C2']}").status_code == 404
        assert client.get(f"/api/facts/{site.ids['fact_C1']}").status_code == 200


def test_errors_map_to_status_codes_with_one_line(site):
    with site.client(site.token("reader", ["C1"])) as client:
        bad_time = client.get("/api/search", params={"q": "x", "channel": "C1", "as_of": "yesterday"})
        missing = client.get("/api/pages/no-such-page", params={"channel": "C1"})
        two = client.get("/api/pages/overview", params={"channel": ["C1", "C1b"]})
        no_query = client.get("/api/search", params={"channel": "C1"})
    assert bad_time.status_code == 400 and "as_of" in bad_time.json()["error"]
    assert missing.status_code == 404
    assert two.status_code == 403  # C1b is outside the grant before anything else
    assert no_query.status_code == 422 and "q" in no_query.json()["error"]


def test_reads_answer_what_the_capabilities_say(site):
    with site.client(site.token("reader", ["C1"])) as client:
        answer = client.get("/api/ask", params={"q": "Who owns the billing service?", "channel": "C1"}).json()
        versions = client.get("/api/pages/overview/versions", params={"channel": "C1"}).json()
        diff = client.get("/api/pages/overview/diff", params={"channel": "C1", "from": 1, "to": 2}).json()
        old = client.get("/api/pages/overview", params={"channel": "C1", "as_of": "2026-01-06"}).json()
        source = client.get(f"/api/messages/{site.ids['message_C1']}", params={"channel": "C1"}).json()
    assert answer["known"] and "billing" in answer["answer"]
    numbers = [v["version"] for v in versions]  # other tests' reviews add versions; newest first
    assert numbers == sorted(numbers, reverse=True) and numbers[-2:] == [2, 1]
    assert any(line["kind"] == "added" and "Redis" in line["text"] for line in diff["lines"])
    text = " ".join(s["body"] for s in old["sections"])
    assert "Dana owns the billing service" in text and "Redis" not in text
    assert (source["author"], source["text"]) == ("dana", "Dana owns the billing service.")


def test_health_metrics_and_openapi(site):
    with httpx.Client(base_url=site.url) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        client.get("/api/search", params={"q": "x"})  # a 401, counted
        metrics = client.get("/metrics").text
        schema = client.get("/openapi.json").json()
    assert 'teamlore_http_requests_total{method="GET",route="/api/search",status="401"}' in metrics
    assert "/api/push" in schema["paths"] and "/api/search" in schema["paths"]
    assert not any(path.startswith("/wiki") for path in schema["paths"])


def test_admin_tokens_stay_inside_the_admins_own_grant(site):
    with site.client(site.token("admin", ["C1"])) as client:
        beyond = client.post("/api/admin/tokens", json={"name": "bot", "role": "reader", "channels": ["C2"]})
        everything = client.post("/api/admin/tokens", json={"name": "bot", "role": "reader"})
        inside = client.post("/api/admin/tokens", json={"name": "bot", "role": "reader", "channels": ["C1"]})
        erase = client.post("/api/admin/erase", params={"author": "U1"})
    assert (beyond.status_code, everything.status_code, erase.status_code) == (403, 403, 403)
    assert inside.status_code == 200
    minted = inside.json()
    with site.client(minted["token"]) as client:
        assert client.get("/api/pages", params={"channel": "C1"}).status_code == 200
    with site.client(site.token("admin", None)) as admin:
        listed = admin.get("/api/admin/tokens").json()
        assert minted["token_id"] in {t["token_id"] for t in listed}
        assert all("token" not in t and "secret_sha256" not in t for t in listed)
        assert admin.delete(f"/api/admin/tokens/{minted['token_id']}").status_code == 200
    with site.client(minted["token"]) as client:
        assert client.get("/api/pages", params={"channel": "C1"}).status_code == 401


def test_admin_erase_removes_a_persons_text_everywhere(tmp_path, embedder):
    settings = Settings(data_dir=tmp_path / "erase", _env_file=None)
    lore = Teamlore(settings, embedder=embedder, clock=Clock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC)))
    put(lore, event("Zed owns the deploy pipeline.", author_id="UZED", author_name="zed", message_id="m1"))
    put(lore, event("We decided Redis is the queue.", author_id="U2", message_id="m2"))
    token = lore.access.create("dpo", "admin", WS, None)[1]
    with (
        serving(create_app(lore, flush_pages=False)) as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as client,
    ):
        report = client.post("/api/admin/erase", params={"author": "UZED"}).json()
        hits = client.get("/api/search", params={"q": "deploy pipeline Redis", "limit": 10}).json()
    assert report["messages"] == 1 and len(report["facts_erased"]) == 1
    assert [h["text"] for h in hits["results"]] == ["We decided Redis is the queue."]
    text = sqlite3.connect(settings.db_path).execute("SELECT text FROM messages WHERE message_id='m1'")
    assert "Zed" not in (text.fetchone()[0] or "")
    lore.close()


def test_teamlore_serve_starts_the_api_and_the_wiki(tmp_path):
    port = free_port()
    env = {**os.environ, "TEAMLORE_DATA_DIR": str(tmp_path / "served")}
    server = subprocess.Popen(
        [sys.executable, "-m", "teamlore.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
                time.sleep(0.2)
        assert health.json() == {"status": "ok"}
        assert httpx.get(f"http://127.0.0.1:{port}/docs").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/wiki").status_code == 303  # to the login form
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_cookie_signed_form_without_its_csrf_token_changes_nothing(site):
    token = site.token("reviewer", ["C1"])
    item = fresh_item(site.lore, "C1")
    with httpx.Client(base_url=site.url) as client:
        client.cookies.set(TOKEN_COOKIE, token)
        client.cookies.set(CSRF_COOKIE, "the-real-one")
        forged = client.post(f"/wiki/C1/review/{item}/accept", data={"csrf": "guessed"})
        bare = client.post(f"/api/review/{item}/accept", params={"channel": "C1"})  # cookie, no header
        assert (forged.status_code, bare.status_code) == (403, 403)
        assert "CSRF" in bare.json()["error"]
        assert [i.status for i in site.lore.review.items(Scope(WS, ["C1"])) if str(i.id) == item] == ["open"]
        # Control: the same form with the token from the cookie goes through.
        done = client.post(f"/wiki/C1/review/{item}/accept", data={"csrf": "the-real-one"})
    assert done.status_code == 303
    assert not [i for i in site.lore.review.items(Scope(WS, ["C1"])) if str(i.id) == item]


def test_with_redis_admin_reindex_and_erase_go_to_the_admin_queue_and_change_nothing_inline(
    tmp_path, embedder
):
    import redis

    from teamlore.workers.celery_app import ADMIN, INGEST

    from .redis_server import OwnRedis

    server = OwnRedis(tmp_path / "redis", aof=False).start()
    settings = Settings(data_dir=tmp_path / "queued", redis_url=server.url, _env_file=None)
    lore = Teamlore(settings, embedder=embedder)
    try:
        put(lore, event("We decided Redis is the queue.", message_id="m1", author_id="UZED"))
        token = lore.access.create("root", "admin", WS, None)[1]
        with (
            serving(create_app(lore, flush_pages=False)) as url,
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as client,
        ):
            reindexed = client.post("/api/admin/reindex", params={"channel": "C1"})
            erased = client.post("/api/admin/erase", params={"author": "UZED"})
        assert reindexed.status_code == 202 and reindexed.json()["C1"]["queued"]
        assert erased.status_code == 202 and erased.json()["queued"]
        queues = redis.Redis.from_url(server.url)
        assert queues.llen(ADMIN) == 2 and queues.llen(INGEST) == 0  # live messages are not behind them
        # Nothing ran inline: the workers do it.
        assert lore.stores.messages.get_message(WS, "C1", "m1").text == "We decided Redis is the queue."
    finally:
        lore.close()
        server.stop()
