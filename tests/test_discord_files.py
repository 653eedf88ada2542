"""Files shared on Discord become knowledge (issue 21): a PDF made in the test is attached to a
gateway message, its link on a local CDN (real HTTP; the CDN's origin is configured as Discord's,
as cdn.discordapp.com is in production), fetched with no token, read in the sandbox, and its
passages found by search with the file and page, private where their channel is, retracted with
the message. A link to any other host is refused before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from teamlore.app import Teamlore, file_fetchers
from teamlore.config import Settings
from teamlore.domain import FactStatus, Scope

from . import discord_payloads as P
from . import files_made as made
from .local_http import LocalServer, Request, Response, local_server
from .test_discord import run_bot
from .test_shared_files import BUDGET_PAGES

REPORT = made.pdf(BUDGET_PAGES)


def serve_files(files: dict[str, bytes]) -> Any:
    def handler(request: Request) -> Response:
        found = files.get(request.path)
        return Response(200, found, {"Content-Type": made.PDF_MIME}) if found else Response(404, {})

    return handler


@pytest.fixture
def cdn() -> Iterator[LocalServer]:
    with local_server(serve_files({"/attachments/200/7001/report.pdf": REPORT})) as server:
        yield server


@pytest.fixture
def elsewhere() -> Iterator[LocalServer]:
    """Another server on the same machine: only the port differs from the CDN's origin."""
    with local_server(serve_files({"/report.pdf": REPORT})) as server:
        yield server


@pytest.fixture
def lore(tmp_path: Path, embedder, clock, cdn: LocalServer) -> Iterator[Teamlore]:
    settings = Settings(data_dir=tmp_path / "store", discord_file_origins=cdn.url, _env_file=None)
    opened = Teamlore(settings, embedder=embedder, clock=clock)
    yield opened
    opened.close()


def attachment(url: str, name: str = "report.pdf", aid: str = "7001") -> dict[str, Any]:
    return {
        "id": aid,
        "filename": name,
        "size": len(REPORT),
        "url": url,
        "proxy_url": url,
        "content_type": made.PDF_MIME,
    }


def share(lore: Teamlore, mid: str, channel: str, text: str, attachments: list[dict[str, Any]]) -> None:
    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_CREATE"](P.message(mid, channel, text, attachments=attachments))

    run_bot(lore, scenario)


def budget_hits(lore: Teamlore, *channels: str) -> list[Any]:
    result = lore.reader.search("Falcon launch budget", Scope(P.GUILD, channels), k=5)
    return [hit for hit in result.hits if "40 thousand" in hit.text]


def test_a_fact_on_page_2_of_a_pdf_shared_on_discord_is_found_and_cited_with_the_file_and_page(lore, cdn):
    mid = P.snowflake(1)
    share(
        lore,
        mid,
        P.GENERAL,
        "Here is the Falcon report.",
        [attachment(f"{cdn.url}/attachments/200/7001/report.pdf")],
    )

    (download,) = cdn.requests
    assert "authorization" not in download.headers  # Discord's links are signed: no token is sent
    (fact, *_) = [h for h in budget_hits(lore, P.GENERAL) if h.kind == "fact"]
    (source,) = fact.sources
    assert (source.file_ref, source.shared_in) == ("report.pdf, p. 2", mid)
    assert source.permalink == f"https://discord.com/channels/{P.GUILD}/{P.GENERAL}/{mid}"
    (ref,) = lore.search_media_references(Scope(P.GUILD, [P.GENERAL]), "report")
    assert (ref.status, ref.detail) == ("extracted", "pdf: 3 pages, 3 passages")


def test_deleting_the_discord_message_retracts_what_only_its_file_supported(lore, cdn):
    mid = P.snowflake(1)
    share(
        lore,
        mid,
        P.GENERAL,
        "Here is the Falcon report.",
        [attachment(f"{cdn.url}/attachments/200/7001/report.pdf")],
    )
    (fact, *_) = [h.fact for h in budget_hits(lore, P.GENERAL) if h.kind == "fact"]

    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_DELETE"](P.message_delete(mid, P.GENERAL))

    run_bot(lore, scenario)
    history = lore.reader.history(fact.fact_id, Scope(P.GUILD, [P.GENERAL]))
    assert history.versions[-1].fact.status is FactStatus.RETRACTED
    assert budget_hits(lore, P.GENERAL) == []
    assert lore.stores.messages.passages_of(P.GUILD, P.GENERAL, mid) == []


def test_a_private_discord_channels_file_never_reaches_another_channels_read(lore, cdn):
    share(
        lore,
        P.snowflake(1),
        P.LEADERSHIP,
        "The Falcon numbers, do not share.",
        [attachment(f"{cdn.url}/attachments/200/7001/report.pdf")],
    )
    share(lore, P.snowflake(2), P.GENERAL, "The Falcon kickoff is on Monday.", [])

    assert budget_hits(lore, P.LEADERSHIP)  # control: the same query inside the channel
    assert budget_hits(lore, P.GENERAL) == []
    answer = lore.ask("what is the Falcon launch budget?", Scope(P.GUILD, [P.GENERAL]))
    assert "40 thousand" not in answer.text


def test_an_attachment_on_another_host_is_refused_and_its_message_stored(lore, cdn, elsewhere):
    mid = P.snowflake(1)
    share(
        lore,
        mid,
        P.GENERAL,
        "The Falcon kickoff is on Monday.",
        [
            attachment(f"{cdn.url}/attachments/200/7001/report.pdf"),  # control: the CDN is fetched
            attachment(f"{elsewhere.url}/report.pdf", "copy.pdf", "7002"),
        ],
    )

    assert elsewhere.requests == []  # nothing was sent there
    assert [r.path for r in cdn.requests] == ["/attachments/200/7001/report.pdf"]
    refs = {r.name: r for r in lore.search_media_references(Scope(P.GUILD, [P.GENERAL]), "", "pdf")}
    host = elsewhere.url.removeprefix("http://")
    assert (refs["copy.pdf"].status, refs["copy.pdf"].detail) == (
        "skipped",
        f"not fetched: not a Discord file link ({host})",
    )
    assert refs["report.pdf"].status == "extracted"
    assert (
        lore.stores.messages.get_message(P.GUILD, P.GENERAL, mid).text == "The Falcon kickoff is on Monday."
    )


def test_a_cdn_redirect_to_another_host_is_not_followed(tmp_path, embedder, clock, elsewhere):
    moved = Response(302, None, {"Location": f"{elsewhere.url}/report.pdf"})
    with local_server(lambda request: moved) as cdn:
        settings = Settings(data_dir=tmp_path / "store", discord_file_origins=cdn.url, _env_file=None)
        lore = Teamlore(settings, embedder=embedder, clock=clock)
        try:
            share(lore, P.snowflake(1), P.GENERAL, "The report.", [attachment(f"{cdn.url}/a/report.pdf")])
            (ref,) = lore.search_media_references(Scope(P.GUILD, [P.GENERAL]), "report")
        finally:
            lore.close()
    assert elsewhere.requests == []
    host = elsewhere.url.removeprefix("http://")
    assert (ref.status, ref.detail) == (
        "skipped",
        f"not fetched: Discord redirected the download to another server ({host}); not followed",
    )


def test_production_fetches_discord_files_from_discords_cdn_only():
    default = Settings.model_fields["discord_file_origins"].default
    fetcher = file_fetchers(Settings(discord_file_origins=default, _env_file=None))["discord"]
    assert fetcher._source.origins == {"https://cdn.discordapp.com", "https://media.discordapp.net"}
    assert fetcher._source.token == ""
