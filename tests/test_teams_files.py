"""Files shared in Microsoft Teams become knowledge (issue 21): a Graph channel message carries a
``reference`` attachment (a SharePoint link); the worker asks the local Graph for the item the
link names (``/shares/u!.../driveItem/content``) with the app token, follows Graph's redirect to
the local "SharePoint" without it, reads the PDF made in the test in the sandbox, and takes its
passages as messages of the Teams message. The token goes to Graph's origin only."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from teamlore.app import Teamlore, file_fetchers
from teamlore.config import Settings
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.teams.graph import graph_event
from teamlore.connectors.teams.normalize import Place
from teamlore.domain import FactStatus, ReadView, Scope, Visibility
from teamlore.errors import BackendUnavailable
from teamlore.files.fetch import allowed, origin_of, teams_source

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
from .test_shared_files import BUDGET_PAGES
from .test_teams import BOARD, GENERAL, TENANT, graph_message

TOKEN = "graph-token"
LINK = "https://acme.sharepoint.com/sites/eng/Shared%20Documents/General/report.pdf"
LINK_V2 = "https://acme.sharepoint.com/sites/eng/Shared%20Documents/General/report%20v2.pdf"
VENDORS_LINK = "https://acme.sharepoint.com/sites/eng/Shared%20Documents/General/vendors.pdf"
# The pre-authenticated download Graph redirects each link to, and what SharePoint serves there.
DOWNLOADS = {LINK: "t1", LINK_V2: "t2", VENDORS_LINK: "t3"}
CONTENTS = {
    "t1": made.pdf(BUDGET_PAGES),
    "t2": made.pdf(newer_pages(BUDGET_PAGES)),
    "t3": made.pdf(VENDOR_PAGES),
}
MIMES: dict[str, str] = {}  # a download's Content-Type, when not a PDF
OFFICE_LINKS = []
for _i, (_name, _mime, _data) in enumerate(OFFICE_FILES):
    _link = f"https://acme.sharepoint.com/sites/eng/Shared%20Documents/General/{_name}"
    DOWNLOADS[_link] = f"o{_i}"
    CONTENTS[f"o{_i}"] = _data
    MIMES[f"o{_i}"] = _mime
    OFFICE_LINKS.append((_name, _link))
BOB = {"id": "aad-bob", "displayName": "Bob Example"}
PLACES = {
    GENERAL: Place(TENANT, GENERAL, "General", Visibility.PUBLIC),
    BOARD: Place(TENANT, BOARD, "Board", Visibility.PRIVATE),
}


def linked(url: str) -> str:
    """The link a Graph share id names."""
    encoded = url.removeprefix("u!")
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()


@pytest.fixture
def sharepoint() -> Iterator[LocalServer]:
    def handle(request: Request) -> Response:
        tempauth = request.query.get("tempauth", "")
        found = CONTENTS.get(tempauth)
        mime = MIMES.get(tempauth, made.PDF_MIME)
        return Response(200, found, {"Content-Type": mime}) if found else Response(404, {})

    with local_server(handle) as server:
        yield server


@pytest.fixture
def elsewhere() -> Iterator[LocalServer]:
    with local_server(lambda request: Response(200, b"%PDF-1.4 stolen")) as server:
        yield server


@pytest.fixture
def redirect_to(sharepoint: LocalServer) -> dict[str, str]:
    return {"origin": sharepoint.url}  # where Graph sends a download


@pytest.fixture
def graph(redirect_to: dict[str, str]) -> Iterator[LocalServer]:
    """``GET /v1.0/shares/{id}/driveItem/content``: the app token required, then a redirect to a
    pre-authenticated download link (as Graph answers)."""

    def handle(request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return Response(401, {"error": {"code": "InvalidAuthenticationToken"}})
        parts = request.path.split("/")
        if parts[:3] != ["", "v1.0", "shares"] or parts[4:] != ["driveItem", "content"]:
            return Response(404, {"error": {"code": "itemNotFound"}})
        download = DOWNLOADS.get(linked(parts[3]))
        if download is None:
            return Response(404, {"error": {"code": "itemNotFound"}})
        return Response(302, None, {"Location": f"{redirect_to['origin']}/download.aspx?tempauth={download}"})

    with local_server(handle) as server:
        yield server


def open_lore(
    tmp_path: Path, embedder: Any, clock: Any, graph: LocalServer, sharepoint: LocalServer, token=None
):
    settings = Settings(
        data_dir=tmp_path / "store",
        teams_graph_url=f"{graph.url}/v1.0",
        teams_file_origins=sharepoint.url,
        _env_file=None,
    )
    opened = Teamlore(settings, embedder=embedder, clock=clock)
    opened.files.fetchers = file_fetchers(settings, graph_token=token or (lambda: TOKEN))
    return opened


@pytest.fixture
def lore(tmp_path, embedder, clock, graph, sharepoint) -> Iterator[Teamlore]:
    opened = open_lore(tmp_path, embedder, clock, graph, sharepoint)
    yield opened
    opened.close()


def share(
    lore: Teamlore,
    mid: str,
    text: str,
    channel: str = GENERAL,
    minute: int = 0,
    file: tuple[str, str] = ("report.pdf", LINK),
    sender: dict[str, str] | None = None,
    at: str | None = None,
    files: list[tuple[str, str]] | None = None,
    **extra: Any,
) -> None:
    message = graph_message(mid, text, minute, **extra)
    if at is not None:  # a time past the hour graph_message's minutes reach
        message["createdDateTime"] = message["lastModifiedDateTime"] = at
    message["channelIdentity"]["channelId"] = channel
    message["attachments"] = [
        {"id": f"a{i + 1}", "contentType": "reference", "contentUrl": link, "name": name}
        for i, (name, link) in enumerate(files or [file])
    ]
    if sender is not None:
        message["from"]["user"] |= sender
    found = graph_event(message, PLACES[channel], lore.settings.max_message_chars)
    assert found is not None
    EventSink(lore).deliver([found])


def budget_hits(lore: Teamlore, *channels: str) -> list[Any]:
    result = lore.reader.search("Falcon launch budget", Scope(TENANT, channels), k=5)
    return [hit for hit in result.hits if "40 thousand" in hit.text]


def media(lore: Teamlore, channel: str = GENERAL) -> dict[str, tuple[str, str]]:
    return {
        r.name: (r.status, r.detail) for r in lore.search_media_references(Scope(TENANT, [channel]), "report")
    }


def test_a_fact_on_page_2_of_a_pdf_shared_in_teams_is_found_and_cited_with_the_file_and_page(
    lore, graph, sharepoint
):
    share(lore, "2001", "Here is the Falcon report.")

    (asked,) = graph.requests
    assert asked.headers["authorization"] == f"Bearer {TOKEN}" and linked(asked.path.split("/")[3]) == LINK
    (download,) = sharepoint.requests
    assert "authorization" not in download.headers  # the pre-authenticated link gets no token
    (fact, *_) = [h for h in budget_hits(lore, GENERAL) if h.kind == "fact"]
    (source,) = fact.sources
    assert (source.file_ref, source.shared_in) == ("report.pdf, p. 2", "2001")
    assert source.permalink.startswith("https://teams.microsoft.com/l/message/")
    assert media(lore) == {"report.pdf": ("extracted", "pdf: 3 pages, 3 passages")}


def test_word_excel_and_powerpoint_files_shared_in_teams_are_read_with_their_sheet_and_slide(lore):
    share(lore, "2001", "Planning files for Falcon.", files=OFFICE_LINKS)

    check_office_files_read(lore, Scope(TENANT, [GENERAL]))


def test_deleting_the_teams_message_retracts_what_only_its_file_supported(lore):
    share(lore, "2001", "Here is the Falcon report.")
    (fact, *_) = [h.fact for h in budget_hits(lore, GENERAL) if h.kind == "fact"]

    gone = graph_event(graph_message("2001", "", 0, deleted=True), PLACES[GENERAL], 40_000)
    assert gone is not None
    EventSink(lore).deliver([gone])

    history = lore.reader.history(fact.fact_id, Scope(TENANT, [GENERAL]))
    assert history.versions[-1].fact.status is FactStatus.RETRACTED
    assert budget_hits(lore, GENERAL) == []
    assert lore.stores.messages.passages_of(TENANT, GENERAL, "2001") == []


def test_a_private_teams_channels_file_never_reaches_another_channels_read(lore):
    share(lore, "2001", "The Falcon numbers, do not share.", channel=BOARD)

    assert budget_hits(lore, BOARD)  # control: the same query inside the channel
    assert budget_hits(lore, GENERAL) == []
    answer = lore.ask("what is the Falcon launch budget?", Scope(TENANT, [GENERAL]))
    assert "40 thousand" not in answer.text


def test_a_graph_redirect_off_the_download_origins_is_not_followed(lore, redirect_to, elsewhere, sharepoint):
    redirect_to["origin"] = elsewhere.url

    share(lore, "2001", "The Falcon kickoff is on Monday.")

    assert elsewhere.requests == [] and sharepoint.requests == []
    host = elsewhere.url.removeprefix("http://")
    assert media(lore) == {
        "report.pdf": (
            "skipped",
            f"not fetched: Microsoft Graph redirected the download to another server ({host}); not followed",
        )
    }
    assert (
        lore.stores.messages.get_message(TENANT, GENERAL, "2001").text == "The Falcon kickoff is on Monday."
    )


def test_no_graph_token_now_is_a_failed_fetch_tried_again_later(tmp_path, embedder, clock, graph, sharepoint):
    def no_token() -> str:
        raise BackendUnavailable("no Graph token: AADSTS7000215 invalid client secret")

    lore = open_lore(tmp_path, embedder, clock, graph, sharepoint, token=no_token)
    try:
        share(lore, "2001", "The Falcon kickoff is on Monday.")
        assert media(lore) == {
            "report.pdf": (
                "failed",
                "not fetched: Microsoft Graph: no Graph token: AADSTS7000215 invalid client secret",
            )
        }
        assert graph.requests == []
        lore.files.fetchers = file_fetchers(lore.settings, graph_token=lambda: TOKEN)
        (retried,) = lore.retry_files(Scope(TENANT, [GENERAL]))
        assert retried.status.value == "extracted"
    finally:
        lore.close()


def test_production_sends_the_graph_token_to_graph_only_and_downloads_from_sharepoint():
    defaults = Settings.model_fields
    source = teams_source(
        lambda: TOKEN, defaults["teams_graph_url"].default, defaults["teams_file_origins"].default
    )
    assert source.token_origins == {"https://graph.microsoft.com"}
    assert allowed(origin_of("https://graph.microsoft.com/v1.0/shares/u!x/driveItem/content"), source.origins)
    assert allowed(origin_of("https://acme-my.sharepoint.com/personal/a/download.aspx"), source.origins)
    for foreign in (
        "https://sharepoint.com.evil.example/x",
        "http://acme.sharepoint.com/x",
        "https://evilsharepoint.com/",
    ):
        assert not allowed(origin_of(foreign), source.origins), foreign


def test_the_wiki_shows_a_statement_from_a_teams_file_with_its_file_and_page_and_links_the_message(lore):
    share(lore, "2001", "Here is the Falcon report.")
    permalink = graph_message("2001", "", 0)["webUrl"]

    shown = wiki_lines(lore, Scope(TENANT, [GENERAL]), "40 thousand euros")
    assert shown and all(f", report.pdf, p. 2]({permalink})" in line for line in shown)
    (fact, *_) = [h for h in budget_hits(lore, GENERAL) if h.kind == "fact"]
    (source,) = fact.sources
    page = web_message_page(lore, TENANT, GENERAL, source.message_id)  # the citation's target
    assert page.status_code == 200
    assert "From a shared file" in page.text and "report.pdf, p. 2" in page.text
    assert "40 thousand euros" in page.text
    assert f'href="/wiki/{GENERAL}/messages/2001"' in page.text  # the message that shared it


def test_a_newer_version_of_a_file_shared_in_teams_supersedes_what_the_older_one_said(lore):
    share(lore, "2001", "Here is the Falcon report.")
    later = "2026-02-10T11:30:00.000Z"  # an hour and a half later
    share(lore, "2002", "The updated Falcon report.", at=later, file=("report v2.pdf", LINK_V2))

    scope = Scope(TENANT, [GENERAL])
    now = lore.reader.search("Falcon launch budget", scope, k=10)
    (top, *_) = [h for h in now.hits if h.kind == "fact"]
    assert NEWER in top.fact.statement
    assert [(s.file_ref, s.shared_in) for s in top.sources] == [("report v2.pdf, p. 2", "2002")]
    assert not any("40 thousand" in h.text for h in now.hits if h.kind == "fact")
    before = ReadView(valid_at=datetime(2026, 2, 10, 10, 45, tzinfo=UTC))  # before the newer version
    then = lore.reader.search("Falcon launch budget", scope, view=before, k=10)
    (was,) = [h for h in then.hits if h.kind == "fact" and "budget is" in h.text]
    assert "40 thousand" in was.text and [s.file_ref for s in was.sources] == ["report.pdf, p. 2"]
    (replaced,) = top.fact.supersedes
    older = lore.reader.history(replaced, scope).versions[-1].fact
    assert older.status is FactStatus.SUPERSEDED and "40 thousand" in older.statement


def test_erasing_the_person_who_shared_a_teams_file_removes_it_its_passages_and_their_facts(lore):
    share(lore, "2001", "Here is the Falcon report.", sender=BOB)
    share(lore, "2002", "The vendor list.", minute=1, file=("vendors.pdf", VENDORS_LINK))  # the control
    scope = Scope(TENANT, [GENERAL])
    assert [h for h in budget_hits(lore, GENERAL) if h.kind == "fact"]
    (kept,) = lore.stores.files.of_messages(TENANT, [(GENERAL, "2002")])
    assert len(blob_names(lore)) == 2

    erased = lore.erase_author(TENANT, BOB["id"], "dpo")

    assert (erased.files, erased.blobs) == (1, 1)
    assert budget_hits(lore, GENERAL) == []  # no fact, no passage says it any more
    rows = passage_rows(lore, "2001")
    assert rows and all(row == ("", "", "") for row in rows)
    assert lore.stores.files.of_messages(TENANT, [(GENERAL, "2001")]) == []
    assert media(lore) == {}
    assert blob_names(lore) == [kept.sha256]
    # Alice's file, its passages and its fact stay.
    assert [(r.name, r.status.value) for r in lore.stores.files.of_messages(TENANT, [(GENERAL, "2002")])] == [
        ("vendors.pdf", "extracted")
    ]
    assert [(text != "", name, ref) for text, name, ref in passage_rows(lore, "2002")] == [
        (True, "Alice Example", "vendors.pdf, p. 1")
    ]
    found = lore.reader.search("Falcon badge vendor", scope, k=5)
    assert any(
        h.kind == "fact" and "Initech" in h.text and [s.file_ref for s in h.sources] == ["vendors.pdf, p. 1"]
        for h in found.hits
    )
