"""The Slack connector end to end: signed HTTP events through Bolt on a real port, a local Slack
Web API (pagination, 429 with Retry-After, chat.postMessage, response_url), the real store."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from slack_sdk import WebClient
from typer.testing import CliRunner

from teamlore.app import Teamlore
from teamlore.cli import app as cli_app
from teamlore.config import Settings
from teamlore.connectors.backfill import run_backfill
from teamlore.connectors.background import BackgroundBackfills
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.running import AsgiServer
from teamlore.connectors.slack import runner
from teamlore.connectors.slack.bot import SlackBot
from teamlore.connectors.slack.directory import SlackDirectory
from teamlore.connectors.slack.history import SlackHistory
from teamlore.connectors.slack_export import SlackContext
from teamlore.domain import Scope, Visibility
from teamlore.errors import InvalidInput

from .fake_slack import APP_TOKEN, BOT_ID, BOT_USER, SECRET, TEAM, TOKEN, FakeSlack, SocketModeServer, sign

JAN5 = 1767607200  # 2026-01-05T10:00:00Z


def ts(seconds: int, micros: int = 100) -> str:
    return f"{seconds}.{micros:06d}"


def message(stamp: str, text: str, channel: str = "C1", user: str = "U1", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "channel": channel, "user": user, "text": text, "ts": stamp, **extra}


def envelope(event: dict[str, Any], event_id: str = "Ev1") -> dict[str, Any]:
    return {
        "token": "legacy",
        "team_id": TEAM,
        "api_app_id": "A1",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": JAN5,
    }


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.add_channel("C1", "eng")
        fake.add_channel("CPRIV", "deals", private=True)
        fake.users["U1"] = {"id": "U1", "name": "alice", "real_name": "Alice Ng", "profile": {}}
        yield fake


@pytest.fixture
def slack_lore(tmp_path, embedder, clock, slack) -> Iterator[Teamlore]:
    settings = Settings(
        data_dir=tmp_path / "store",
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=slack.base_url,
        slack_history_page_size=15,
        slack_history_interval_s=60.0,
        _env_file=None,
    )
    lore = Teamlore(settings, embedder=embedder, clock=clock)
    yield lore
    lore.close()


@dataclass
class Endpoint:
    url: str
    bot: SlackBot

    def post(self, payload: Any, *, at: int | None = None, secret: str = SECRET, raw: bytes | None = None):
        body = raw if raw is not None else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", **sign(body, at or int(time.time()), secret)}
        return httpx.post(self.url, content=body, headers=headers, timeout=10)

    def form(self, fields: dict[str, str]):
        from urllib.parse import urlencode

        body = urlencode(fields).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(body, int(time.time()))}
        return httpx.post(self.url, content=body, headers=headers, timeout=10)


@pytest.fixture
def endpoint(slack_lore, slack) -> Iterator[Endpoint]:
    client = WebClient(token=TOKEN, base_url=slack.base_url)
    # The listener finishes before Bolt answers, so a test reads the store right after the POST.
    bot = SlackBot(slack_lore, client, process_before_response=True)
    server = AsgiServer(runner.events_app(bot.app), "127.0.0.1", 0).start()
    yield Endpoint(f"http://127.0.0.1:{server.port}/slack/events", bot)
    server.stop()


def statements(lore: Teamlore, *channels: str) -> list[str]:
    return [v.fact.statement for v in lore.reader.list(Scope(TEAM, channels or ["C1"]), k=50).hits]


def test_a_signed_event_is_recorded_and_a_bad_or_stale_signature_is_refused(endpoint, slack_lore):
    good = envelope(message(ts(JAN5), "The launch date is 12 May."))
    forged = envelope(message(ts(JAN5 + 1), "The office moves to Berlin in June."), "Ev2")
    stale = envelope(message(ts(JAN5 + 2), "The budget for Q3 is 40 thousand euros."), "Ev3")
    assert endpoint.post(forged, secret="not-the-secret").status_code == 401
    assert endpoint.post(stale, at=int(time.time()) - 600).status_code == 401  # older than 5 minutes
    assert statements(slack_lore) == []
    assert endpoint.post(good).status_code == 200
    found = statements(slack_lore)
    assert len(found) == 1 and "12 May" in found[0]
    stored = slack_lore.stores.messages.get_message(TEAM, "C1", ts(JAN5))
    assert stored.author_name == "Alice Ng"
    assert stored.permalink == f"https://acme.slack.com/archives/C1/p{JAN5}000100"


def test_url_verification_answers_the_challenge_only_when_signed(endpoint):
    payload = {"token": "legacy", "challenge": "c-42", "type": "url_verification"}
    answered = endpoint.post(payload)
    assert answered.status_code == 200 and answered.json() == {"challenge": "c-42"}
    assert endpoint.post(payload, secret="wrong").status_code == 401


def test_message_changed_and_message_deleted_reach_the_fact_store(endpoint, slack_lore):
    endpoint.post(envelope(message(ts(JAN5), "The launch date is 12 May.")))
    changed = {
        "type": "message",
        "subtype": "message_changed",
        "channel": "C1",
        "ts": ts(JAN5 + 300, 5),
        "message": {
            **message(ts(JAN5), "The launch date is 19 May."),
            "edited": {"user": "U1", "ts": ts(JAN5 + 300)},
        },
        "previous_message": message(ts(JAN5), "The launch date is 12 May."),
    }
    assert endpoint.post(envelope(changed, "Ev2")).status_code == 200
    assert [s for s in statements(slack_lore) if "launch" in s] == ["The launch date is 19 May."]
    deleted = {
        "type": "message",
        "subtype": "message_deleted",
        "channel": "C1",
        "ts": ts(JAN5 + 600, 7),
        "deleted_ts": ts(JAN5),
        "previous_message": message(ts(JAN5), "The launch date is 19 May."),
    }
    assert endpoint.post(envelope(deleted, "Ev3")).status_code == 200
    assert statements(slack_lore) == []
    assert slack_lore.stores.messages.get_message(TEAM, "C1", ts(JAN5)).deleted_at is not None


def test_thread_replies_private_visibility_renames_and_files_are_recorded(endpoint, slack_lore):
    parent = ts(JAN5)
    endpoint.post(
        envelope({**message(parent, "Which vendor for the CRM?", "CPRIV"), "channel_type": "group"})
    )
    reply = {
        **message(ts(JAN5 + 60), "We chose Globex as the CRM vendor.", "CPRIV", thread_ts=parent),
        "channel_type": "group",
        "subtype": "file_share",
        "files": [
            {
                "id": "F1",
                "name": "globex-contract.pdf",
                "mimetype": "application/pdf",
                "size": 48213,
                "permalink": "https://acme.slack.com/files/U1/F1/globex-contract.pdf",
            }
        ],
    }
    endpoint.post(envelope(reply, "Ev2"))
    stored = slack_lore.stores.messages.get_message(TEAM, "CPRIV", ts(JAN5 + 60))
    assert stored.thread_id == parent
    channel = next(c for c in slack_lore.stores.messages.channels(TEAM) if c.channel == "CPRIV")
    assert (channel.name, channel.visibility) == ("deals", Visibility.PRIVATE)

    files = slack_lore.search_media_references(Scope(TEAM, ["CPRIV"]), "contract", kind="pdf")
    assert [(f.name, f.size, f.mime_type) for f in files] == [
        ("globex-contract.pdf", 48213, "application/pdf")
    ]
    assert files[0].permalink.endswith(f"/CPRIV/p{JAN5 + 60}000100")
    assert slack_lore.search_media_references(Scope(TEAM, ["C1"]), "contract") == []  # another channel
    assert slack_lore.search_media_references(Scope(TEAM, ["CPRIV"]), "contract", kind="image") == []

    rename = {"type": "group_rename", "channel": {"id": "CPRIV", "name": "deals-2026", "created": JAN5}}
    assert endpoint.post(envelope(rename, "Ev3")).status_code == 200
    channel = next(c for c in slack_lore.stores.messages.channels(TEAM) if c.channel == "CPRIV")
    assert (channel.name, channel.visibility) == ("deals-2026", Visibility.PRIVATE)


def test_malformed_and_unknown_payloads_are_logged_and_skipped(endpoint, slack_lore, caplog):
    caplog.set_level(logging.INFO)
    broken = [
        envelope({"type": "message", "channel": "C1", "user": "U1", "text": "no ts here"}, "Ev1"),
        envelope({"type": "message", "channel": "C1", "ts": "yesterday", "text": "x"}, "Ev2"),
        envelope({"type": "message", "subtype": "message_changed", "channel": "C1", "ts": ts(JAN5)}, "Ev3"),
        envelope({"type": "message", "ts": ts(JAN5), "text": "no channel"}, "Ev4"),
        envelope({"type": "reaction_added", "user": "U1", "reaction": "tada"}, "Ev5"),
        envelope({"type": "channel_rename", "channel": "not an object"}, "Ev6"),
        {"type": "event_callback", "team_id": TEAM},
    ]
    for payload in broken:
        assert endpoint.post(payload).status_code < 500
    assert endpoint.post(None, raw=b"{not json").status_code < 500
    assert "skipped" in caplog.text
    assert (
        endpoint.post(envelope(message(ts(JAN5 + 9), "The launch date is 12 May."), "Ev9")).status_code == 200
    )
    assert len(statements(slack_lore)) == 1  # the listener is still there


def test_the_bots_own_messages_are_not_captured(endpoint, slack_lore):
    own = {**message(ts(JAN5), "The launch date is 12 May.", user=BOT_USER), "bot_id": BOT_ID}
    assert endpoint.post(envelope(own)).status_code == 200
    assert statements(slack_lore) == []


def test_a_mention_is_answered_in_its_thread_from_the_asking_channel_only(endpoint, slack, slack_lore):
    endpoint.post(
        envelope(
            {
                **message(ts(JAN5), "The Globex renewal price is 40 dollars per seat.", "CPRIV"),
                "channel_type": "group",
            }
        )
    )
    endpoint.post(envelope(message(ts(JAN5 + 5), "The launch date is 12 May."), "Ev2"))

    def ask(channel: str, stamp: str, event_id: str, **extra: Any) -> dict[str, Any]:
        mention = {
            "type": "app_mention",
            "user": "U1",
            "text": f"<@{BOT_USER}> what is the Globex renewal price?",
            "ts": stamp,
            "channel": channel,
            **extra,
        }
        before = len(slack.posted)
        # Slack sends the mention twice: as a message (to capture) and as app_mention (to answer).
        as_message = {**mention, "type": "message", "channel_type": "channel" if channel == "C1" else "group"}
        assert endpoint.post(envelope(as_message, event_id + "m")).status_code == 200
        assert endpoint.post(envelope(mention, event_id)).status_code == 200
        assert len(slack.posted) == before + 1
        return slack.posted[-1]

    outside = ask("C1", ts(JAN5 + 100), "Ev3")
    assert outside["channel"] == "C1" and outside["thread_ts"] == ts(JAN5 + 100)
    assert outside["text"].startswith("Nothing known") and "40 dollars" not in outside["text"]
    inside = ask("CPRIV", ts(JAN5 + 101), "Ev4", thread_ts=ts(JAN5))
    assert "40 dollars" in inside["text"] and inside["thread_ts"] == ts(JAN5)
    assert f"<https://acme.slack.com/archives/CPRIV/p{JAN5}000100|" in inside["text"]
    assert "/archives/C1/" not in inside["text"]
    assert (
        slack_lore.stores.messages.get_message(TEAM, "C1", ts(JAN5 + 100)) is None
    )  # questions are not facts


def test_mentions_from_bots_get_no_answer(endpoint, slack, slack_lore):
    endpoint.post(envelope(message(ts(JAN5), "The launch date is 12 May.")))
    other_bot = {
        "type": "app_mention",
        "user": "U9",
        "bot_id": "B9",
        "text": f"<@{BOT_USER}> launch date?",
        "ts": ts(JAN5 + 1),
        "channel": "C1",
    }
    itself = {
        "type": "app_mention",
        "user": BOT_USER,
        "text": f"<@{BOT_USER}> launch date?",
        "ts": ts(JAN5 + 2),
        "channel": "C1",
    }
    person = {
        "type": "app_mention",
        "user": "U1",
        "text": f"<@{BOT_USER}> launch date?",
        "ts": ts(JAN5 + 3),
        "channel": "C1",
    }
    for n, mention in enumerate((other_bot, itself), start=2):
        assert endpoint.post(envelope(mention, f"Ev{n}")).status_code == 200
    assert slack.posted == []
    endpoint.post(envelope(person, "Ev9"))  # control: a person is answered
    assert len(slack.posted) == 1 and "12 May" in slack.posted[0]["text"]


def test_the_slash_command_answers_through_the_response_url(endpoint, slack, slack_lore):
    endpoint.post(envelope(message(ts(JAN5), "The launch date is 12 May.")))
    fields = {
        "command": "/teamlore",
        "text": "when is the launch date?",
        "team_id": TEAM,
        "channel_id": "C1",
        "user_id": "U1",
        "response_url": slack.response_url,
        "trigger_id": "t1",
        "token": "legacy",
    }
    assert endpoint.form(fields).status_code == 200
    assert len(slack.responses) == 1
    assert "12 May" in slack.responses[0]["text"] and slack.responses[0]["response_type"] == "in_channel"
    endpoint.form({**fields, "channel_id": "CPRIV"})  # control: the same question elsewhere
    assert slack.responses[1]["text"].startswith("Nothing known")


def test_joining_a_channel_backfills_it_in_the_background(slack, slack_lore):
    slack.history["C1"] = [
        message(ts(JAN5 + n), f"Decision {n}: the build server {n} moves to rack {n}.") for n in range(3)
    ]
    client = WebClient(token=TOKEN, base_url=slack.base_url)
    directory = SlackDirectory(client)
    jobs = BackgroundBackfills(
        lambda _ws, channel: runner.backfill(slack_lore, channel, say=lambda _: None, directory=directory)
    )
    bot = SlackBot(slack_lore, client, on_join=jobs.submit, process_before_response=True)
    server = AsgiServer(runner.events_app(bot.app), "127.0.0.1", 0).start()
    try:
        endpoint = Endpoint(f"http://127.0.0.1:{server.port}/slack/events", bot)
        someone = {"type": "member_joined_channel", "user": "U1", "channel": "C1", "channel_type": "C"}
        endpoint.post(envelope(someone))
        jobs.join(5)
        assert slack.method_calls("conversations.history") == []  # control: a person joining
        joined = {**someone, "user": BOT_USER}
        assert endpoint.post(envelope(joined, "Ev2")).status_code == 200
        jobs.join(10)
        assert len(statements(slack_lore)) == 3
    finally:
        jobs.close()
        server.stop()


def backfill_history(slack: FakeSlack, count: int = 20) -> None:
    """``count`` messages a minute apart, newest first; the oldest opens a thread of 3 replies."""
    root = ts(JAN5)
    slack.history["C1"] = [
        message(ts(JAN5 + 60 * n), f"Decision {n}: the build server number {n} moves to rack {n}.")
        for n in reversed(range(count))
    ]
    slack.history["C1"][-1].update(thread_ts=root, reply_count=3)
    slack.replies[("C1", root)] = [slack.history["C1"][-1]] + [
        message(
            ts(JAN5 + 30 + r), f"Decision {100 + r}: the lab printer {r} moves to room {r}.", thread_ts=root
        )
        for r in range(3)
    ]


def test_a_backfill_pages_through_history_and_threads_and_waits_out_a_429(slack, slack_lore):
    backfill_history(slack)
    slack.rate_limit_calls = {2: 3}  # the second history call answers 429, Retry-After: 3
    slept: list[float] = []
    said: list[str] = []
    report = runner.backfill(slack_lore, "C1", say=said.append, sleep=slept.append)
    assert report.done and report.total_fetched == 23 and report.rate_limited == 1
    history_calls = slack.method_calls("conversations.history")
    assert [c.get("limit") for c in history_calls] == ["15"] * 3  # the 429, then two pages of 15
    assert history_calls[-1].get("cursor")  # the second page was asked for by Slack's cursor
    assert len(slack.method_calls("conversations.replies")) == 1
    assert slept and all(s >= 3 for s in slept)  # Retry-After, and never below the minute
    assert 60.0 in slept
    assert len(statements(slack_lore)) == 23
    reply = slack_lore.stores.messages.get_message(TEAM, "C1", ts(JAN5 + 30))
    assert reply.thread_id == ts(JAN5)
    assert "one history call every 60 s, 15 messages a call" in said[0]
    assert any("left" in line and "more calls" in line for line in said[1:])
    assert "done" in said[-1]


def test_the_estimate_follows_the_history_read_so_far(slack, slack_lore):
    backfill_history(slack, count=40)  # 40 minutes of history; the channel was created 4 days earlier
    client = WebClient(token=TOKEN, base_url=slack.base_url)
    directory = SlackDirectory(client)
    info = directory.info("C1")
    context = SlackContext(TEAM, directory.users, directory.identity().archives_url, 40_000)
    history = SlackHistory(client, info.channel, context, page_size=15, interval_s=60.0, created=info.created)
    assert history.estimate() is None  # nothing read: nothing to estimate from
    run_backfill(
        "slack",
        TEAM,
        "C1",
        history,
        EventSink(slack_lore),
        slack_lore.stores.checkpoints,
        max_pages=1,
        sleep=lambda s: None,
    )
    first = history.estimate()
    # 15 messages covered 14 minutes; about 4 days lie between them and the channel's creation.
    assert first is not None and first.calls > 300 and first.seconds == pytest.approx(first.calls * 60)


def test_an_interrupted_backfill_resumes_inside_a_thread(slack, slack_lore):
    backfill_history(slack, count=10)  # one history page (10 < 15), then the thread
    slack.replies[("C1", ts(JAN5))] = slack.replies[("C1", ts(JAN5))] + [
        message(
            ts(JAN5 + 40 + r), f"Decision {200 + r}: the lab desk {r} moves to room {r}.", thread_ts=ts(JAN5)
        )
        for r in range(20)
    ]
    client = WebClient(token=TOKEN, base_url=slack.base_url)
    directory = SlackDirectory(client)
    info = directory.info("C1")
    context = SlackContext(TEAM, directory.users, directory.identity().archives_url, 40_000)

    def history() -> SlackHistory:
        return SlackHistory(client, info.channel, context, page_size=15, interval_s=0.0)

    def run(**kwargs: Any):
        return run_backfill(
            "slack",
            TEAM,
            "C1",
            history(),
            EventSink(slack_lore),
            slack_lore.stores.checkpoints,
            sleep=lambda s: None,
            **kwargs,
        )

    first = run(max_pages=2)  # the history page, then the thread's first 15 (its parent left out)
    assert not first.done and first.total_fetched == 10 + 14
    second = run()
    assert second.done and second.total_fetched == 10 + 23
    replies = slack.method_calls("conversations.replies")
    assert len(replies) == 2 and replies[1].get("cursor")  # resumed by Slack's cursor in the thread
    assert len(statements(slack_lore)) == 33


def test_a_private_channel_is_backfilled_only_where_the_bot_is_a_member(slack, slack_lore):
    slack.add_channel("CSECRET", "secret", private=True, member=False)
    with pytest.raises(InvalidInput, match="private and the bot is not a member"):
        runner.backfill(slack_lore, "CSECRET", say=lambda _: None)
    assert slack.method_calls("conversations.history") == []
    slack.add_channel("COPEN", "open", member=False)  # control: a public channel is joined, then read
    slack.history["COPEN"] = [message(ts(JAN5), "The launch date is 12 May.", "COPEN")]
    assert runner.backfill(slack_lore, "COPEN", say=lambda _: None).done
    assert len(slack.method_calls("conversations.join")) == 1


def test_connect_slack_backfill_from_the_command_line(slack, tmp_path, monkeypatch):
    backfill_history(slack, count=4)
    monkeypatch.setenv("TEAMLORE_SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("TEAMLORE_SLACK_API_URL", slack.base_url)
    monkeypatch.setenv("TEAMLORE_SLACK_HISTORY_INTERVAL_S", "0")
    data = tmp_path / "cli-store"
    result = CliRunner().invoke(
        cli_app, ["connect", "slack", "--backfill", "C1", "--data-dir", str(data), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["C1"]["total_fetched"] == 7
    unknown = CliRunner().invoke(cli_app, ["connect", "irc", "--data-dir", str(data)])
    assert unknown.exit_code != 0


def test_socket_mode_receives_events_over_the_websocket_and_acknowledges_them(slack, slack_lore):
    with SocketModeServer() as link:
        slack.socket_url = link.url
        bot = SlackBot(
            slack_lore, WebClient(token=TOKEN, base_url=slack.base_url), process_before_response=True
        )
        handler = runner.socket_mode(bot.app, APP_TOKEN)
        handler.connect()
        try:
            for _ in range(250):
                if link.connected:
                    break
                time.sleep(0.02)
            event = envelope(message(ts(JAN5), "The launch date is 12 May."))
            link.send(
                {
                    "envelope_id": "env-1",
                    "type": "events_api",
                    "accepts_response_payload": False,
                    "payload": event,
                }
            )
            for _ in range(500):
                if link.acks:
                    break
                time.sleep(0.02)
        finally:
            handler.close()
    assert [a.get("envelope_id") for a in link.acks] == ["env-1"]
    assert statements(slack_lore) == ["The launch date is 12 May."]


def test_acknowledged_first_then_applied_in_the_order_slack_sent(slack, slack_lore):
    """The production setting: Bolt answers Slack at once; listeners run after, one at a time."""
    bot = SlackBot(slack_lore, WebClient(token=TOKEN, base_url=slack.base_url))
    server = AsgiServer(runner.events_app(bot.app), "127.0.0.1", 0).start()
    try:
        endpoint = Endpoint(f"http://127.0.0.1:{server.port}/slack/events", bot)
        created = envelope(message(ts(JAN5), "The launch date is 12 May."))
        changed = {
            "type": "message",
            "subtype": "message_changed",
            "channel": "C1",
            "ts": ts(JAN5 + 300, 5),
            "message": {
                **message(ts(JAN5), "The launch date is 19 May."),
                "edited": {"user": "U1", "ts": ts(JAN5 + 300)},
            },
        }
        assert endpoint.post(created).status_code == 200
        assert endpoint.post(envelope(changed, "Ev2")).status_code == 200
        for _ in range(500):
            if statements(slack_lore) == ["The launch date is 19 May."]:
                break
            time.sleep(0.02)
        assert statements(slack_lore) == ["The launch date is 19 May."]
    finally:
        server.stop()
