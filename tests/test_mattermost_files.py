"""Files shared on Mattermost become knowledge (issue 21): a PDF made in the test is uploaded to the
local Mattermost, a post carries it (``file_ids`` and ``metadata.files``), the connector's own
translation records the file, and the worker fetches ``/api/v4/files/{id}`` with the bot token,
reads it in the sandbox and takes its passages as messages of the post. The token goes to the
configured server's origin only: not to a link elsewhere, not through a redirect elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.mattermost.posts import MattermostChannel, PostContext, post_event
from teamlore.domain import Attachment, EventKind, FactStatus, ReadView, Scope, Visibility

from . import files_made as made
from .conftest import event
from .fake_mattermost import TOKEN, FakeMattermost
from .local_http import LocalServer, Response, local_server
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
from .test_mattermost_connector import JAN5_MS, WS, post
from .test_shared_files import BUDGET_PAGES

CHANNELS = {
    "town": MattermostChannel("town", "town-square", Visibility.PUBLIC, "team1"),
    "priv": MattermostChannel("priv", "deals", Visibility.PRIVATE, "team1"),
}


@pytest.fixture
def mm() -> Iterator[FakeMattermost]:
    with FakeMattermost() as fake:
        fake.add_channel("town", "town-square")
        fake.add_channel("priv", "deals", "P")
        yield fake


@pytest.fixture
def elsewhere() -> Iterator[LocalServer]:
    """Another server on the same machine, recording what it is sent."""
    with local_server(
        lambda request: Response(200, b"%PDF-1.4 stolen", {"Content-Type": made.PDF_MIME})
    ) as server:
        yield server


def open_lore(tmp_path: Path, embedder: Any, clock: Any, mm: FakeMattermost, token: str = TOKEN) -> Teamlore:
    settings = Settings(
        data_dir=tmp_path / "store",
        mattermost_url=mm.url,
        mattermost_token=token,
        mattermost_workspace=WS,
        _env_file=None,
    )
    return Teamlore(settings, embedder=embedder, clock=clock)


@pytest.fixture
def lore(tmp_path, embedder, clock, mm) -> Iterator[Teamlore]:
    opened = open_lore(tmp_path, embedder, clock, mm)
    yield opened
    opened.close()


class Chat:
    """Mattermost posts as the listener translates them, delivered through the EventSink."""

    def __init__(self, lore: Teamlore, mm: FakeMattermost) -> None:
        self.lore, self.sink = lore, EventSink(lore)
        self.context = PostContext(WS, mm.url, lore.settings.max_message_chars)

    def post(
        self,
        post_id: str,
        text: str,
        channel: str = "town",
        files: list[dict[str, Any]] = (),
        n: int = 0,
        user: str = "u1",
    ) -> None:
        body = post(post_id, text, channel, user=user, at=JAN5_MS + n * 60_000)
        if files:
            body |= {"file_ids": [f["id"] for f in files], "metadata": {"files": list(files)}}
        self._deliver(body, EventKind.CREATED, channel)

    def delete(self, post_id: str, channel: str = "town") -> None:
        body = post(post_id, "", channel) | {"delete_at": JAN5_MS + 3_600_000}
        self._deliver(body, EventKind.DELETED, channel)

    def _deliver(self, body: dict[str, Any], kind: EventKind, channel: str) -> None:
        name = "bob" if body["user_id"] == "u2" else "alice"  # as the listener resolves the sender
        self.sink.deliver([post_event(body, kind, CHANNELS[channel], name, "acme", self.context)])
        self.lore.wiki.flush(everything=True)


@pytest.fixture
def chat(lore, mm) -> Chat:
    return Chat(lore, mm)


def budget_hits(lore: Teamlore, *channels: str) -> list[Any]:
    result = lore.reader.search("Falcon launch budget", Scope(WS, channels), k=5)
    return [hit for hit in result.hits if "40 thousand" in hit.text]


def media(lore: Teamlore, channel: str = "town") -> dict[str, tuple[str, str]]:
    return {
        r.name: (r.status, r.detail) for r in lore.search_media_references(Scope(WS, [channel]), "", "pdf")
    }


def test_a_fact_on_page_2_of_a_pdf_shared_on_mattermost_is_found_and_cited_with_the_file_and_page(
    lore, mm, chat
):
    chat.post(
        "p1",
        "Here is the Falcon report.",
        files=[mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))],
    )

    assert mm.downloads == [("/api/v4/files/f1", f"Bearer {TOKEN}")]  # same origin: the token goes
    (fact, *_) = [h for h in budget_hits(lore, "town") if h.kind == "fact"]
    (source,) = fact.sources
    assert (source.file_ref, source.shared_in) == ("report.pdf, p. 2", "p1")
    assert source.permalink == f"{mm.url}/acme/pl/p1"
    assert media(lore) == {"report.pdf": ("extracted", "pdf: 3 pages, 3 passages")}


def test_word_excel_and_powerpoint_files_shared_on_mattermost_are_read_with_their_sheet_and_slide(
    lore, mm, chat
):
    files = [mm.share(f"f{2 + i}", *made_file) for i, made_file in enumerate(OFFICE_FILES)]
    chat.post("p1", "Planning files for Falcon.", files=files)

    check_office_files_read(lore, Scope(WS, ["town"]))


def test_deleting_the_mattermost_post_retracts_what_only_its_file_supported(lore, mm, chat):
    chat.post(
        "p1",
        "Here is the Falcon report.",
        files=[mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))],
    )
    (fact, *_) = [h.fact for h in budget_hits(lore, "town") if h.kind == "fact"]

    chat.delete("p1")

    history = lore.reader.history(fact.fact_id, Scope(WS, ["town"]))
    assert history.versions[-1].fact.status is FactStatus.RETRACTED
    assert budget_hits(lore, "town") == []
    assert lore.stores.messages.passages_of(WS, "town", "p1") == []
    assert media(lore) == {}


def test_a_private_mattermost_channels_file_never_reaches_another_channels_read(lore, mm, chat):
    report = mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    chat.post("p1", "The Falcon numbers, do not share.", "priv", files=[report])
    chat.post("p2", "The Falcon kickoff is on Monday.", n=1)

    assert budget_hits(lore, "priv")  # control: the same query inside the channel
    assert budget_hits(lore, "town") == []
    answer = lore.ask("what is the Falcon launch budget?", Scope(WS, ["town"]))
    assert "40 thousand" not in answer.text


def test_a_redirect_to_another_server_is_not_followed_and_gets_no_token(lore, mm, chat, elsewhere):
    report = made.pdf(BUDGET_PAGES)
    same = mm.share("f1", "report.pdf", made.PDF_MIME, report)
    moved_here = mm.share("f2", "moved.pdf", made.PDF_MIME, report)
    moved_away = mm.share("f3", "away.pdf", made.PDF_MIME, report)
    mm.file_redirects["f2"] = f"{mm.url}/api/v4/files/f1"  # control: a redirect within the server
    mm.file_redirects["f3"] = f"{elsewhere.url}/stolen"

    chat.post("p1", "Three copies of the report.", files=[same, moved_here, moved_away])

    assert elsewhere.requests == []  # neither the token nor anything else was sent there
    assert all(auth == f"Bearer {TOKEN}" for _, auth in mm.downloads)
    assert sorted(path for path, _ in mm.downloads) == [
        "/api/v4/files/f1",
        "/api/v4/files/f1",  # f2's redirect, followed with the token
        "/api/v4/files/f2",
        "/api/v4/files/f3",
    ]
    host = elsewhere.url.removeprefix("http://")
    assert media(lore) == {
        "report.pdf": ("extracted", "pdf: 3 pages, 3 passages"),
        "moved.pdf": ("extracted", "pdf: 3 pages, 3 passages"),
        "away.pdf": (
            "skipped",
            f"not fetched: Mattermost redirected the download to another server ({host}); not followed",
        ),
    }


def test_a_link_to_another_server_in_an_event_gets_no_token_and_its_message_is_stored(lore, elsewhere):
    stolen = Attachment(
        name="report.pdf", mime_type=made.PDF_MIME, url="", download_url=f"{elsewhere.url}/api/v4/files/f1"
    )
    lore.ingest(
        [
            event(
                "The Falcon kickoff is on Monday.",
                message_id="e1",
                workspace=WS,
                channel="town",
                platform="mattermost",
                attachments=[stolen],
            )
        ]
    )

    assert elsewhere.requests == []
    host = elsewhere.url.removeprefix("http://")
    assert media(lore) == {"report.pdf": ("skipped", f"not fetched: not a Mattermost file link ({host})")}
    assert lore.stores.messages.get_message(WS, "town", "e1").text == "The Falcon kickoff is on Monday."


def test_a_refused_token_is_recorded_and_fetched_again_by_reindex(tmp_path, embedder, clock, mm):
    wrong = open_lore(tmp_path, embedder, clock, mm, token="not-the-bot")
    try:
        Chat(wrong, mm).post(
            "p1", "The report.", files=[mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))]
        )
        assert media(wrong) == {
            "report.pdf": (
                "failed",
                "not fetched: Mattermost refused the file (HTTP 401): the bot cannot read it"
                " (is it a member of the channel?)",
            )
        }
        assert mm.downloads == [("/api/v4/files/f1", "Bearer not-the-bot")]
    finally:
        wrong.close()
    fixed = open_lore(tmp_path, embedder, clock, mm)
    try:
        (retried,) = fixed.retry_files(Scope(WS, ["town"]))
        assert (retried.status.value, retried.attempts) == ("extracted", 2)
        assert budget_hits(fixed, "town")
    finally:
        fixed.close()


def test_without_a_mattermost_token_a_file_is_recorded_as_not_fetched(tmp_path, embedder, clock, mm):
    bare = open_lore(tmp_path, embedder, clock, mm, token="")
    try:
        Chat(bare, mm).post(
            "p1",
            "The Falcon kickoff is on Monday.",
            files=[mm.share("f1", "report.pdf", made.PDF_MIME, b"%PDF")],
        )
        assert media(bare) == {
            "report.pdf": (
                "failed",
                "not fetched: no Mattermost server and bot token (TEAMLORE_MATTERMOST_URL,"
                " TEAMLORE_MATTERMOST_TOKEN)",
            )
        }
        assert mm.downloads == []
    finally:
        bare.close()


def test_the_wiki_shows_a_statement_from_a_mattermost_file_with_its_file_and_page_and_links_the_post(
    lore, mm, chat
):
    chat.post(
        "p1",
        "Here is the Falcon report.",
        files=[mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))],
    )
    permalink = f"{mm.url}/acme/pl/p1"

    shown = wiki_lines(lore, Scope(WS, ["town"]), "40 thousand euros")
    assert shown and all(f", report.pdf, p. 2]({permalink})" in line for line in shown)
    (fact, *_) = [h for h in budget_hits(lore, "town") if h.kind == "fact"]
    (source,) = fact.sources
    page = web_message_page(lore, WS, "town", source.message_id)  # the citation's target
    assert page.status_code == 200
    assert "From a shared file" in page.text and "report.pdf, p. 2" in page.text
    assert "40 thousand euros" in page.text
    assert 'href="/wiki/town/messages/p1"' in page.text  # the post that shared it


def test_a_newer_version_of_a_file_shared_on_mattermost_supersedes_what_the_older_one_said(lore, mm, chat):
    chat.post(
        "p1",
        "Here is the Falcon report.",
        files=[mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))],
    )
    newer = mm.share("f2", "report v2.pdf", made.PDF_MIME, made.pdf(newer_pages(BUDGET_PAGES)))
    chat.post("p2", "The updated Falcon report.", files=[newer], n=90)  # an hour and a half later

    scope = Scope(WS, ["town"])
    now = lore.reader.search("Falcon launch budget", scope, k=10)
    (top, *_) = [h for h in now.hits if h.kind == "fact"]
    assert NEWER in top.fact.statement
    assert [(s.file_ref, s.shared_in) for s in top.sources] == [("report v2.pdf, p. 2", "p2")]
    assert not any("40 thousand" in h.text for h in now.hits if h.kind == "fact")
    jan5 = datetime.fromtimestamp(JAN5_MS / 1000, UTC)
    before = ReadView(valid_at=jan5 + timedelta(minutes=45))  # as of before the newer version
    then = lore.reader.search("Falcon launch budget", scope, view=before, k=10)
    (was,) = [h for h in then.hits if h.kind == "fact" and "budget is" in h.text]
    assert "40 thousand" in was.text and [s.file_ref for s in was.sources] == ["report.pdf, p. 2"]
    (replaced,) = top.fact.supersedes
    older = lore.reader.history(replaced, scope).versions[-1].fact
    assert older.status is FactStatus.SUPERSEDED and "40 thousand" in older.statement


def test_erasing_the_person_who_shared_a_mattermost_file_removes_it_its_passages_and_their_facts(
    lore, mm, chat
):
    report = mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    chat.post("p1", "Here is the Falcon report.", files=[report], user="u2")
    vendors = mm.share("f3", "vendors.pdf", made.PDF_MIME, made.pdf(VENDOR_PAGES))
    chat.post("p2", "The vendor list.", files=[vendors], n=1)  # the control: another person's file
    scope = Scope(WS, ["town"])
    assert [h for h in budget_hits(lore, "town") if h.kind == "fact"]
    (kept,) = lore.stores.files.of_messages(WS, [("town", "p2")])
    assert len(blob_names(lore)) == 2

    erased = lore.erase_author(WS, "u2", "dpo")

    assert (erased.files, erased.blobs) == (1, 1)
    assert budget_hits(lore, "town") == []  # no fact, no passage says it any more
    rows = passage_rows(lore, "p1")
    assert rows and all(row == ("", "", "") for row in rows)
    assert lore.stores.files.of_messages(WS, [("town", "p1")]) == []
    assert lore.search_media_references(scope, "report") == []
    assert blob_names(lore) == [kept.sha256]
    # Alice's file, its passages and its fact stay.
    assert media(lore) == {"vendors.pdf": ("extracted", "pdf: 1 page, 1 passage")}
    assert [(text != "", name, ref) for text, name, ref in passage_rows(lore, "p2")] == [
        (True, "alice", "vendors.pdf, p. 1")
    ]
    found = lore.reader.search("Falcon badge vendor", scope, k=5)
    assert any(
        h.kind == "fact" and "Initech" in h.text and [s.file_ref for s in h.sources] == ["vendors.pdf, p. 1"]
        for h in found.hits
    )
