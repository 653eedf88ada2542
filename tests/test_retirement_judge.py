"""The learned retirement judge (off in the pipeline; ``HeuristicResolver(learned=...)``): changes
the rules leave standing (a count in words, "every other" -> "weekly", a correction of a number
they do not read as the value) are retired, and paired controls retire nothing (many-valued
personal chat, a cue about another thing, a crowd of facts sharing the subject's words)."""

from __future__ import annotations

import pytest

from teamlore.timeutil import parse_time
from teamlore.workers.resolver import Claim, HeuristicResolver
from teamlore.workers.retirement import RetirementJudge

RETIRING = {"supersedes", "correction"}
# The rules read a count in words ("one approval" / "two approvals") and a number beside the same
# word ("cabinet 3" / "correction, cabinet 5"): the judge's cases say them otherwise ("a single
# approval", "cabinet C").
CHANGES = [
    ("Code review needs a single approval.", "code review now needs two approvals", "supersedes"),
    ("The parking permit is valid for a single year.", "parking permit now valid 2 yrs", "supersedes"),
    ("The sprint demo is every other Friday.", "sprint demo is weekly now", "supersedes"),
    ("Returned laptops go in cabinet C.", "correction, cabinet E. C is for loaners", "correction"),
]
CONTROLS = [
    ("I went to the pottery class on Saturday.", "I went to the support group on Tuesday."),
    ("Code review needs one approval.", "the design review moved to thursdays"),
    ("Nordic kickoff catering is handled by the kickoff committee.", "Nordic kickoff moved to Wednesday."),
    ("The sprint demo is every other Friday.", "sprint retro is weekly now"),
]


@pytest.fixture
def judge_pair(make_lore):
    meaning = make_lore().pipeline.meaning
    learned = RetirementJudge.load()
    assert learned is not None, "teamlore/workers/retirement.npz is shipped"

    def judge(older: str, newer: str, resolver: HeuristicResolver) -> str:
        a, b = meaning.subjects([older, newer])
        pair = (
            Claim(older, parse_time("2026-01-05T10:00:00Z"), meaning=a),
            Claim(newer, parse_time("2026-02-05T10:00:00Z"), meaning=b),
        )
        return resolver.judge(*pair).resolution.value

    return judge, learned


@pytest.mark.parametrize("case", range(len(CHANGES)), ids=[c[1] for c in CHANGES])
def test_the_judge_retires_a_change_the_rules_leave_and_its_control_retires_nothing(judge_pair, case):
    judge, learned = judge_pair
    older, newer, expected = CHANGES[case]
    assert judge(older, newer, HeuristicResolver()) not in RETIRING  # the rules alone leave it
    assert judge(older, newer, HeuristicResolver(learned=learned)) == expected
    control_older, control_newer = CONTROLS[case]
    assert judge(control_older, control_newer, HeuristicResolver(learned=learned)) not in RETIRING
