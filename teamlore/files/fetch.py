"""Fetching a shared file's bytes from its platform, within a size limit.

One rule for every platform (``LinkFetcher``), set by its ``FileSource``:

- a link in an event is fetched only when its origin (scheme, host and port) is one of the
  platform's file origins; any other link is refused before anything is sent;
- the platform's token, when it has one, is sent only to its token origins;
- a redirect is followed (at most ``MAX_REDIRECTS``) only to one of the file origins, and
  carries the token only when its own origin is a token origin: a redirect elsewhere is not
  followed at all.

So no link and no redirect can make Teamlore hand a token to another server, or fetch from one.

- Slack: ``url_private`` with the bot token, ``files.slack.com`` (or the origin of
  ``TEAMLORE_SLACK_API_URL``, a local Slack in tests).
- Discord: the attachment's ``url`` on Discord's CDN (``TEAMLORE_DISCORD_FILE_ORIGINS``), no
  token: the links are signed.
- Mattermost: ``{server}/api/v4/files/{id}`` with the bot token, the server's origin only.
- Microsoft Teams: the SharePoint/OneDrive link is never fetched itself; Graph is asked for the
  item it names (``/shares/u!{link}/driveItem/content``) with the app token, sent to Graph's
  origin only, and Graph's redirect to the pre-authenticated download (``*.sharepoint.com``,
  ``TEAMLORE_TEAMS_FILE_ORIGINS``) is followed without it.

Every failure is one line in ``FetchFailed``; it is recorded on the file and tried again by
re-index when ``retry`` says trying later may help.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import httpx

from teamlore.errors import FetchFailed, TeamloreError

# Discord's CDN and SharePoint's download origins are settings (their defaults in config.py), so
# the tests' local servers can stand in; Slack's file host is fixed, beside TEAMLORE_SLACK_API_URL.
SLACK_FILE_ORIGINS = ("https://files.slack.com",)
MAX_REDIRECTS = 3


class Fetcher(Protocol):
    def fetch(self, url: str, max_bytes: int) -> bytes: ...


@dataclass(frozen=True)
class FileSource:
    """Where one platform's files may be fetched from, and with what."""

    platform: str
    # Where a file link, or a redirect, may lead; ``https://*.example.com`` names every subdomain.
    origins: frozenset[str]
    token: str | Callable[[], str] = ""  # a string, or what returns a current one (Graph's)
    token_origins: frozenset[str] = frozenset()  # the only origins the token is sent to (exact)
    refused: str = "the token cannot read it"  # what a 401/403 means here
    sign_in_page: str = ""  # what an HTML answer means, when it is a sign-in page (Slack), not a file


def origin_of(url: str) -> str:
    """``scheme://host[:port]``, the port only when it is not the scheme's default; "" when the
    link is not an http(s) URL."""
    try:
        parts = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return ""
    if parts.scheme not in ("http", "https") or not parts.host:
        return ""
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{parts.host}{port}"


def origins(urls: Iterable[str]) -> frozenset[str]:
    return frozenset(found for url in urls if (found := origin_of(url.strip())))


def allowed(origin: str, patterns: frozenset[str]) -> bool:
    """``origin`` is one of ``patterns``, or under a ``scheme://*.domain`` one (a subdomain)."""
    if not origin:
        return False
    if origin in patterns:
        return True
    scheme, _, host = origin.partition("://")
    return any(
        p.startswith(f"{scheme}://*.") and host.endswith(p.removeprefix(f"{scheme}://*")) for p in patterns
    )


def _patterns(urls: Iterable[str]) -> frozenset[str]:
    """Origins, keeping a ``*.`` subdomain pattern as it is (lower case, no path)."""
    found = set()
    for url in (u.strip().lower().rstrip("/") for u in urls):
        if "://*." in url and "/" not in url.partition("://")[2]:
            found.add(url)
        elif origin := origin_of(url):
            found.add(origin)
    return frozenset(found)


def slack_source(token: str, api_url: str) -> FileSource:
    slack = origins([*SLACK_FILE_ORIGINS, api_url])
    refused = "the token cannot read it (files:read)"
    sign_in = "Slack answered with a sign-in page, not the file: the bot token lacks files:read"
    return FileSource("Slack", slack, token, slack, refused, sign_in_page=sign_in)


def discord_source(file_origins: str) -> FileSource:
    """Discord's CDN links, fetched with no token; ``file_origins`` is comma-separated."""
    return FileSource(
        "Discord", origins(file_origins.split(",")), refused="the link is not signed or expired"
    )


def mattermost_source(token: str, server_url: str) -> FileSource:
    server = origins([server_url])
    refused = "the bot cannot read it (is it a member of the channel?)"
    return FileSource("Mattermost", server, token, server, refused)


