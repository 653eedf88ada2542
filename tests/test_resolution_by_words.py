"""Changes read by words alone (an embedder the meaning thresholds were not chosen for), through
the pipeline: each rule with a control on the other side of its boundary."""

from __future__ import annotations

from .conftest import WS, event
from .helpers import HashEmbedder, put

OLDER = "The default branch of the mobile app repo is develop."


def _statuses(lore, channel: str) -> dict[str, str]:
    facts = [lore.stores.facts.current_version(i) for i in lore.stores.facts.current_ids(WS, channel)]
    return {f.statement: f.status.value for f in facts if f is not None}


def _after(lore, channel: str, newer: str) -> dict[str, str]:
    put(
        lore,
        event(OLDER, channel=channel, ts="2026-01-05T10:00:00Z"),
        event(newer, channel=channel, ts="2026-02-05T10:00:00Z"),
    )
    return _statuses(lore, channel)


def test_a_newer_statement_naming_nothing_new_replaces_an_older_one_a_word_longer(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    assert lore.pipeline.meaning is None
    # "app" is all the older says more; the lower-case word each ends on is its value.
    assert _after(lore, "C1", "default branch on the mobile repo is trunk")[OLDER] == "superseded"
    # Controls: the older says two things more (it may be about a narrower thing) ...
    assert set(_after(lore, "C2", "default branch on the repo is trunk").values()) == {"active"}
    # ... or the newer names an id the older does not ("mobile-sdk" is not "mobile").
    assert set(_after(lore, "C3", "default branch on the mobile-sdk repo is trunk").values()) == {"active"}
