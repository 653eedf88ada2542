"""Fetching a shared file's bytes from its platform, within a size limit.

Slack: ``url_private`` with the bot token (``Authorization: Bearer``), sent only to Slack's file
host (or to the origin of ``TEAMLORE_SLACK_API_URL``, a local Slack in tests): a link in an
events file cannot make Teamlore hand its token to another server. Every failure is one line in
``FetchFailed``; it is recorded on the file and tried again by re-index.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

import httpx

from teamlore.errors import FetchFailed

SLACK_FILE_HOSTS = frozenset({"files.slack.com"})


class Fetcher(Protocol):
    def fetch(self, url: str, max_bytes: int) -> bytes: ...


class BearerFetcher:
    """GET with a bearer token, to allowed origins only; streamed, stopped past ``max_bytes``."""

    def __init__(self, token: str, origins: frozenset[str], timeout_s: float, platform: str) -> None:
        self._token, self._origins, self._timeout, self._platform = token, origins, timeout_s, platform

    @classmethod
    def for_slack(cls, token: str, api_url: str, timeout_s: float) -> BearerFetcher:
        api = urlsplit(api_url)
        origins = {f"https://{host}" for host in SLACK_FILE_HOSTS} | {f"{api.scheme}://{api.netloc}"}
        return cls(token, frozenset(origins), timeout_s, "Slack")

    def fetch(self, url: str, max_bytes: int) -> bytes:
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" not in self._origins:
            raise FetchFailed(f"not a {self._platform} file link ({parts.netloc or 'no host'})", retry=False)
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            with httpx.stream("GET", url, headers=headers, timeout=self._timeout) as answer:
                _check(answer, max_bytes, self._platform)
                return _read(answer, max_bytes)
        except httpx.HTTPError as exc:
            raise FetchFailed(
                f"cannot fetch from {parts.netloc}: {type(exc).__name__}: {exc}"[:300]
            ) from None


def _check(answer: httpx.Response, max_bytes: int, platform: str) -> None:
    code = answer.status_code
    if code in (401, 403):
        raise FetchFailed(f"{platform} refused the file (HTTP {code}): the token cannot read it (files:read)")
    if code == 404:
        raise FetchFailed(f"{platform} no longer has the file (HTTP 404)", retry=False)
    if code == 429:
        wait = answer.headers.get("Retry-After", "?")
        raise FetchFailed(f"{platform} rate-limited the download (HTTP 429, Retry-After {wait} s)")
    if code != 200:
        raise FetchFailed(f"{platform} answered HTTP {code}")
    if answer.headers.get("Content-Type", "").startswith("text/html") and platform == "Slack":
        # Slack answers a link it will not serve to this token with its sign-in page, status 200.
        raise FetchFailed("Slack answered with a sign-in page, not the file: the bot token lacks files:read")
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
