"""Files shared on Discord become knowledge (issue 21): a PDF made in the test is attached to a
gateway message, its link on a local CDN (real HTTP; the CDN's origin is configured as Discord's,
as cdn.discordapp.com is in production), fetched with no token, read in the sandbox, and its
passages found by search with the file and page, private where their channel is, retracted with
the message. A link to any other host is refused before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from teamlore.app import Teamlore, file_fetchers
from teamlore.config import Settings
from teamlore.domain import FactStatus, ReadView, Scope

from . import discord_payloads as P
from . import files_made as made
from .local_http import LocalServer, Request, Response, local_server
from .shared_file_checks import (
    NEWER,
    OFFICE_FILES,
    VENDOR_PAGES,
    blob_names,
    check_office_files_read,
    newer_pages,
    passage_rows,
    web_message_page,
    wiki_lines,
)
from .test_discord import run_bot
from .test_shared_files import BUDGET_PAGES

REPORT = made.pdf(BUDGET_PAGES)
REPORT_V2 = made.pdf(newer_pages(BUDGET_PAGES))
VENDORS = made.pdf(VENDOR_PAGES)


def serve_files(files: dict[str, bytes]) -> Any:
    def handler(request: Request) -> Response:
        found = files.get(request.path)
        if not found:
            return Response(404, {})
        mime = next((m for name, m, _ in OFFICE_FILES if request.path.endswith(name)), made.PDF_MIME)
        return Response(200, found, {"Content-Type": mime})

    return handler


@pytest.fixture
def cdn() -> Iterator[LocalServer]:
    files = {
        "/attachments/200/7001/report.pdf": REPORT,
        "/attachments/200/7002/report_v2.pdf": REPORT_V2,
        "/attachments/200/7003/vendors.pdf": VENDORS,
        **{f"/attachments/200/{7004 + i}/{name}": data for i, (name, _, data) in enumerate(OFFICE_FILES)},
    }
    with local_server(serve_files(files)) as server:
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


def attachment(
    url: str,
    name: str = "report.pdf",
    aid: str = "7001",
    size: int = len(REPORT),
    mime: str = made.PDF_MIME,
) -> dict[str, Any]:
    return {
        "id": aid,
        "filename": name,
        "size": size,
        "url": url,
        "proxy_url": url,
        "content_type": mime,
    }


def share(
    lore: Teamlore,
    mid: str,
    channel: str,
    text: str,
    attachments: list[dict[str, Any]],
    author: dict[str, Any] = P.ALICE,
) -> None:
    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_CREATE"](P.message(mid, channel, text, author=author, attachments=attachments))

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


def test_word_excel_and_powerpoint_files_shared_on_discord_are_read_with_their_sheet_and_slide(lore, cdn):
    files = [
        attachment(f"{cdn.url}/attachments/200/{7004 + i}/{name}", name, str(7004 + i), len(data), mime)
        for i, (name, mime, data) in enumerate(OFFICE_FILES)
    ]
    share(lore, P.snowflake(1), P.GENERAL, "Planning files for Falcon.", files)

    check_office_files_read(lore, Scope(P.GUILD, [P.GENERAL]))


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


def test_the_wiki_shows_a_statement_from_a_discord_file_with_its_file_and_page_and_links_the_message(
    lore, cdn
):
    mid = P.snowflake(1)
    share(
        lore,
        mid,
        P.GENERAL,
        "Here is the Falcon report.",
        [attachment(f"{cdn.url}/attachments/200/7001/report.pdf")],
    )
    permalink = f"https://discord.com/channels/{P.GUILD}/{P.GENERAL}/{mid}"

    shown = wiki_lines(lore, Scope(P.GUILD, [P.GENERAL]), "40 thousand euros")
    assert shown and all(f", report.pdf, p. 2]({permalink})" in line for line in shown)
    (fact, *_) = [h for h in budget_hits(lore, P.GENERAL) if h.kind == "fact"]
    (source,) = fact.sources
    page = web_message_page(lore, P.GUILD, P.GENERAL, source.message_id)  # the citation's target
    assert page.status_code == 200
    assert "From a shared file" in page.text and "report.pdf, p. 2" in page.text
    assert "40 thousand euros" in page.text
    assert f'href="/wiki/{P.GENERAL}/messages/{mid}"' in page.text  # the message that shared it


def test_a_newer_version_of_a_file_shared_on_discord_supersedes_what_the_older_one_said(lore, cdn):
    share(
        lore,
        P.snowflake(1),
        P.GENERAL,
        "Here is the Falcon report.",
        [attachment(f"{cdn.url}/attachments/200/7001/report.pdf")],
    )
    newer = P.snowflake(90)  # an hour and a half later
    share(
        lore,
        newer,
        P.GENERAL,
        "The updated Falcon report.",
        [
            attachment(
                f"{cdn.url}/attachments/200/7002/report_v2.pdf", "report v2.pdf", "7002", len(REPORT_V2)
            )
        ],
    )

    scope = Scope(P.GUILD, [P.GENERAL])
    now = lore.reader.search("Falcon launch budget", scope, k=10)
    (top, *_) = [h for h in now.hits if h.kind == "fact"]
    assert NEWER in top.fact.statement
    assert [(s.file_ref, s.shared_in) for s in top.sources] == [("report v2.pdf, p. 2", newer)]
    assert not any("40 thousand" in h.text for h in now.hits if h.kind == "fact")
    before = ReadView(valid_at=P.T0 + timedelta(minutes=45))  # as of before the newer version
    then = lore.reader.search("Falcon launch budget", scope, view=before, k=10)
    (was,) = [h for h in then.hits if h.kind == "fact" and "budget is" in h.text]
    assert "40 thousand" in was.text and [s.file_ref for s in was.sources] == ["report.pdf, p. 2"]
    (replaced,) = top.fact.supersedes
    older = lore.reader.history(replaced, scope).versions[-1].fact
    assert older.status is FactStatus.SUPERSEDED and "40 thousand" in older.statement


def test_erasing_the_person_who_shared_a_discord_file_removes_it_its_passages_and_their_facts(lore, cdn):
    theirs, kept = P.snowflake(1), P.snowflake(2)
    share(
        lore,
        theirs,
        P.GENERAL,
        "Here is the Falcon report.",
        [attachment(f"{cdn.url}/attachments/200/7001/report.pdf")],
        author=P.BOB,
    )
    share(  # the control: another person's file
        lore,
        kept,
        P.GENERAL,
        "The vendor list.",
        [attachment(f"{cdn.url}/attachments/200/7003/vendors.pdf", "vendors.pdf", "7003", len(VENDORS))],
    )
    scope = Scope(P.GUILD, [P.GENERAL])
    assert [h for h in budget_hits(lore, P.GENERAL) if h.kind == "fact"]
    (vendors,) = lore.stores.files.of_messages(P.GUILD, [(P.GENERAL, kept)])
    assert len(blob_names(lore)) == 2

    erased = lore.erase_author(P.GUILD, P.BOB_ID, "dpo")

    assert (erased.files, erased.blobs) == (1, 1)
    assert budget_hits(lore, P.GENERAL) == []  # no fact, no passage says it any more
    rows = passage_rows(lore, theirs)
    assert rows and all(row == ("", "", "") for row in rows)
    assert lore.stores.files.of_messages(P.GUILD, [(P.GENERAL, theirs)]) == []
    assert lore.search_media_references(scope, "report") == []
    assert blob_names(lore) == [vendors.sha256]
    # Alice's file, its passages and its fact stay.
    assert [r.name for r in lore.stores.files.of_messages(P.GUILD, [(P.GENERAL, kept)])] == ["vendors.pdf"]
    assert [(text != "", name, ref) for text, name, ref in passage_rows(lore, kept)] == [
        (True, "Alice", "vendors.pdf, p. 1")
    ]
    found = lore.reader.search("Falcon badge vendor", scope, k=5)
    assert any(
        h.kind == "fact" and "Initech" in h.text and [s.file_ref for s in h.sources] == ["vendors.pdf, p. 1"]
        for h in found.hits
    )
