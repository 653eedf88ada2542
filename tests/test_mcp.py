"""The MCP server, driven through the SDK's own client over stdio and streamable HTTP.

The server runs as a real `python -m teamlore mcp` process on an imported sample workspace. A
reader token for #eng (C01ENG) is refused on every tool and resource for the private
#leadership (G04LEAD), each refusal paired with the same call inside the grant.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from teamlore.app import Teamlore
from teamlore.capabilities.importing import import_items, open_source
from teamlore.capabilities.limits import MAX_QUERY_CHARS
from teamlore.config import Settings
from teamlore.domain import Scope
from teamlore.mcp_server.refusals import FORBIDDEN_CODE

from .conftest import SAMPLE

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[1]
WS = "T0ACME"
ENG, PRODUCT, OPS, LEAD = "C01ENG", "C02PRODUCT", "C03OPS", "G04LEAD"
PRIVATE_STATEMENT = "Board is informed of the March 24 date."

# Every tool, with arguments that find something in #eng, and the key of its result that lists
# what was found. test_the_server_offers_exactly_these_read_only_tools keeps this in step with
# the server, so a new tool cannot skip the scope tests below.
TOOL_CALLS: dict[str, tuple[Callable[[Acme], dict[str, Any]], str]] = {
    "search_facts": (lambda acme: {"query": "who owns the billing service"}, "results"),
    "ask": (lambda acme: {"question": "Who owns the billing service?"}, "citations"),
    "list_pages": (lambda acme: {}, "pages"),
    "get_page": (lambda acme: {"slug": "overview"}, "sections"),
    "get_fact_history": (lambda acme: {"fact_id": acme.eng_fact}, "versions"),
    "recent_activity": (lambda acme: {"limit": 20}, "events"),
}


@dataclass
class Acme:
    data_dir: Path
    lore: Teamlore
    tokens: dict[str, str]
    eng_fact: str
    private_fact: str


@pytest.fixture(scope="module")
def acme(tmp_path_factory, embedder) -> Iterator[Acme]:
    data_dir = tmp_path_factory.mktemp("mcp")
    lore = Teamlore(Settings(data_dir=data_dir, _env_file=None), embedder=embedder)
    source = open_source(SAMPLE, lore.settings.max_message_chars)
    import_items(source.items, lore.pipeline)
    lore.wiki.flush(everything=True)
    tokens = {
        "eng": lore.access.create("eng-agent", "reader", WS, [ENG])[1],
        "public": lore.access.create("public-agent", "reader", WS, [ENG, PRODUCT, OPS])[1],
        "lead": lore.access.create("lead-agent", "reader", WS, [LEAD, ENG])[1],
    }
    eng_fact = lore.reader.search("Omar is the owner of the billing service", Scope(WS, [ENG]), k=1)
    private = lore.reader.search(PRIVATE_STATEMENT, Scope(WS, [LEAD]), k=1)
    assert private.hits[0].fact.statement == PRIVATE_STATEMENT
    yield Acme(data_dir, lore, tokens, eng_fact.hits[0].fact.fact_id, private.hits[0].fact.fact_id)
    lore.close()


# ---- the SDK's client, driven from synchronous tests ----


class Session:
    """One connected ``mcp.Client``; a blocking portal runs its event loop in a thread."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self._portal = portal
        self._client = client

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        return self._portal.call(self._client.call_tool, tool, arguments)

    def data(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    def read(self, uri: str) -> str:
        return self._portal.call(self._client.read_resource, uri).contents[0].text

    def tools(self):
        return self._portal.call(self._client.list_tools).tools

    def resource_uris(self) -> list[str]:
        return [str(r.uri) for r in self._portal.call(self._client.list_resources).resources]


@contextmanager
def connected(transport: Callable[[], Any]) -> Iterator[Session]:
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(transport()) as client:
        yield Session(portal, client)


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    return {"TEAMLORE_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT), **extra}


def over_stdio(data_dir: Path, token: str) -> Callable[[], Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "teamlore", "mcp"],
        env=server_env(data_dir, TEAMLORE_MCP_TOKEN=token),
        cwd=str(ROOT),
    )
    return lambda: Client(params)


def over_http(url: str, token: str) -> Callable[[], Any]:
    @asynccontextmanager
    async def client() -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        timeout = httpx2.Timeout(30, read=120)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            Client(streamable_http_client(url, http_client=http)) as connected_client,
        ):
            yield connected_client

    return client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_url(acme) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "teamlore", "mcp", "--transport", "http", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **server_env(acme.data_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the HTTP server did not start: {process.stderr.read()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stderr.close()


@pytest.fixture(scope="module", params=["stdio", "http"])
def connect(request, acme) -> Callable[[str], AbstractContextManager[Session]]:
    if request.param == "stdio":
        return lambda token: connected(over_stdio(acme.data_dir, token))
    url = request.getfixturevalue("http_url")
    return lambda token: connected(over_http(url, token))


@pytest.fixture(scope="module")
def eng(connect, acme) -> Iterator[Session]:
    with connect(acme.tokens["eng"]) as session:
        yield session


@pytest.fixture(scope="module")
def public(connect, acme) -> Iterator[Session]:
    with connect(acme.tokens["public"]) as session:
        yield session


@pytest.fixture(scope="module")
def lead(connect, acme) -> Iterator[Session]:
    with connect(acme.tokens["lead"]) as session:
        yield session


def refusal_text(result: CallToolResult) -> str:
    assert result.is_error, "expected a refusal, got a result"
    return " ".join(c.text for c in result.content)


# ---- read-only ----


def test_the_server_offers_exactly_these_read_only_tools(eng):
    tools = eng.tools()
    assert {t.name for t in tools} == set(TOOL_CALLS)
    for tool in tools:
        assert tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.destructive_hint is False, tool.name


def test_no_tool_changes_the_store(eng, acme):
    # The query-embedding cache may grow; knowledge (facts, pages, audit, review, tokens) may not.
    tables = ("messages", "fact_versions", "audit_log", "page_versions", "review_items", "tombstones")

    def counts() -> dict[str, int]:
        with sqlite3.connect(acme.lore.settings.db_path) as db:
            return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}

    before = counts()
    for tool, (arguments, _) in TOOL_CALLS.items():
        eng.data(tool, **arguments(acme))
    assert counts() == before


# ---- scope: the refusal and its control, on every tool and on the resources ----


@pytest.mark.parametrize("tool", sorted(TOOL_CALLS))
def test_a_channel_outside_the_grant_is_forbidden_and_inside_it_is_answered(eng, acme, tool):
    arguments, found = TOOL_CALLS[tool]
    allowed = eng.data(tool, **arguments(acme), channels=[ENG])
    assert allowed[found], f"{tool} found nothing in #eng"

    for asked in ([LEAD], [ENG, LEAD], [PRODUCT]):
        text = refusal_text(eng.call(tool, **arguments(acme), channels=asked))
        assert "403 Forbidden" in text and asked[-1] in text


@pytest.mark.parametrize(("tool", "argument"), [("search_facts", "query"), ("ask", "question")])
def test_a_query_over_the_length_limit_is_a_tool_error_and_one_at_it_is_answered(eng, tool, argument):
    at_limit = ("billing service owner " * 100)[:MAX_QUERY_CHARS]
    text = refusal_text(eng.call(tool, **{argument: at_limit + "x"}, channels=[ENG]))
    assert f"is {MAX_QUERY_CHARS + 1:,} characters; the limit is {MAX_QUERY_CHARS:,}" in text
    assert eng.data(tool, **{argument: at_limit}, channels=[ENG])


def test_a_page_resource_outside_the_grant_is_forbidden_and_inside_it_is_read(eng):
    assert eng.read(f"teamlore://pages/{WS}/{ENG}/overview").startswith("# Overview")
    for uri in (f"teamlore://pages/{WS}/{LEAD}/overview", f"teamlore://pages/OTHER/{ENG}/overview"):
        with pytest.raises(MCPError) as refused:
            eng.read(uri)
        assert refused.value.code == FORBIDDEN_CODE and refused.value.message.startswith("403 Forbidden")


def test_the_resource_list_is_the_pages_the_token_may_read(eng, lead):
    mine = eng.resource_uris()
    assert mine and all(u.startswith(f"teamlore://pages/{WS}/{ENG}/") for u in mine)
    assert any(f"/{LEAD}/" in u for u in lead.resource_uris())  # control: the grant decides


def test_a_private_channels_fact_never_reaches_a_token_without_that_channel(public, lead, acme):
    seen = json.dumps(
        [
            public.data("search_facts", query=PRIVATE_STATEMENT, limit=50),
            public.data("search_facts", query=PRIVATE_STATEMENT, mode="keyword", include_history=True),
            public.data("ask", question="When is the board informed of the launch date?"),
            public.data("list_pages"),
            public.data("recent_activity", limit=500),
            public.resource_uris(),
        ]
    )
    assert PRIVATE_STATEMENT not in seen and LEAD not in seen and acme.private_fact not in seen
    # Not "forbidden" but "not found": the fact's existence is not revealed either.
    assert "404 Not Found" in refusal_text(public.call("get_fact_history", fact_id=acme.private_fact))

    # Control: the same calls with a token for #leadership.
    hits = lead.data("search_facts", query=PRIVATE_STATEMENT)["results"]
    assert hits[0]["text"] == PRIVATE_STATEMENT and hits[0]["channel"] == LEAD
    assert lead.data("get_fact_history", fact_id=acme.private_fact)["versions"]
    assert LEAD in json.dumps(lead.data("recent_activity", limit=500))


def test_concurrent_callers_each_read_with_their_own_grant(eng, lead):
    # Over HTTP both sessions share one server process: each call must see its own token.
    with ThreadPoolExecutor(8) as pool:
        calls = [(session, pool.submit(session.data, "list_pages")) for session in [eng, lead] * 6]
    for who, call in calls:
        channels = {page["channel"] for page in call.result()["pages"]}
        assert channels == ({ENG} if who is eng else {ENG, LEAD})


# ---- what the tools answer ----


def test_as_of_answers_as_things_stood_then(public):
    def top(**when: str) -> str:
        found = public.data("search_facts", query="Atlas 2.0 launch date", channels=[PRODUCT], **when)
        return " ".join(hit["text"] for hit in found["results"][:3])

    assert "March 3" in top(as_of="2026-02-01") and "March 24" not in top(as_of="2026-02-01")
    assert "March 24" in top()


def test_pages_by_slug_version_and_moment(eng):
    page = eng.data("get_page", slug="overview")
    assert page["channel"] == ENG and page["uri"] == f"teamlore://pages/{WS}/{ENG}/overview"
    assert eng.data("get_page", slug="overview", version=1)["version"] == 1
    assert "404 Not Found" in refusal_text(eng.call("get_page", slug="overview", as_of="2020-01-01"))
    assert "404 Not Found" in refusal_text(eng.call("get_page", slug="no-such-page"))


def test_a_slug_in_several_channels_needs_one_channel_named(public):
    text = refusal_text(public.call("get_page", slug="overview"))
    assert "400 Bad Request" in text and "name one channel" in text
    assert public.data("get_page", slug="overview", channels=[PRODUCT])["channel"] == PRODUCT


def test_bad_input_is_a_clear_tool_error(eng):
    assert "400 Bad Request" in refusal_text(eng.call("search_facts", query="x", as_of="last tuesday"))
    assert "400 Bad Request" in refusal_text(eng.call("ask", question="   "))
    assert refusal_text(eng.call("search_facts", query="x", limit=0))  # the schema refuses it


# ---- transport-specific: tokens ----


def test_http_refuses_a_request_without_a_valid_token_with_401(http_url, acme):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    for token in (None, "tl_000000000000_" + "x" * 43, acme.tokens["eng"] + "x"):
        sent = {**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
        response = httpx2.post(http_url, json=initialize, headers=sent)
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
    # Control: the real token opens a session.
    response = httpx2.post(
        http_url, json=initialize, headers={**headers, "Authorization": f"Bearer {acme.tokens['eng']}"}
    )
    assert response.status_code == 200


def test_a_revoked_token_stops_working_on_its_next_request(acme, http_url):
    record, secret = acme.lore.access.create("short-lived", "reader", WS, [ENG])
    with connected(over_http(http_url, secret)) as session:
        assert session.data("list_pages")["pages"]
        acme.lore.access.revoke(record.token_id)
        with pytest.raises(MCPError):  # the client reports any HTTP error status alike
            session.call("list_pages")
    # ... and the status it got was 401.
    response = httpx2.post(http_url, json={}, headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("token", "says"),
    [(None, "set TEAMLORE_MCP_TOKEN"), ("nonsense", "malformed API token")],
)
def test_stdio_without_a_valid_token_exits_2_with_one_line(acme, token, says):
    env = {**os.environ, **server_env(acme.data_dir)}
    env.pop("TEAMLORE_MCP_TOKEN", None)
    if token:
        env["TEAMLORE_MCP_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "teamlore", "mcp"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and says in done.stderr
