"""What every connector shares: delivery, resumable rate-limited backfill, in-channel answers."""

from __future__ import annotations

import pytest

from teamlore.connectors.answering import ChannelAnswerer, slack_link
from teamlore.connectors.backfill import Page, RateLimited, run_backfill
from teamlore.connectors.delivery import EventSink
from teamlore.domain import Scope
from teamlore.workers import mutations

from .conftest import WS, event
from .helpers import put

HISTORY = [
    event(f"Decision {n}: the build server number {n} moves to rack {n}.", message_id=f"h{n}")
    for n in range(7)
]


class FakeHistory:
    """A platform's paged history: three events a page, a 429 on the second call."""

    def __init__(self, fail_after_calls: int | None = None, limit_on_call: int | None = 2) -> None:
        self.calls: list[str] = []
        self.fail_after_calls = fail_after_calls
        self.limit_on_call = limit_on_call

    def __call__(self, cursor: str) -> Page:
        self.calls.append(cursor)
        if len(self.calls) == self.limit_on_call:
            raise RateLimited(7.0)
        if self.fail_after_calls is not None and len(self.calls) > self.fail_after_calls:
            raise ConnectionError("platform went away")
        start = int(cursor or 0)
        nxt = start + 3
        return Page(HISTORY[start:nxt], str(nxt) if nxt < len(HISTORY) else None)


def test_a_backfill_waits_out_429s_keeps_its_interval_and_delivers_everything(lore):
    slept: list[float] = []
    history = FakeHistory()
    report = run_backfill(
        "slack",
        WS,
        "C1",
        history,
        EventSink(lore),
        lore.stores.checkpoints,
        min_interval_s=60.0,
        sleep=slept.append,
        monotonic=lambda: 0.0,
    )
    assert report.done and report.total_fetched == 7 and report.rate_limited == 1
    assert 60.0 in slept and all(s >= 7.0 for s in slept)  # Retry-After 7 s, but never below the interval
    assert len(lore.reader.list(Scope(WS, ["C1"]), k=50).hits) == 7


def test_an_interrupted_backfill_resumes_after_the_last_delivered_page(lore):
    history = FakeHistory(fail_after_calls=3)  # page 1, a 429, page 2, then the platform fails
    with pytest.raises(ConnectionError):
        run_backfill(
            "slack", WS, "C1", history, EventSink(lore), lore.stores.checkpoints, sleep=lambda s: None
        )
    saved = lore.stores.checkpoints.get("slack", WS, "C1")
    assert saved is not None and saved.cursor == "6" and not saved.done and saved.fetched == 6
    again = FakeHistory(limit_on_call=None)
    report = run_backfill(
        "slack", WS, "C1", again, EventSink(lore), lore.stores.checkpoints, sleep=lambda s: None
    )
    assert again.calls == ["6"] and report.done and report.total_fetched == 7
    assert len(lore.reader.list(Scope(WS, ["C1"]), k=50).hits) == 7
    finished = run_backfill("slack", WS, "C1", FakeHistory(), EventSink(lore), lore.stores.checkpoints)
    assert finished.pages == 0 and finished.done


def test_the_bot_answers_from_the_asking_channel_only(lore):
    put(
        lore,
        event(
            "The Globex renewal price is 40 dollars per seat.",
            channel="CPRIV",
            channel_visibility="private",
            message_id="p1",
        ),
    )
    bot = ChannelAnswerer(lore)
    inside = bot.reply(
        WS, "CPRIV", "U2", "what is the Globex renewal price?", author_is_bot=False, link=slack_link
    )
    outside = bot.reply(WS, "CPUB", "U2", "what is the Globex renewal price?", author_is_bot=False)
    assert inside is not None and "40 dollars" in inside.text and "<https://" in inside.text
    assert (
        outside is not None and "40 dollars" not in outside.text and outside.text.startswith("Nothing known")
    )


def test_the_bot_never_answers_bots_and_limits_each_user(lore):
    put(lore, event("The launch date is 12 May."))
    bot = ChannelAnswerer(lore, per_user_per_minute=2, monotonic=lambda: 100.0)
    assert bot.reply(WS, "C1", "B1", "launch date?", author_is_bot=True) is None
    answers = [bot.reply(WS, "C1", "U1", "launch date?", author_is_bot=False) for _ in range(3)]
    assert [a.answer is not None for a in answers] == [True, True, False]
    assert "try again" in answers[2].text
    other = bot.reply(WS, "C1", "U2", "launch date?", author_is_bot=False)
    assert other.answer is not None  # control: another user is not limited


def test_the_bot_flags_a_contested_fact(lore):
    put(lore, event("The launch date is 12 May.", ts="2026-03-01T10:00:00Z"))
    put(lore, event("Lunch on Friday is tacos and salad.", ts="2026-03-01T11:00:00Z"))
    found = lore.reader.list(Scope(WS, ["C1"])).hits
    launch = next(v.fact for v in found if "launch" in v.fact.statement)
    other = next(v.fact for v in found if "tacos" in v.fact.statement)
    mutations.contest(lore.stores.facts, launch, other, lore.clock())
    reply = ChannelAnswerer(lore).reply(WS, "C1", "U1", "launch date?", author_is_bot=False)
    assert "contested" in reply.text
