"""The model judge behind the heuristic guard: asked only about pairs on one subject, reasons
before it decides, unsure verdicts go to review, failures leave the rules' verdict."""

from __future__ import annotations

import json

import pytest

from teamlore.domain import FactStatus, Scope
from teamlore.extraction import OfflineExtractor

from .conftest import WS, event
from .helpers import put
from .llm_server import Reply, faithful


def judge_says(answer: dict | str):
    def respond(request):
        if request.role != "judge":
            return faithful(request)
        return Reply(content=answer if isinstance(answer, str) else json.dumps(answer))

    return respond


@pytest.fixture
def judged(make_llm_lore, model):
    def make(answer, **settings):
        model.default = judge_says(answer)
        return make_llm_lore(extractor=OfflineExtractor(), **settings)

    return make


def by_statement(lore, text, channel="C1"):
    for fact_id in lore.stores.facts.current_ids(WS, channel):
        fact = lore.stores.facts.current_version(fact_id)
        if fact.statement == text:
            return fact
    raise AssertionError(f"no fact {text!r}")


SUPERSEDES = {"reasoning": "Same launch, a later date.", "decision": "supersedes", "confidence": 0.95}


def test_the_judge_is_asked_only_about_pairs_past_the_guard(judged, model):
    lore = judged(SUPERSEDES)
    put(lore, event("The office lease ends in December.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The device lab lease ends in June.", ts="2026-01-09T10:00:00Z"))
    # Another subject: the guard decides, the model is never asked, nothing is retired.
    assert model.chats("judge") == []
    assert by_statement(lore, "The office lease ends in December.").status is FactStatus.ACTIVE
    # Control: the same subject and slot goes to the judge, whose verdict is applied.
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The launch moved to March 10.", ts="2026-01-09T10:00:00Z"))
    [asked] = model.chats("judge")
    assert asked.data["older"]["statement"] == "The launch is on March 3."
    assert asked.data["newer"]["statement"] == "The launch moved to March 10."
    assert by_statement(lore, "The launch is on March 3.").status is FactStatus.SUPERSEDED


def test_an_unsure_verdict_makes_the_pair_contested_for_review_not_retired(judged):
    lore = judged({**SUPERSEDES, "confidence": 0.4}, llm_judge_min_confidence=0.7)
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The launch moved to March 10.", ts="2026-01-09T10:00:00Z"))
    older = by_statement(lore, "The launch is on March 3.")
    assert older.status is FactStatus.CONTESTED
    [item] = lore.stores.review.items(Scope(WS, ["C1"]))
    assert item.kind == "contested" and item.older_fact == older.fact_id
    shown = lore.reader.search("launch", Scope(WS, ["C1"]), k=5).hits
    assert len(shown) == 2  # both stay readable


def test_a_verdict_without_reasoning_is_refused_and_the_rules_decide(judged, model):
    # The rules contest two values stated within the hour; the model, unreasoned, says supersedes.
    lore = judged({"decision": "supersedes", "confidence": 0.99})
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The launch is on March 10.", ts="2026-01-05T10:20:00Z"))
    assert len(model.chats("judge")) == 1
    assert by_statement(lore, "The launch is on March 3.").status is FactStatus.CONTESTED
    row = next(r for r in lore.stores.spend.totals() if r.role == "judge")
    assert (row.calls, row.rejected, row.fallbacks) == (1, 1, 1)


def test_with_its_reasoning_the_same_verdict_is_applied(judged):
    lore = judged({"reasoning": "The later message corrects the date.", **SUPERSEDES})
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The launch is on March 10.", ts="2026-01-05T10:20:00Z"))
    assert by_statement(lore, "The launch is on March 3.").status is FactStatus.SUPERSEDED


def test_malformed_judge_output_leaves_the_rules_verdict(judged):
    lore = judged("{decision: supersedes")
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The launch moved to March 10.", ts="2026-01-09T10:00:00Z"))
    # The rules supersede on a cue: that stands.
    assert by_statement(lore, "The launch is on March 3.").status is FactStatus.SUPERSEDED


def test_a_hedged_newer_statement_is_never_retiring_whatever_the_model_says(judged):
    lore = judged(SUPERSEDES)
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("I think the launch is on March 10.", ts="2026-01-09T10:00:00Z"))
    # The settled value stands; the hedge is flagged and a reviewer is asked.
    assert by_statement(lore, "The launch is on March 3.").status is FactStatus.ACTIVE
    assert by_statement(lore, "I think the launch is on March 10.").status is FactStatus.CONTESTED
    assert [item.kind for item in lore.review.items(Scope(WS, ["C1"]))] == ["contested"]


def test_the_model_may_keep_a_pair_the_rules_would_retire(judged):
    lore = judged({"reasoning": "A different launch: the beta.", "decision": "unrelated", "confidence": 0.9})
    put(lore, event("The launch is on March 3.", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The launch moved to March 10.", ts="2026-01-09T10:00:00Z"))
    assert by_statement(lore, "The launch is on March 3.").status is FactStatus.ACTIVE