def teams_source(token: Callable[[], str], graph_url: str, download_origins: str) -> FileSource:
    """Graph, with the app token, and the origins its downloads redirect to (comma-separated),
    fetched with no token."""
    graph = origins([graph_url])
    redirects = _patterns(download_origins.split(","))
    refused = "the app cannot read it (Graph permission Files.Read.All or Sites.Read.All)"
    return FileSource("Microsoft Graph", graph | redirects, token, graph, refused)


class LinkFetcher:
    """GET a file link under its ``FileSource``'s rule; streamed, stopped past ``max_bytes``."""

    def __init__(self, source: FileSource, timeout_s: float) -> None:
        self._source, self._timeout = source, timeout_s

    def fetch(self, url: str, max_bytes: int) -> bytes:
        source = self._source
        if not allowed(origin_of(url), source.origins):
            raise FetchFailed(f"not a {source.platform} file link ({_host(url)})", retry=False)
        for _ in range(MAX_REDIRECTS + 1):
            found = self._get(url, max_bytes)
            if isinstance(found, bytes):
                return found
            url = found
            if not allowed(origin_of(url), source.origins):
                raise FetchFailed(
                    f"{source.platform} redirected the download to another server ({_host(url)});"
                    " not followed",
                    retry=False,
                )
        raise FetchFailed(f"{source.platform} redirected the download more than {MAX_REDIRECTS} times")

    def _get(self, url: str, max_bytes: int) -> bytes | str:
        """The bytes, or where a redirect leads."""
        source = self._source
        headers = {}
        if source.token and origin_of(url) in source.token_origins:
            headers["Authorization"] = f"Bearer {_current(source)}"
        try:
            with httpx.stream(
                "GET", url, headers=headers, timeout=self._timeout, follow_redirects=False
            ) as answer:
                if answer.is_redirect and "Location" in answer.headers:
                    return str(answer.url.join(answer.headers["Location"]))
                _check(answer, max_bytes, source)
                return _read(answer, max_bytes)
        except httpx.HTTPError as exc:
            raise FetchFailed(f"cannot fetch from {_host(url)}: {type(exc).__name__}: {exc}"[:300]) from None


def _current(source: FileSource) -> str:
    if isinstance(source.token, str):
        return source.token
    try:
        return source.token()
    except TeamloreError as exc:  # no token now (the sign-in service down, a wrong secret)
        raise FetchFailed(f"{source.platform}: {exc}") from None


class GraphFileFetcher:
    """A Teams file by its SharePoint/OneDrive link: the link only names the item to Graph."""

    def __init__(self, source: FileSource, graph_url: str, timeout_s: float) -> None:
        self._graph = graph_url.rstrip("/")
        self._links = LinkFetcher(source, timeout_s)

    def fetch(self, url: str, max_bytes: int) -> bytes:
        if not origin_of(url).startswith("https://"):
            raise FetchFailed(f"not a SharePoint or OneDrive link ({_host(url)})", retry=False)
        return self._links.fetch(f"{self._graph}/shares/{share_id(url)}/driveItem/content", max_bytes)


def share_id(url: str) -> str:
    """Graph's id of a sharing link: ``u!`` and the link in unpadded base64url."""
    return "u!" + base64.urlsafe_b64encode(url.encode()).decode("ascii").rstrip("=")


def _host(url: str) -> str:
    try:
        return httpx.URL(url).netloc.decode("ascii", "replace") or "no host"
    except (httpx.InvalidURL, TypeError):
        return "no host"


def _check(answer: httpx.Response, max_bytes: int, source: FileSource) -> None:
    code, platform = answer.status_code, source.platform
    if code in (401, 403):
        raise FetchFailed(f"{platform} refused the file (HTTP {code}): {source.refused}")
    if code == 404:
        raise FetchFailed(f"{platform} no longer has the file (HTTP 404)", retry=False)
    if code == 429:
        wait = answer.headers.get("Retry-After", "?")
        raise FetchFailed(f"{platform} rate-limited the download (HTTP 429, Retry-After {wait} s)")
    if code != 200:
        raise FetchFailed(f"{platform} answered HTTP {code}")
    if source.sign_in_page and answer.headers.get("Content-Type", "").startswith("text/html"):
        # Slack answers a link it will not serve to this token with its sign-in page, status 200.
        raise FetchFailed(source.sign_in_page)
    declared = answer.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise FetchFailed(_too_large(int(declared), max_bytes), retry=False)


def _read(answer: httpx.Response, max_bytes: int) -> bytes:
    chunks, held = [], 0
    for chunk in answer.iter_bytes():
        held += len(chunk)
        if held > max_bytes:
            raise FetchFailed(_too_large(held, max_bytes, "more than "), retry=False)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int, more: str = "") -> str:
    return f"the file is {more}{size:,} bytes; the limit is {limit:,} (TEAMLORE_FILE_MAX_BYTES)"
