"""Ask and recent activity: answers only from visible facts, cited; 'nothing known' when nothing is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from teamlore.capabilities.answers import Composed
from teamlore.domain import ReadView, Scope
from teamlore.errors import InvalidInput

from .conftest import WS, event
from .helpers import put


def test_an_answer_cites_the_fact_and_its_source_message(lore):
    put(lore, event("The launch date is 12 May.", channel="C1", message_id="m1"))
    put(lore, event("Lunch on Friday is tacos.", channel="C1", message_id="m2"))
    answer = lore.ask("when is the launch date?", Scope(WS, ["C1"]))
    assert answer.known
    assert "12 May" in answer.text and "[1]" in answer.text
    assert answer.citations[0].fact.statement == "The launch date is 12 May."
    assert [s.message_id for s in answer.citations[0].sources] == ["m1"]
    assert all("tacos" not in c.fact.statement for c in answer.citations)


def test_a_private_channel_fact_never_answers_a_question_asked_in_another_channel(lore):
    put(
        lore,
        event(
            "The Globex renewal price is 40 dollars per seat.", channel="CPRIV", channel_visibility="private"
        ),
    )
    question = "what is the Globex renewal price?"
    inside = lore.ask(question, Scope(WS, ["CPRIV"]))
    outside = lore.ask(question, Scope(WS, ["CPUB"]))
    assert inside.known and "40 dollars" in inside.text  # control: same question, its own channel
    assert not outside.known and outside.citations == ()
    assert "40 dollars" not in outside.text and outside.text.startswith("Nothing known")


def test_an_unrelated_nearest_neighbour_is_not_offered_as_an_answer(lore):
    put(lore, event("The office lease ends in December.", channel="C1"))
    answer = lore.ask("who owns the billing migration?", Scope(WS, ["C1"]))
    assert not answer.known and answer.citations == ()


def test_an_answer_as_of_a_past_moment_gives_the_value_of_then(lore, clock):
    put(lore, event("The launch date is 12 May.", ts="2026-03-01T10:00:00Z"))
    put(lore, event("The launch date moved to 2 June.", ts="2026-04-01T10:00:00Z"))
    now = lore.ask("what is the launch date?", Scope(WS, ["C1"]))
    then = lore.ask(
        "what is the launch date?", Scope(WS, ["C1"]), ReadView(valid_at=datetime(2026, 3, 15, tzinfo=UTC))
    )
    assert "2 June" in now.citations[0].fact.statement
    assert all("2 June" not in c.fact.statement for c in then.citations)
    assert "12 May" in then.citations[0].fact.statement


class _Inventing:
    name = "inventing"

    def __init__(self, cited: tuple[str, ...]) -> None:
        self.cited = cited

    def compose(self, question, facts):
        return Composed("The launch is on the moon [1].", self.cited)


@pytest.mark.parametrize("cited", [("F-not-given",), ()])
def test_a_composer_citing_facts_it_was_not_given_falls_back_to_the_extractive_answer(lore, cited):
    put(lore, event("The launch date is 12 May."))
    lore.composer = _Inventing(cited)
    answer = lore.ask("launch date?", Scope(WS, ["C1"]))
    assert answer.composer == "extractive" and "moon" not in answer.text
    assert answer.note and "inventing composer failed" in answer.note


def test_a_question_that_is_empty_or_too_long_is_refused(lore):
    with pytest.raises(InvalidInput):
        lore.ask("   ", Scope(WS, ["C1"]))
    with pytest.raises(InvalidInput):
        lore.ask("x" * 2001, Scope(WS, ["C1"]))


def test_recent_activity_lists_changes_of_the_scope_only_with_their_statements(lore, clock):
    put(lore, event("The launch date is 12 May.", channel="C1", ts="2026-05-30T10:00:00Z"))
    put(
        lore,
        event(
            "The Globex price is 40 dollars.",
            channel="CPRIV",
            channel_visibility="private",
            ts="2026-05-30T11:00:00Z",
        ),
    )
    mine = lore.recent_activity(Scope(WS, ["C1"]))
    theirs = lore.recent_activity(Scope(WS, ["CPRIV"]))
    assert [a.event.event for a in mine] == ["created"]
    assert mine[0].facts[0].fact.statement == "The launch date is 12 May."
    assert all(a.event.channel == "CPRIV" for a in theirs) and theirs  # control: the other side
    assert not any("Globex" in v.fact.statement for a in mine for v in a.facts)


def test_a_question_someone_asked_is_not_offered_as_an_answer(lore):
    put(lore, event("Q: who owns the billing service?", message_id="q1"))
    assert not lore.ask("who owns the billing service?", Scope(WS, ["C1"])).known
    put(lore, event("Omar is the owner of the billing service.", message_id="a1"))  # control
    answer = lore.ask("who owns the billing service?", Scope(WS, ["C1"]))
    assert [c.fact.statement for c in answer.citations] == ["Omar is the owner of the billing service."]


def test_facts_matching_most_of_the_question_come_first_and_a_passing_mention_is_left_out(lore):
    put(lore, event("Lena joins the Atlas team as a frontend engineer on Monday.", message_id="w1"))
    put(lore, event("The primary datastore for Atlas is PostgreSQL 15.", message_id="d1"))
    assert len(lore.reader.list(Scope(WS, ["C1"])).hits) == 2
    answer = lore.ask("what is the primary datastore for Atlas?", Scope(WS, ["C1"]))
    assert [c.fact.statement for c in answer.citations] == [
        "The primary datastore for Atlas is PostgreSQL 15."
    ]
    welcome = lore.ask("who joins the Atlas team?", Scope(WS, ["C1"]))  # control: its own question
    assert "Lena" in welcome.citations[0].fact.statement
