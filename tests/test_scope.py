"""Scope: required on every read, compiled into every query, re-checked by the gate."""

from __future__ import annotations

import pytest

from teamlore.capabilities.facts import SearchMode
from teamlore.domain import Scope
from teamlore.errors import ScopeError
from teamlore.workers.pipeline import ingest

from .conftest import SAMPLE, WS, event
from .helpers import put

pytestmark = pytest.mark.every_fact_store


@pytest.mark.parametrize(("workspace", "channels"), [("", ["C1"]), ("T1", []), ("  ", ["C1"]), ("T1", [""])])
def test_a_read_without_a_workspace_or_a_channel_raises(workspace, channels):
    with pytest.raises(ScopeError):
        Scope(workspace, channels)


def test_reader_methods_refuse_to_run_without_a_scope(lore):
    with pytest.raises(TypeError):
        lore.reader.search("anything")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        lore.reader.list()  # type: ignore[call-arg]


@pytest.mark.parametrize("mode", list(SearchMode))
def test_the_same_query_and_embedding_find_a_fact_inside_its_scope_and_not_outside(lore, mode):
    put(
        lore,
        event(
            "The Globex renewal price is 40 dollars per seat.", channel="CPRIV", channel_visibility="private"
        ),
    )
    put(lore, event("Lunch menu for Friday is tacos and salad.", channel="CPUB"))
    query = "Globex renewal price per seat"
    inside = lore.reader.search(query, Scope(WS, ["CPRIV"]), mode=mode)
    outside = lore.reader.search(query, Scope(WS, ["CPUB"]), mode=mode)
    other_workspace = lore.reader.search(query, Scope("T2", ["CPRIV"]), mode=mode)
    assert [h.channel for h in inside.hits] == ["CPRIV"]
    assert all(h.channel == "CPUB" for h in outside.hits)
    assert "Globex" not in " ".join(h.text for h in outside.hits)
    assert other_workspace.hits == ()


def test_a_private_channel_never_appears_in_another_channels_results(lore):
    from teamlore.connectors.events_file import read_events_file

    events = [item.event for item in read_events_file(SAMPLE, 40_000)]
    ingest(events, lore.pipeline)
    private = {e.channel for e in events if e.channel_visibility.value == "private"}
    public = sorted({e.channel for e in events} - private)
    assert private == {"G04LEAD"}
    for query in (
        "Atlas 2.0 pricing",
        "acquisition Globex Bluebird",
        "hiring budget engineers",
        "price per seat",
    ):
        for mode in SearchMode:
            leaked = lore.reader.search(query, Scope("T0ACME", public), mode=mode, k=50)
            assert {h.channel for h in leaked.hits}.isdisjoint(private), (query, mode)
            # Control: the private channel itself does hold matching facts.
            own = lore.reader.search(query, Scope("T0ACME", private), mode=mode, k=50)
            assert own.hits and {h.channel for h in own.hits} == private, (query, mode)
