"""The learned retirement judge through the pipeline: changes the rules leave standing (a count
in words, "every other" -> "weekly", a correction of a number they read as a name) are retired,
each beside a control that must retire nothing (many-valued personal chat, another thing)."""

from __future__ import annotations

import pytest

from teamlore.timeutil import parse_time
from teamlore.workers.resolver import Claim, HeuristicResolver

from .conftest import WS, event
from .helpers import put


def _statuses(lore, channel: str) -> dict[str, str]:
    facts = [lore.stores.facts.current_version(i) for i in lore.stores.facts.current_ids(WS, channel)]
    return {f.statement: f.status.value for f in facts if f is not None}


RETIRING = {"supersedes", "correction"}
CHANGES = [
    # (older, newer, the older's status after): none of these is read by the rules alone.
    ("Code review needs one approval.", "code review now needs two approvals", "superseded"),
    ("The parking permit is valid for one year.", "parking permit now valid 2 yrs", "superseded"),
    ("Returned laptops go in cabinet 3.", "correction, cabinet 5. 3 is for loaners", "retracted"),
]
CONTROLS = [
    # Many-valued activities in personal chat, and a cue about another thing in the same channel.
    ("I went to the pottery class on Saturday.", "I went to the support group on Tuesday."),
    ("Code review needs one approval.", "the design review moved to thursdays"),
]


@pytest.mark.parametrize("case", range(len(CHANGES)), ids=[c[1] for c in CHANGES])
def test_the_learned_judge_retires_a_change_the_rules_leave_and_its_control_retires_nothing(make_lore, case):
    older, newer, status = CHANGES[case]
    lore = make_lore()
    put(lore, event(older, channel="C1", ts="2026-01-05T10:00:00Z"))
    put(lore, event(newer, channel="C1", ts="2026-02-05T10:00:00Z"))
    assert _statuses(lore, "C1")[older] == status
    control_older, control_newer = CONTROLS[case % len(CONTROLS)]
    put(lore, event(control_older, channel="C2", ts="2026-01-05T10:00:00Z"))
    put(lore, event(control_newer, channel="C2", ts="2026-02-05T10:00:00Z"))
    assert set(_statuses(lore, "C2").values()) == {"active"}


def test_it_is_the_judge_that_retires_them_the_rules_alone_leave_them_standing(make_lore):
    meaning = make_lore().pipeline.meaning
    older_at, newer_at = parse_time("2026-01-05T10:00:00Z"), parse_time("2026-02-05T10:00:00Z")
    for older, newer, _ in CHANGES:
        a, b = meaning.subjects([older, newer])
        pair = Claim(older, older_at, meaning=a), Claim(newer, newer_at, meaning=b)
        assert HeuristicResolver(learned=False).judge(*pair).resolution.value not in RETIRING
        assert HeuristicResolver().judge(*pair).resolution.value in RETIRING
