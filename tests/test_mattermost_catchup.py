"""Mattermost catch-up after downtime: the websocket has no resume, so every hello starts a
``?since=`` read; a connector stopped while posts are created, edited and deleted ends with the
store of one that never stopped (local Mattermost server, websocket and REST, the real store)."""

from __future__ import annotations

from typing import Any

from mattermostautodriver import TypedDriver

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.mattermost import runner
from teamlore.connectors.mattermost.catchup import catch_up_all
from teamlore.connectors.mattermost.listener import MattermostListener

from .catchup_check import snapshot
from .fake_mattermost import TOKEN, FakeMattermost
from .test_mattermost_connector import JAN5_MS, WS, frame, listen, post, posted
from .test_mattermost_connector import mm as mm  # noqa: F401 (the fixture)

MINUTE = 60_000


def connector(tmp_path, name: str, embedder, clock, mm: FakeMattermost) -> Teamlore:
    settings = Settings(
        data_dir=tmp_path / name,
        mattermost_url=mm.url,
        mattermost_token=TOKEN,
        mattermost_workspace=WS,
        _env_file=None,
    )
    return Teamlore(settings, embedder=embedder, clock=clock)


def edit(body: dict[str, Any], text: str, at: int) -> dict[str, Any]:
    return {**body, "message": text, "edit_at": at, "update_at": at}


def test_a_mattermost_connector_stopped_catches_up_on_its_next_hello(mm, tmp_path, embedder, clock):
    always = connector(tmp_path, "always", embedder, clock, mm)
    restarted = connector(tmp_path, "restarted", embedder, clock, mm)
    said: list[str] = []
    with TypedDriver(runner.driver_options(mm.url, TOKEN)) as driver:
        driver.login()
        listeners = [
            MattermostListener(always, driver, mm.url, WS),
            MattermostListener(
                restarted,
                driver,
                mm.url,
                WS,
                on_connect=lambda: catch_up_all(restarted, driver, say=said.append, sleep=lambda _s: None),
            ),
        ]
        first = post("p1", "The launch date is 12 May.")
        root = post("p2", "Alice owns the billing migration.", at=JAN5_MS + MINUTE)
        reply = post("p3", "The billing migration ships in June.", at=JAN5_MS + 2 * MINUTE, root_id="p2")
        gone = post("p4", "The office moves to Berlin.", at=JAN5_MS + 3 * MINUTE)
        once = edit(first, "The launch date is 13 May.", JAN5_MS + 4 * MINUTE)
        mm.posts["town"] = [once, root, reply, gone]
        for listener in listeners:  # both live: posts, and an edit
            listen(
                listener, mm, [posted(p) for p in (first, root, reply, gone)] + [frame("post_edited", once)]
            )
        # The restarted connector is down: an edit, a delete, a new post and a new reply.
        twice = edit(first, "The launch date is 19 May.", JAN5_MS + 5 * MINUTE)
        deleted = {**gone, "delete_at": JAN5_MS + 6 * MINUTE, "update_at": JAN5_MS + 6 * MINUTE}
        new = post("p5", "The design review is on Thursdays.", at=JAN5_MS + 7 * MINUTE)
        answer = post("p6", "Bob reviews the billing migration.", at=JAN5_MS + 8 * MINUTE, root_id="p2")
        mm.posts["town"] = [twice, root, reply, deleted, new, answer]
        down = [frame("post_edited", twice), frame("post_deleted", deleted), posted(new), posted(answer)]
        listen(listeners[0], mm, down)
        assert snapshot(always, WS, ["town"]) != snapshot(restarted, WS, ["town"])  # control
        listen(listeners[1], mm, [])  # connects again: hello, then the catch-up
    assert said and "since" in mm.post_calls[-1]
    expected = snapshot(always, WS, ["town"], deleted=["p4"])
    assert snapshot(restarted, WS, ["town"], deleted=["p4"]) == expected
    assert expected["deleted"] == {("town", "p4"): True}
    assert expected["messages"][("town", "p1")][0] == "The launch date is 19 May."
    assert expected["messages"][("town", "p6")][1] == "p2"
    always.close()
    restarted.close()
