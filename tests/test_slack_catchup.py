"""Slack catch-up after downtime: a connector stopped while messages are posted, edited and
deleted reads them on start and ends with the store of one that never stopped (local Slack Web
API, signed events through Bolt on a real port, the real store)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.running import AsgiServer
from teamlore.connectors.slack import runner
from teamlore.connectors.slack.bot import SlackBot
from teamlore.connectors.slack.catchup import catch_up_all
from teamlore.connectors.slack.directory import SlackDirectory

from .catchup_check import snapshot
from .fake_slack import APP_TOKEN, SECRET, TEAM, TOKEN, FakeSlack, SocketModeServer
from .test_slack_connector import JAN5, Endpoint, envelope, message, ts


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.add_channel("C1", "eng")
        fake.users["U1"] = {"id": "U1", "name": "alice", "real_name": "Alice Ng", "profile": {}}
        yield fake


def connector(tmp_path, name: str, embedder, clock, slack: FakeSlack) -> Teamlore:
    settings = Settings(
        data_dir=tmp_path / name,
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=slack.base_url,
        slack_history_page_size=2,  # several pages: the catch-up pages like a backfill
        _env_file=None,
    )
    return Teamlore(settings, embedder=embedder, clock=clock)


class Running:
    """A live Slack endpoint for one store."""

    def __init__(self, lore: Teamlore, slack: FakeSlack) -> None:
        bot = SlackBot(lore, WebClient(token=TOKEN, base_url=slack.base_url), process_before_response=True)
        self.server = AsgiServer(runner.events_app(bot.app), "127.0.0.1", 0).start()
        self.endpoint = Endpoint(f"http://127.0.0.1:{self.server.port}/slack/events", bot)
        self.sent = 0

    def post(self, event: dict[str, Any]) -> None:
        self.sent += 1
        assert self.endpoint.post(envelope(event, f"Ev{self.sent}")).status_code == 200

    def stop(self) -> None:
        self.server.stop()


ROOT, REPLY, OLD, GONE = ts(JAN5 + 60), ts(JAN5 + 90), ts(JAN5), ts(JAN5 + 120)


def before(slack: FakeSlack) -> list[dict[str, Any]]:
    """What both connectors see live: a message, a thread with a reply, one later deleted."""
    posted = [
        message(OLD, "The launch date is 12 May."),
        message(ROOT, "Alice owns the billing migration.", thread_ts=ROOT),
        message(REPLY, "The billing migration ships in June.", thread_ts=ROOT),
        message(GONE, "The office moves to Berlin."),
    ]
    slack.history["C1"] = [posted[3], {**posted[1], "reply_count": 1}, posted[0]]
    slack.replies[("C1", ROOT)] = [posted[1], posted[2]]
    return posted


def while_down(slack: FakeSlack) -> list[dict[str, Any]]:
    """Posted, edited and deleted while one connector is down; the live events the other gets."""
    edited = {**message(OLD, "The launch date is 19 May."), "edited": {"user": "U1", "ts": ts(JAN5 + 300)}}
    new = message(ts(JAN5 + 400), "The design review is on Thursdays.")
    reply = message(ts(JAN5 + 500), "Bob reviews the billing migration.", thread_ts=ROOT)
    slack.history["C1"] = [new, {**slack.history["C1"][1], "reply_count": 2}, edited]
    slack.replies[("C1", ROOT)] = [*slack.replies[("C1", ROOT)], reply]
    changed = {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": ts(JAN5 + 300, 5)}
    deleted = {"type": "message", "subtype": "message_deleted", "channel": "C1", "ts": ts(JAN5 + 350)}
    return [{**changed, "message": edited}, {**deleted, "deleted_ts": GONE}, new, reply]


def test_a_slack_connector_stopped_catches_up_to_one_that_never_stopped(slack, tmp_path, embedder, clock):
    always = connector(tmp_path, "always", embedder, clock, slack)
    restarted = connector(tmp_path, "restarted", embedder, clock, slack)
    live = [Running(always, slack), Running(restarted, slack)]
    try:
        for event in before(slack):
            for running in live:
                running.post(event)
        live[1].stop()  # the restarted connector is down from here
        for event in while_down(slack):
            live[0].post(event)
        assert snapshot(always, TEAM, ["C1"]) != snapshot(restarted, TEAM, ["C1"])  # control
        said: list[str] = []
        reports = catch_up_all(
            restarted,
            SlackDirectory(WebClient(token=TOKEN, base_url=slack.base_url)),
            say=said.append,
            sleep=lambda _s: None,
        )
    finally:
        live[0].stop()
    assert len(reports) == 1 and reports[0].deleted == 1 and said
    history = slack.method_calls("conversations.history")
    assert history[-1].get("oldest")  # from the high-water mark, not from the channel's start
    expected = snapshot(always, TEAM, ["C1"], deleted=[GONE])
    assert snapshot(restarted, TEAM, ["C1"], deleted=[GONE]) == expected
    assert expected["deleted"] == {("C1", GONE): True}
    assert ("C1", ts(JAN5 + 500)) in expected["messages"] and expected["messages"][("C1", OLD)][0].endswith(
        "19 May."
    )
    # Started again with nothing new: the overlap changes nothing.
    catch_up_all(
        restarted,
        SlackDirectory(WebClient(token=TOKEN, base_url=slack.base_url)),
        say=said.append,
        sleep=lambda _s: None,
    )
    assert snapshot(restarted, TEAM, ["C1"], deleted=[GONE]) == expected
    always.close()
    restarted.close()


def test_every_socket_mode_hello_starts_a_catch_up(slack):
    """Slack says hello on each connection, the first and every reconnection."""
    started = threading.Event()
    with SocketModeServer() as link:
        slack.socket_url = link.url
        client = WebClient(token=TOKEN, base_url=slack.base_url)
        from slack_bolt import App

        app = App(client=client, signing_secret=SECRET)
        handler = runner.socket_mode(app, APP_TOKEN)
        runner.catch_up_on_hello(handler, started.set)
        handler.connect()
        try:
            assert started.wait(10)
        finally:
            handler.close()
