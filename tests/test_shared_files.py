"""Files shared in Slack become knowledge (issue 21): real files made in the test, shared through
the local Slack (its url_private served to the bot token only), fetched into the blob store beside
the SQLite file, read in a subprocess, and their passages taken as messages of the message that
shared them: found by search with the file and page, on the wiki, private where their channel is,
retracted with the message, gone after erasure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from teamlore.app import Teamlore
from teamlore.capabilities import views
from teamlore.config import Settings
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.slack.events import message_event
from teamlore.connectors.slack_export import SlackChannel, SlackContext
from teamlore.domain import FactStatus, ReadView, Scope, Visibility

from . import files_made as made
from .fake_slack import TEAM, TOKEN, FakeSlack

JAN5 = 1767607200  # 2026-01-05T10:00:00Z
BUDGET_PAGES = [
    "Falcon project report. This report covers the spring planning of the Falcon project.",
    "The Falcon launch budget is 40 thousand euros.\nThe budget was approved by the finance board.",
    "Appendix. Contacts and glossary for the Falcon project.",
]


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.add_channel("C1", "eng")
        fake.add_channel("CPRIV", "deals", private=True)
        yield fake


def open_lore(tmp_path: Path, embedder: Any, clock: Any, slack: FakeSlack, **settings: Any) -> Teamlore:
    chosen = Settings(
        data_dir=tmp_path / "store",
        slack_bot_token=TOKEN,
        slack_api_url=slack.base_url,
        _env_file=None,
        **settings,
    )
    return Teamlore(chosen, embedder=embedder, clock=clock)


@pytest.fixture
def lore(tmp_path, embedder, clock, slack) -> Iterator[Teamlore]:
    opened = open_lore(tmp_path, embedder, clock, slack)
    yield opened
    opened.close()


class Chat:
    """Slack messages as the live connector normalizes them, delivered through the EventSink."""

    def __init__(self, lore: Teamlore, slack: FakeSlack) -> None:
        self.lore, self.slack = lore, slack
        self.sink = EventSink(lore)
        users = {"U1": {"name": "alice"}, "U2": {"name": "bob"}}
        self.context = SlackContext(TEAM, users, "https://acme.slack.com/archives", 40_000)

    def post(self, n: int, text: str, channel: str = "C1", user: str = "U1", files=(), **extra: Any) -> str:
        stamp = f"{JAN5 + n * 60}.000100"
        body = {"type": "message", "user": user, "text": text, "ts": stamp, **extra}
        if files:
            body |= {"subtype": "file_share", "files": list(files)}
        self._deliver(body, channel)
        return stamp

    def delete(self, stamp: str, channel: str = "C1") -> None:
        body = {
            "type": "message",
            "subtype": "message_deleted",
            "deleted_ts": stamp,
            "ts": f"{JAN5 + 9999}.0",
        }
        self._deliver(body, channel)

    def _deliver(self, body: dict[str, Any], channel: str) -> None:
        private = channel == "CPRIV"
        where = SlackChannel(
            channel, "deals" if private else "eng", Visibility.PRIVATE if private else Visibility.PUBLIC
        )
        found = message_event(body, where, self.context)
        assert found is not None
        self.sink.deliver([found])
        self.lore.wiki.flush(everything=True)


@pytest.fixture
def chat(lore, slack) -> Chat:
    return Chat(lore, slack)


def facts_found(lore: Teamlore, query: str, *channels: str) -> list[Any]:
    result = lore.reader.search(query, Scope(TEAM, channels), k=5)
    return [hit for hit in result.hits if hit.kind == "fact"]


def test_a_fact_on_page_2_of_a_shared_pdf_is_found_and_cited_with_the_file_and_page(lore, slack, chat):
    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    shared = chat.post(1, "Here is the Falcon report.", files=[report])

    path, auth = slack.downloads[0]
    assert path.startswith("/files-pri/T1-F1/") and auth == f"Bearer {TOKEN}"
    hits = facts_found(lore, "Falcon launch budget", "C1")
    top = hits[0]
    assert "40 thousand euros" in top.fact.statement
    (source,) = top.sources
    assert (source.file_ref, source.shared_in) == ("report.pdf, p. 2", shared)
    assert source.permalink.endswith(f"/C1/p{shared.replace('.', '')}")  # the sharing message's link
    assert source.author_name == "alice"
    cited = views.fact_view_json(top)["sources"][0]
    assert (cited["file"], cited["shared_in"]) == ("report.pdf, p. 2", shared)

    # The bytes are kept once, named by their sha256, in a folder beside the SQLite file.
    blobs = lore.settings.db_path.with_name(lore.settings.db_path.stem + ".blobs")
    kept = [p for p in blobs.rglob("*") if p.is_file()]
    assert len(kept) == 1 and len(kept[0].name) == 64
    (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "report")
    assert (ref.status, ref.detail) == ("extracted", "pdf: 3 pages, 3 passages")
    assert views.media_json(ref)["status"] == "extracted"

    pages = [
        lore.pages.get(p.page.slug, Scope(TEAM, ["C1"])).markdown
        for p in lore.pages.list(Scope(TEAM, ["C1"]))
    ]
    on_wiki = [line for page in pages for line in page.splitlines() if "40 thousand euros" in line]
    assert on_wiki and all("report.pdf, p. 2" in line for line in on_wiki)


def test_deleting_the_sharing_message_retracts_what_only_the_file_supported(lore, slack, chat):
    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    shared = chat.post(1, "Here is the Falcon report.", files=[report])
    chat.post(2, "The Falcon kickoff is on Monday.")
    (fact,) = [
        h.fact for h in facts_found(lore, "Falcon launch budget", "C1") if "40 thousand" in h.fact.statement
    ]

    chat.delete(shared)

    history = lore.reader.history(fact.fact_id, Scope(TEAM, ["C1"]))
    assert history.versions[-1].fact.status is FactStatus.RETRACTED
    assert not [
        h for h in facts_found(lore, "Falcon launch budget", "C1") if "40 thousand" in h.fact.statement
    ]
    passages = lore.stores.messages.passages_of(TEAM, "C1", shared)
    assert passages == []  # every passage deleted with it
    assert [h.fact.statement for h in facts_found(lore, "Falcon kickoff", "C1")][:1] == [
        "The Falcon kickoff is on Monday."
    ]  # the other message stands
    blobs = lore.settings.db_path.with_name(lore.settings.db_path.stem + ".blobs")
    assert [p for p in blobs.rglob("*") if p.is_file()] == []  # the bytes went with the share


def test_erasing_the_person_removes_the_file_its_passages_and_their_facts(lore, slack, chat):
    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    shared = chat.post(1, "Here is the Falcon report.", user="U2", files=[report])
    chat.post(2, "The Falcon kickoff is on Monday.")
    assert facts_found(lore, "Falcon launch budget", "C1")

    report_of = lore.erase_author(TEAM, "U2", "dpo")

    assert report_of.files == 1 and report_of.blobs == 1
    assert not [
        h for h in facts_found(lore, "Falcon launch budget", "C1") if "40 thousand" in h.fact.statement
    ]
    blobs = lore.settings.db_path.with_name(lore.settings.db_path.stem + ".blobs")
    assert [p for p in blobs.rglob("*") if p.is_file()] == []
    rows = lore.stores.db.conn.execute(
        "SELECT text, author_name, file_ref FROM messages WHERE shared_in = ?", (shared,)
    ).fetchall()
    assert rows and all(tuple(r) == ("", "", "") for r in rows)
    assert lore.stores.files.of_messages(TEAM, [("C1", shared)]) == []
    assert lore.search_media_references(Scope(TEAM, ["C1"]), "report") == []


def test_a_private_channels_file_never_reaches_another_channels_read(lore, slack, chat):
    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    chat.post(1, "The Falcon numbers, do not share.", channel="CPRIV", files=[report])
    chat.post(2, "The Falcon kickoff is on Monday.")

    inside = lore.reader.search("Falcon launch budget", Scope(TEAM, ["CPRIV"]), k=5)
    outside = lore.reader.search("Falcon launch budget", Scope(TEAM, ["C1"]), k=5)

    assert any("40 thousand" in hit.text for hit in inside.hits)  # control: the same query inside
    assert not any("40 thousand" in hit.text for hit in outside.hits)
    assert all(hit.channel == "C1" for hit in outside.hits)
    answer = lore.ask("what is the Falcon launch budget?", Scope(TEAM, ["C1"]))
    assert "40 thousand" not in answer.text


def test_word_excel_and_powerpoint_files_are_read_with_their_sheet_and_slide(lore, slack, chat):
    files = [
        slack.share(
            "F2", "notes.docx", made.DOCX_MIME, made.docx(["The Falcon vendor is Globex."], "Vendors")
        ),
        slack.share(
            "F3",
            "plan.xlsx",
            made.XLSX_MIME,
            made.xlsx(
                {
                    "Budget": [["Item", "Cost"], ["Badges", 300]],
                    "Headcount": [["Team", "People"], ["Falcon platform team", 7]],
                }
            ),
        ),
        slack.share(
            "F4",
            "roadmap.pptx",
            made.PPTX_MIME,
            made.pptx([("Intro", "Welcome"), ("Q3", "Falcon ships in September.")]),
        ),
    ]
    chat.post(1, "Planning files for Falcon.", files=files)

    refs = lore.search_media_references(Scope(TEAM, ["C1"]), "application")  # every mime type says so
    assert {ref.name: (ref.status, ref.detail) for ref in refs} == {
        "notes.docx": ("extracted", "docx: 1 passage"),
        "plan.xlsx": ("extracted", "xlsx: 2 sheets, 2 passages"),
        "roadmap.pptx": ("extracted", "pptx: 2 slides, 2 passages"),
    }

    def cited(query: str) -> set[str]:
        result = lore.reader.search(query, Scope(TEAM, ["C1"]), k=3)
        return {s.file_ref for hit in result.hits for s in hit.sources}

    assert "notes.docx, § Vendors" in cited("Falcon vendor Globex")
    assert "plan.xlsx, sheet Headcount" in cited("Falcon platform team people")
    assert "roadmap.pptx, slide 2" in cited("Falcon ships in September")


def test_a_file_that_cannot_be_fetched_is_recorded_and_fetched_again_by_reindex(lore, slack, chat):
    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    slack.file_status["F1"] = 503
    chat.post(1, "The Falcon kickoff is on Monday.", files=[report])

    assert facts_found(lore, "Falcon kickoff", "C1")  # the message itself is never held up
    (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "report")
    assert (ref.status, ref.detail) == ("failed", "not fetched: Slack answered HTTP 503")

    del slack.file_status["F1"]
    (retried,) = lore.retry_files(Scope(TEAM, ["C1"]))
    assert (retried.status.value, retried.attempts) == ("extracted", 2)
    assert any("40 thousand" in h.fact.statement for h in facts_found(lore, "Falcon launch budget", "C1"))


def test_the_bot_token_goes_to_slack_only_and_a_sign_in_page_is_no_file(tmp_path, embedder, clock, slack):
    wrong = open_lore(tmp_path / "wrong", embedder, clock, slack)
    wrong.settings.slack_bot_token  # noqa: B018 - the same settings, another token below
    try:
        from teamlore.files.fetch import LinkFetcher, slack_source

        wrong.files.fetchers = {"slack": LinkFetcher(slack_source("xoxb-other", slack.base_url), 5)}
        chat = Chat(wrong, slack)
        report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
        elsewhere = {**report, "id": "F9", "url_private": "http://127.0.0.2:9/files-pri/T1-F9/x.pdf"}
        chat.post(1, "Two files.", files=[report, elsewhere])
        refs = {r.position: r for r in wrong.search_media_references(Scope(TEAM, ["C1"]), "report")}
        assert refs[0].detail == (
            "not fetched: Slack answered with a sign-in page, not the file: the bot token lacks files:read"
        )
        assert (
            refs[1].status == "skipped"
            and refs[1].detail == "not fetched: not a Slack file link (127.0.0.2:9)"
        )
        assert [auth for _, auth in slack.downloads] == ["Bearer xoxb-other"]  # nothing sent to 127.0.0.2
    finally:
        wrong.close()


def test_every_status_is_one_line_in_teamlore_media_json(lore, slack, chat, capsys):
    from typer.testing import CliRunner

    from teamlore.cli import app as cli_app

    slack.file_status["F1"] = 503
    chat.post(1, "Report attached.", files=[slack.share("F1", "report.pdf", made.PDF_MIME, b"%PDF-1.4")])
    lore.close()
    done = CliRunner().invoke(
        cli_app,
        ["media", "report", "-w", TEAM, "-c", "C1", "--json", "--data-dir", str(lore.settings.data_dir)],
        env={"TEAMLORE_SLACK_BOT_TOKEN": ""},
    )
    assert done.exit_code == 0, done.output
    (shown,) = json.loads(done.stdout)
    assert (shown["status"], shown["detail"]) == ("failed", "not fetched: Slack answered HTTP 503")


def test_a_store_of_schema_4_gains_the_file_columns_when_opened(tmp_path):
    from teamlore.stores.database import Database

    path = tmp_path / "old.sqlite3"
    db = Database(path)
    db.conn.executescript(
        "DROP INDEX messages_shared_in; ALTER TABLE messages DROP COLUMN shared_in;"
        " ALTER TABLE messages DROP COLUMN file_ref;"
        " ALTER TABLE message_attachments DROP COLUMN download_url;"
        " UPDATE meta SET value = '4' WHERE key = 'schema_version';"
    )
    db.close()
    reopened = Database(path)
    columns = {r[1] for r in reopened.conn.execute("PRAGMA table_info(messages)")}
    assert {"shared_in", "file_ref"} <= columns
    assert reopened.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "5"
    reopened.close()


def test_teamlore_reindex_fetches_the_failed_files_again(lore, slack, chat):
    from typer.testing import CliRunner

    from teamlore.cli import app as cli_app

    slack.file_status["F1"] = 503
    chat.post(
        1, "Report attached.", files=[slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))]
    )
    lore.close()
    del slack.file_status["F1"]
    env = {"TEAMLORE_SLACK_BOT_TOKEN": TOKEN, "TEAMLORE_SLACK_API_URL": slack.base_url}
    args = ["reindex", "-w", TEAM, "-c", "C1", "--json", "--data-dir", str(lore.settings.data_dir)]
    done = CliRunner().invoke(cli_app, args, env=env)
    assert done.exit_code == 0, done.output
    assert {k: json.loads(done.stdout)["C1"][k] for k in ("files_retried", "files_read")} == {
        "files_retried": 1,
        "files_read": 1,
    }
    again = CliRunner().invoke(cli_app, args, env=env)  # nothing failed is left to try
    assert json.loads(again.stdout)["C1"]["files_retried"] == 0


def test_a_newer_version_of_the_file_supersedes_what_the_older_one_said(lore, slack, chat):
    first = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    chat.post(1, "Here is the Falcon report.", files=[first])
    newer_pages = [BUDGET_PAGES[0], BUDGET_PAGES[1].replace("40 thousand", "55 thousand"), BUDGET_PAGES[2]]
    second = slack.share("F2", "report v2.pdf", made.PDF_MIME, made.pdf(newer_pages))
    chat.post(90, "The updated Falcon report.", files=[second])  # an hour and a half later

    (top, *_) = facts_found(lore, "Falcon launch budget", "C1")
    assert "55 thousand" in top.fact.statement
    assert [s.file_ref for s in top.sources] == ["report v2.pdf, p. 2"]
    now = lore.reader.search("Falcon launch budget", Scope(TEAM, ["C1"]), k=10)
    assert not any("40 thousand" in h.text for h in now.hits if h.kind == "fact")
    between = ReadView(valid_at=datetime.fromtimestamp(JAN5 + 30 * 60, UTC))  # as of before v2
    then = lore.reader.search("Falcon launch budget", Scope(TEAM, ["C1"]), view=between, k=10)
    (was,) = [h for h in then.hits if h.kind == "fact" and "budget is" in h.text]
    assert "40 thousand" in was.text and [s.file_ref for s in was.sources] == ["report.pdf, p. 2"]
    (replaced,) = [f for f in top.fact.supersedes]
    history = lore.reader.history(replaced, Scope(TEAM, ["C1"]))
    assert history.versions[-1].fact.status is FactStatus.SUPERSEDED
    assert "40 thousand" in history.versions[-1].fact.statement


def test_the_api_and_the_web_wiki_cite_the_file_and_page_and_keep_a_private_file_private(lore, slack, chat):
    import httpx

    from teamlore.web import create_app
    from teamlore.web.auth import TOKEN_COOKIE

    from .web_server import serving

    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    chat.post(1, "Here is the Falcon report.", channel="CPRIV", files=[report])
    chat.post(2, "The Falcon kickoff is on Monday.")
    token = lore.access.create("reader", "reader", TEAM, ["C1", "CPRIV"])[1]
    public = lore.access.create("public", "reader", TEAM, ["C1"])[1]
    with serving(create_app(lore, flush_pages=False)) as url:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
            found = api.get("/api/search", params={"q": "Falcon launch budget", "channel": "CPRIV"}).json()
            (hit,) = [h for h in found["results"] if h["kind"] == "fact" and "40 thousand" in h["text"]]
            assert [(s["file"], s["author"]) for s in hit["sources"]] == [("report.pdf, p. 2", "alice")]
        with httpx.Client(base_url=url, cookies={TOKEN_COOKIE: token}, timeout=30) as wiki:
            page = wiki.get(f"/wiki/CPRIV/messages/{hit['sources'][0]['message_id']}")
            assert page.status_code == 200
            assert "From a shared file" in page.text and "report.pdf, p. 2" in page.text
            assert "40 thousand euros" in page.text
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {public}"}, timeout=30) as other:
            refused = other.get("/api/search", params={"q": "Falcon launch budget", "channel": "CPRIV"})
            assert refused.status_code == 403  # the private channel is outside this token's grant
            shown = other.get("/api/search", params={"q": "Falcon launch budget", "channel": "C1"}).json()
            assert not any("40 thousand" in h["text"] for h in shown["results"])


def test_the_mcp_tools_cite_the_file_and_page_inside_the_grant_only(lore, slack, chat):
    from teamlore.errors import Forbidden
    from teamlore.mcp_server.refusals import ToolError
    from teamlore.mcp_server.tools import Caller, ReadTools

    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    chat.post(1, "Here is the Falcon report.", channel="CPRIV", files=[report])
    inside = lore.access.create("mcp", "reader", TEAM, ["CPRIV"])[1]
    outside = lore.access.create("mcp-eng", "reader", TEAM, ["C1"])[1]
    tools = ReadTools(lore, Caller(lore.access, lambda: inside))

    found = tools.search_facts("Falcon launch budget", ["CPRIV"])
    (hit,) = [h for h in found["results"] if h["kind"] == "fact" and "40 thousand" in h["text"]]
    assert [s["file"] for s in hit["sources"]] == ["report.pdf, p. 2"]
    answered = tools.ask("what is the Falcon launch budget?", ["CPRIV"])
    assert "report.pdf, p. 2" in {s["file"] for c in answered["citations"] for s in c["sources"]}
    other = ReadTools(lore, Caller(lore.access, lambda: outside))
    with pytest.raises(ToolError) as refused:
        other.search_facts("Falcon launch budget", ["CPRIV"])
    assert isinstance(refused.value.__cause__, Forbidden)
    shown = other.search_facts("Falcon launch budget", ["C1"])
    assert not any("40 thousand" in h["text"] for h in shown["results"])


def test_an_edit_that_replaces_the_file_retracts_what_only_the_old_file_said(lore, slack, chat):
    first = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    stamp = chat.post(1, "Here is the Falcon report.", files=[first])
    (budget,) = [h.fact for h in facts_found(lore, "Falcon launch budget", "C1") if "40 thousand" in h.text]
    second = slack.share(
        "F2", "vendors.pdf", made.PDF_MIME, made.pdf(["The Falcon badge vendor is Initech."])
    )
    edit_ts = f"{JAN5 + 600}.000200"
    changed = {
        "type": "message",
        "subtype": "message_changed",
        "ts": edit_ts,
        "message": {
            "type": "message",
            "user": "U1",
            "text": "Here is the Falcon vendor list.",
            "ts": stamp,
            "edited": {"user": "U1", "ts": edit_ts},
            "files": [second],
        },
    }
    chat._deliver(changed, "C1")

    history = lore.reader.history(budget.fact_id, Scope(TEAM, ["C1"]))
    assert history.versions[-1].fact.status is FactStatus.RETRACTED
    (vendor, *_) = facts_found(lore, "Falcon badge vendor", "C1")
    assert "Initech" in vendor.fact.statement
    assert [s.file_ref for s in vendor.sources] == ["vendors.pdf, p. 1"]
    (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "", "pdf")
    assert (ref.name, ref.status) == ("vendors.pdf", "extracted")
    blobs = lore.settings.db_path.with_name(lore.settings.db_path.stem + ".blobs")
    assert [p.name for p in blobs.rglob("*") if p.is_file()] == [
        lore.stores.files.get(TEAM, "C1", stamp, 0).sha256
    ]


def test_teamlore_import_of_a_slack_export_fetches_its_files_with_the_bot_token(tmp_path, slack):
    from typer.testing import CliRunner

    from teamlore.cli import app as cli_app

    report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    stamp = f"{JAN5}.000100"
    export = tmp_path / "export"
    (export / "eng").mkdir(parents=True)
    (export / "channels.json").write_text(json.dumps([{"id": "C1", "name": "eng"}]))
    (export / "users.json").write_text(json.dumps([{"id": "U1", "name": "alice"}]))
    day = [
        {"type": "message", "user": "U1", "text": "The report.", "ts": stamp, "team": TEAM, "files": [report]}
    ]
    (export / "eng" / "2026-01-05.json").write_text(json.dumps(day))
    data = tmp_path / "store"
    env = {"TEAMLORE_SLACK_BOT_TOKEN": TOKEN, "TEAMLORE_SLACK_API_URL": slack.base_url}

    done = CliRunner().invoke(cli_app, ["import", str(export), "--data-dir", str(data)], env=env)
    assert done.exit_code == 0, done.output
    shown = CliRunner().invoke(
        cli_app, ["media", "report", "-w", TEAM, "-c", "C1", "--data-dir", str(data)], env=env
    )
    assert "extracted: pdf: 3 pages, 3 passages" in shown.stdout
    assert [auth for _, auth in slack.downloads] == [f"Bearer {TOKEN}"]
    found = CliRunner().invoke(
        cli_app, ["search", "Falcon launch budget", "-w", TEAM, "-c", "C1", "--data-dir", str(data)], env=env
    )
    assert "in report.pdf, p. 2" in found.stdout


def test_without_a_bot_token_a_file_is_recorded_as_not_fetched_and_its_message_stored(
    tmp_path, embedder, clock, slack
):
    bare = Teamlore(Settings(data_dir=tmp_path / "bare", _env_file=None), embedder=embedder, clock=clock)
    try:
        report = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
        Chat(bare, slack).post(1, "The Falcon kickoff is on Monday.", files=[report])
        (ref,) = bare.search_media_references(Scope(TEAM, ["C1"]), "report")
        assert (ref.status, ref.detail) == (
            "failed",
            "not fetched: no Slack bot token (TEAMLORE_SLACK_BOT_TOKEN, scope files:read)",
        )
        assert slack.downloads == []
        assert facts_found(bare, "Falcon kickoff", "C1")
    finally:
        bare.close()
