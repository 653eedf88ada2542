"""How much of the older subject a newer statement must name, by words alone (an embedder the
meaning thresholds were not chosen for): between short statements a cue needs a quarter of it,
between long chat sentences half; a count the newer derives from the older needs no shared word;
an acronym stands for the words it spells; a word for the same slot ("ends" / "stops") is none of
its own. Each case with a control on the other side of the boundary."""

from __future__ import annotations

from .conftest import WS, event
from .helpers import HashEmbedder, put

SHORT = "The weekly vendor sync call is on Tuesday."
LONG = "The weekly vendor sync call with the procurement and finance people is on Tuesday."


def _statuses(lore, channel: str) -> dict[str, str]:
    facts = [lore.stores.facts.current_version(i) for i in lore.stores.facts.current_ids(WS, channel)]
    return {f.statement: f.status.value for f in facts if f is not None}


def _pair(lore, channel: str, older: str, newer: str) -> dict[str, str]:
    put(
        lore,
        event(older, channel=channel, ts="2026-01-05T10:00:00Z"),
        event(newer, channel=channel, ts="2026-01-12T10:00:00Z"),
    )
    return _statuses(lore, channel)


def test_a_cue_naming_a_quarter_of_a_short_subject_retires_it_and_not_a_long_one(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    assert lore.pipeline.meaning is None
    # A quarter of the short subject ("sync" of weekly vendor sync call), with a cue: a change.
    assert _pair(lore, "C1", SHORT, "sync moved to Thursday")[SHORT] == "superseded"
    # Control: three of the long sentence's seven subject words, with the same cue: a long chat
    # sentence needs half, so both stay current.
    assert set(_pair(lore, "C2", LONG, "vendor sync call moved to Thursday").values()) == {"active"}


def test_a_cue_bringing_many_words_of_its_own_needs_half_the_short_subject(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    # Five subject words the older does not name: it speaks of something else ("Gina built a new
    # website for customers" after "Gina is working on Gina's online store": LoCoMo's chat).
    newer = "a new sync dashboard for finance, legal and design ships Thursday"
    assert set(_pair(lore, "C1", SHORT, newer).values()) == {"active"}
    # Control: the same cue and cover with fewer words of its own is a change.
    assert _pair(lore, "C2", SHORT, "the new sync is on Thursday")[SHORT] == "superseded"


def test_a_shared_month_is_no_shared_subject(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    older = "The release date is May 5."
    # Control first: a cue about another thing in the same month retires nothing.
    assert set(_pair(lore, "C1", older, "the vendor demo moved to May 12").values()) == {"active"}
    assert _pair(lore, "C2", older, "the release moved to May 12")[older] == "superseded"


def test_a_count_the_newer_derives_from_the_older_retires_it(make_lore):
    lore = make_lore()
    older = "The platform team is 7 people."
    # "two more" and "9" add up from the older 7: the newer leans on it however few words they share.
    assert _pair(lore, "C1", older, "two more joined, so 9 now")[older] == "superseded"
    # Control: a sum that does not add up names another count; both stay current.
    assert set(_pair(lore, "C2", older, "two more joined, so 10 now").values()) == {"active"}


def test_an_acronym_in_capitals_stands_for_the_words_it_spells(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    older = "The quality assurance lead for the packaging line is Hugo."
    assert _pair(lore, "C1", older, "QA lead for the packaging line is Sanna")[older] == "superseded"
    # Control: capitals that spell nothing the older says name another role; both stay current.
    assert set(_pair(lore, "C2", older, "QC lead for the packaging line is Sanna").values()) == {"active"}


def test_a_correction_naming_another_thing_too_still_corrects(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    older = "Mrs. Okafor's MRI is booked for 3pm."
    assert (
        _pair(lore, "C1", older, "sorry, meant her CT is at 3pm, the MRI slot is 5pm")[older] == "retracted"
    )
    # Control: without the correction, a named thing and a time both differing are two things.
    assert set(_pair(lore, "C2", older, "her CT is at 3pm, the MRI slot is 5pm").values()) == {"active"}


def test_a_word_for_the_same_slot_is_no_new_subject(make_lore):
    lore = make_lore()
    older = "The cafeteria stops serving lunch at 2pm."
    # "ends" is "stops": the newer names nothing the older does not, and means the same slot.
    assert _pair(lore, "C1", older, "cafeteria lunch ends at 1:30pm")[older] == "superseded"
    # Control: words of its own ("menu", "posts") make it another thing about lunch.
    assert set(_pair(lore, "C2", older, "cafeteria lunch menu posts at 1:30pm").values()) == {"active"}


def test_actually_inside_the_statement_corrects_what_was_just_said(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    older = "The vendor demo is on Tuesday."
    for channel, newer in (
        ("C1", "the vendor demo is actually on Wednesday"),
        ("C2", "the vendor demo is on Wednesday"),
    ):
        put(
            lore,
            event(older, channel=channel, ts="2026-01-05T10:00:00Z"),
            event(newer, channel=channel, ts="2026-01-05T10:20:00Z"),
        )
    assert _statuses(lore, "C1")[older] == "retracted"
    # Control: the same value twenty minutes later without it is two people disagreeing.
    assert _statuses(lore, "C2")[older] == "contested"
