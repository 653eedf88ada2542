"""The history page's diff reads as the page does: words, not Markdown or Slack URLs."""

from __future__ import annotations

from datetime import UTC, datetime

from teamlore.capabilities.hits import FactView
from teamlore.domain import Fact, FactStatus, FactType
from teamlore.web.worddiff import plain_lines, word_diff

OLD = """# Atlas

## Dates

- The launch is March 3. ([priya, 2026-01-07](https://acme.slack.com/archives/C02/p1))
- The docs freeze is March 1. ([priya, 2026-01-07](https://acme.slack.com/archives/C02/p1))
"""
NEW = OLD.replace("March 3.", "March 17.").replace("- The docs", "- The beta opens March 2.\n- The docs")


def test_links_read_as_their_labels_and_markup_is_gone():
    assert plain_lines(OLD)[2] == "• The launch is March 3. (priya, 2026-01-07)"
    assert not any("slack.com" in line or "](" in line for line in plain_lines(OLD))


def test_a_changed_line_marks_only_the_words_that_changed():
    rows = word_diff(OLD, NEW)
    [changed] = [r for r in rows if r.kind == "changed"]
    assert [(w.kind, w.text) for w in changed.words if w.kind != "same"] == [
        ("removed", "3."),
        ("added", "17."),
    ]
    [added] = [r for r in rows if r.kind == "added"]
    assert added.words[0].text == "• The beta opens March 2."
    # Control: the same text twice has no change at all.
    assert word_diff(OLD, OLD) == []


def _fact(status: FactStatus, valid_to: datetime) -> FactView:
    fact = Fact(
        "f1",
        2,
        "W",
        "C",
        None,
        "The launch is March 3.",
        "h",
        FactType.SCHEDULE,
        (),
        "launch",
        0.5,
        0.5,
        status,
        ("m1",),
        datetime(2026, 1, 7, tzinfo=UTC),
        valid_to,
    )
    return FactView(fact, ())


def test_a_replaced_value_was_active_while_it_was_true():
    replaced = _fact(FactStatus.SUPERSEDED, datetime(2026, 2, 12, tzinfo=UTC))
    assert replaced.status_at(datetime(2026, 2, 1, tzinfo=UTC)) is FactStatus.ACTIVE
    assert replaced.status_at(datetime(2026, 3, 1, tzinfo=UTC)) is FactStatus.SUPERSEDED  # control
    assert replaced.status_at(None) is FactStatus.SUPERSEDED
