"""The Mattermost connector end to end: websocket frames from a local server (authentication,
hello, posted, post_edited, post_deleted), REST backfill with Mattermost's paging, the real store."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import pytest
from mattermostautodriver import TypedDriver

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.connectors.background import BackgroundBackfills
from teamlore.connectors.mattermost import runner
from teamlore.connectors.mattermost.listener import MattermostListener
from teamlore.domain import Scope, Visibility
from teamlore.errors import BackendUnavailable, InvalidInput

from .fake_mattermost import BOT, TOKEN, FakeMattermost

WS = "acme"
JAN5_MS = 1_767_607_200_000  # 2026-01-05T10:00:00Z


def post(post_id: str, text: str, channel: str = "town", user: str = "u1", at: int = JAN5_MS, **extra: Any):
    return {
        "id": post_id,
        "create_at": at,
        "update_at": at,
        "edit_at": 0,
        "delete_at": 0,
        "user_id": user,
        "channel_id": channel,
        "root_id": "",
        "message": text,
        "type": "",
        "props": {},
        "metadata": {},
        **extra,
    }


def frame(event: str, body: dict[str, Any], **data: Any) -> dict[str, Any]:
    return {
        "event": event,
        "data": {"post": json.dumps(body), **data},
        "broadcast": {"channel_id": body["channel_id"], "team_id": "", "user_id": ""},
        "seq": 1,
    }


def posted(body: dict[str, Any], kind: str = "O", name: str = "town-square") -> dict[str, Any]:
    sender = "@bob" if body["user_id"] == "u2" else "@alice"
    return frame("posted", body, channel_type=kind, channel_name=name, sender_name=sender, team_id="team1")


@pytest.fixture
def mm() -> Iterator[FakeMattermost]:
    with FakeMattermost() as fake:
        fake.add_channel("town", "town-square")
        fake.add_channel("priv", "deals", "P")
        fake.users["u1"] = {"id": "u1", "username": "alice", "is_bot": False}
        fake.users["u2"] = {"id": "u2", "username": "bob", "is_bot": False}
        fake.users["b2"] = {"id": "b2", "username": "deploybot", "is_bot": True}
        yield fake


@pytest.fixture
def mm_lore(tmp_path, embedder, clock, mm) -> Iterator[Teamlore]:
    settings = Settings(
        data_dir=tmp_path / "store",
        mattermost_url=mm.url,
        mattermost_token=TOKEN,
        mattermost_workspace=WS,
        mattermost_history_page_size=5,
        _env_file=None,
    )
    lore = Teamlore(settings, embedder=embedder, clock=clock)
    yield lore
    lore.close()


@pytest.fixture
def driver(mm) -> Iterator[TypedDriver]:
    with TypedDriver(runner.driver_options(mm.url, TOKEN)) as found:
        found.login()
        yield found


@pytest.fixture
def listener(mm_lore, mm, driver) -> MattermostListener:
    return MattermostListener(mm_lore, driver, mm.url, WS)


def listen(listener: MattermostListener, mm: FakeMattermost, frames: list[Any]) -> None:
    """Connect through the driver's websocket, let the server send ``frames``, wait until each
    (and the OK reply and hello) has been handled, then stop the listener."""

    async def main() -> None:
        expected, sockets = listener.handled + len(frames) + 2, mm.sockets
        task = asyncio.create_task(listener.run())
        for _ in range(250):  # frames go to this connection, not to one still closing
            if mm.sockets > sockets:
                break
            await asyncio.sleep(0.02)
        for f in frames:
            mm.push(f)
        for _ in range(500):
            if listener.handled >= expected or task.done():
                break
            await asyncio.sleep(0.02)
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        assert listener.handled >= expected, f"handled {listener.handled} of {expected} frames"

    asyncio.run(main())


def statements(lore: Teamlore, *channels: str) -> list[str]:
    return [v.fact.statement for v in lore.reader.list(Scope(WS, channels or ["town"]), k=50).hits]


def test_posted_edited_and_deleted_frames_reach_the_fact_store(listener, mm, mm_lore):
    original = post("p1", "The launch date is 12 May.")
    edited = {**original, "message": "The launch date is 19 May.", "edit_at": JAN5_MS + 60_000}
    deleted = {**edited, "delete_at": JAN5_MS + 120_000}
    listen(listener, mm, [posted(original)])
    assert statements(mm_lore) == ["The launch date is 12 May."]
    stored = mm_lore.stores.messages.get_message(WS, "town", "p1")
    assert (stored.author_name, stored.permalink) == ("alice", f"{mm.url}/acme/pl/p1")
    listen(listener, mm, [frame("post_edited", edited)])
    assert statements(mm_lore) == ["The launch date is 19 May."]
    listen(listener, mm, [frame("post_deleted", deleted, delete_by="u1")])
    assert statements(mm_lore) == []
    assert mm_lore.stores.messages.get_message(WS, "town", "p1").deleted_at is not None
    assert mm.sockets == 3  # authenticated each time with the bot's token


def test_replies_private_channels_renames_and_files_are_recorded(listener, mm, mm_lore):
    root = post("r1", "Which vendor for the CRM?", "priv")
    reply = post(
        "r2",
        "We chose Globex as the CRM vendor.",
        "priv",
        at=JAN5_MS + 60_000,
        root_id="r1",
        file_ids=["f1"],
        metadata={
            "files": [
                {
                    "id": "f1",
                    "name": "Globex Q3 roadmap.pdf",
                    "extension": "pdf",
                    "size": 52_000,
                    "mime_type": "application/pdf",
                }
            ]
        },
    )
    renamed = {
        "event": "channel_updated",
        "data": {
            "channel": json.dumps({"id": "priv", "name": "deals-2026", "type": "P", "team_id": "team1"})
        },
        "broadcast": {"channel_id": "priv"},
        "seq": 3,
    }
    listen(listener, mm, [posted(root, "P", "deals"), posted(reply, "P", "deals"), renamed])
    assert mm_lore.stores.messages.get_message(WS, "priv", "r2").thread_id == "r1"
    channel = next(c for c in mm_lore.stores.messages.channels(WS) if c.channel == "priv")
    assert (channel.name, channel.visibility, channel.platform) == (
        "deals-2026",
        Visibility.PRIVATE,
        "mattermost",
    )
    found = mm_lore.search_media_references(Scope(WS, ["priv"]), "roadmap", kind="pdf")
    assert [(f.name, f.size, f.url) for f in found] == [
        ("Globex Q3 roadmap.pdf", 52_000, f"{mm.url}/api/v4/files/f1")
    ]
    assert mm_lore.search_media_references(Scope(WS, ["town"]), "roadmap") == []  # paired: another channel


def test_malformed_and_unknown_frames_are_logged_and_skipped(listener, mm, mm_lore, caplog):
    caplog.set_level(logging.INFO)
    broken = [
        "not json at all",
        "[1, 2, 3]",
        {"event": "posted", "data": {}, "broadcast": {}, "seq": 2},
        {"event": "posted", "data": {"post": "{not json"}, "broadcast": {}, "seq": 3},
        {"event": "posted", "data": {"post": json.dumps({"message": "no id"})}, "broadcast": {}, "seq": 4},
        posted(post("x1", "A post in a channel the server does not know.", channel="gone")),
        posted(post("x2", "Bad time.", at=-5)),
        {"event": "typing", "data": {"parent_id": ""}, "broadcast": {"channel_id": "town"}, "seq": 5},
        {"event": "channel_updated", "data": {"channel": 42}, "broadcast": {}, "seq": 6},
        posted(post("ok1", "The launch date is 12 May.")),
    ]
    listen(listener, mm, broken)
    assert "skipped" in caplog.text
    assert statements(mm_lore) == ["The launch date is 12 May."]  # the listener went on


def test_a_mention_is_answered_from_the_asking_channel_only(listener, mm, mm_lore):
    secret = post("s1", "The Globex renewal price is 40 dollars per seat.", "priv")
    question = "@teamlore what is the Globex renewal price?"
    ask_public = post("q1", question, "town", user="u2", at=JAN5_MS + 1000)
    ask_private = post("q2", question, "priv", user="u2", at=JAN5_MS + 2000)
    listen(listener, mm, [posted(secret, "P", "deals"), posted(ask_public)])
    assert len(mm.created) == 1
    outside = mm.created[0]
    assert outside["channel_id"] == "town" and outside["root_id"] == "q1"
    assert outside["message"].startswith("Nothing known") and "40 dollars" not in outside["message"]
    listen(listener, mm, [posted(ask_private, "P", "deals")])  # control: asked where it was said
    inside = mm.created[1]
    assert inside["channel_id"] == "priv" and "40 dollars" in inside["message"]
    assert f"]({mm.url}/acme/pl/s1)" in inside["message"]


def test_bots_and_the_bot_itself_get_no_answer_and_its_posts_are_not_captured(listener, mm, mm_lore):
    fact = post("f1", "The launch date is 12 May.")
    from_bot_prop = post(
        "m1", "@teamlore launch date?", user="u2", at=JAN5_MS + 1, props={"from_bot": "true"}
    )
    bot_account = post("m2", "@teamlore launch date?", user="b2", at=JAN5_MS + 2)
    itself = post("m3", "@teamlore The office moves to Berlin in June.", user=BOT["id"], at=JAN5_MS + 3)
    listen(listener, mm, [posted(fact), posted(from_bot_prop), posted(bot_account), posted(itself)])
    assert mm.created == []
    assert mm_lore.stores.messages.get_message(WS, "town", "m3") is None
    assert not any("Berlin" in s for s in statements(mm_lore))
    listen(listener, mm, [posted(post("m4", "@teamlore launch date?", user="u2", at=JAN5_MS + 4))])
    assert len(mm.created) == 1 and "12 May" in mm.created[0]["message"]  # control: a person


def history(mm: FakeMattermost, count: int = 12) -> None:
    mm.posts["town"] = [
        post(
            f"h{n:02d}",
            f"Decision {n}: the build server number {n} moves to rack {n}.",
            at=JAN5_MS + n * 60_000,
        )
        for n in range(count)
    ]
    mm.posts["town"].insert(3, post("sys", "alice joined the channel.", type="system_join_channel"))
    mm.posts["town"].append(
        post("own", "The office moves to Berlin in June.", user=BOT["id"], at=JAN5_MS + 10**7)
    )


def test_a_backfill_pages_back_by_post_id_and_waits_out_a_429(mm, mm_lore):
    history(mm)
    mm.rate_limit_calls = {2: 2}  # the second listing answers 429, Retry-After: 2
    slept: list[float] = []
    said: list[str] = []
    report = runner.backfill(mm_lore, "town", say=said.append, sleep=slept.append)
    assert report.done and report.total_fetched == 12 and report.rate_limited == 1
    assert slept == [2.0]
    befores = [call.get("before") for call in mm.post_calls]
    assert befores[0] is None and all(befores[1:]) and all(call["per_page"] == "5" for call in mm.post_calls)
    assert len(statements(mm_lore)) == 12
    assert "of about 14 (the server's count)" in said[1]  # the channel's posts, system and own included
    assert "done" in said[-1]


def test_a_private_channel_is_backfilled_only_where_the_bot_is_a_member(mm, mm_lore):
    mm.add_channel("priv2", "board", "P", bot_member=False)
    mm.posts["priv2"] = [post("b1", "The board approved the budget.", "priv2")]
    with pytest.raises(InvalidInput, match="private and the bot is not a member"):
        runner.backfill(mm_lore, "priv2", say=lambda _: None)
    assert mm.post_calls == []
    mm.posts["priv"] = [post("d1", "The Globex renewal price is 40 dollars per seat.", "priv")]
    assert runner.backfill(mm_lore, "priv", say=lambda _: None).done  # control: a member
    assert len(statements(mm_lore, "priv")) == 1


def test_being_added_to_a_channel_starts_its_backfill(mm, mm_lore, driver):
    history(mm, count=3)
    jobs = BackgroundBackfills(lambda _ws, channel: runner.backfill(mm_lore, channel, say=lambda _: None))
    added = MattermostListener(mm_lore, driver, mm.url, WS, on_join=jobs.submit)
    someone = {
        "event": "user_added",
        "data": {"team_id": "team1", "user_id": "u1"},
        "broadcast": {"channel_id": "town"},
        "seq": 2,
    }
    try:
        listen(added, mm, [someone])
        jobs.join(5)
        assert mm.post_calls == []  # control: a person was added
        listen(added, mm, [{**someone, "data": {"team_id": "team1", "user_id": BOT["id"]}}])
        jobs.join(10)
        assert len(statements(mm_lore)) == 3
    finally:
        jobs.close()


def test_a_wrong_token_is_refused_with_a_clear_error(mm, tmp_path, embedder):
    lore = Teamlore(
        Settings(data_dir=tmp_path / "s", mattermost_url=mm.url, mattermost_token="wrong", _env_file=None),
        embedder=embedder,
    )
    try:
        with pytest.raises(BackendUnavailable, match="refused the bot's token"):
            runner.backfill(lore, "town", say=lambda _: None)
    finally:
        lore.close()


def test_a_post_with_file_ids_only_gets_its_files_named_and_read(listener, mm, mm_lore):
    from . import files_made as made
    from .test_shared_files import BUDGET_PAGES

    mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    bare = post("p1", "Here is the Falcon report.", file_ids=["f1", "gone"])  # no metadata.files

    listen(listener, mm, [posted(bare)])

    (ref,) = mm_lore.search_media_references(Scope(WS, ["town"]), "report")
    assert (ref.name, ref.size, ref.status) == ("report.pdf", mm.files["f1"][0]["size"], "extracted")
    assert mm.downloads == [("/api/v4/files/f1", f"Bearer {TOKEN}")]
    found = mm_lore.reader.search("Falcon launch budget", Scope(WS, ["town"]), k=5)
    assert "report.pdf, p. 2" in {s.file_ref for hit in found.hits for s in hit.sources}
    assert mm_lore.stores.messages.get_message(WS, "town", "p1").text == "Here is the Falcon report."


def test_a_backfill_reads_the_files_of_the_posts_it_takes(mm, mm_lore):
    from . import files_made as made
    from .test_shared_files import BUDGET_PAGES

    info = mm.share("f1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
    mm.posts["town"] = [
        post("b1", "Here is the Falcon report.", file_ids=["f1"], metadata={"files": [info]}),
        post("b2", "And the copy without its metadata.", at=JAN5_MS + 60_000, file_ids=["f1"]),
    ]

    assert runner.backfill(mm_lore, "town", say=lambda _: None).done

    refs = mm_lore.search_media_references(Scope(WS, ["town"]), "report")
    assert sorted((r.message_id, r.status) for r in refs) == [("b1", "extracted"), ("b2", "extracted")]
    assert mm.downloads == [("/api/v4/files/f1", f"Bearer {TOKEN}")] * 2
