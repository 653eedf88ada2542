"""A model judge for the lifecycle resolver, behind the heuristic's deterministic guard.

Only pairs that pass ``HeuristicResolver.guard`` (same subject and slot, a shared named entity,
or a pair the rules would act on) reach the model; everything else keeps the guard's verdict, so
no model can retire a fact about something else. The model reasons, then decides with a
confidence. Below ``min_confidence`` a retiring or merging verdict becomes "contested": the pair
goes to review, both facts stay readable. A hedged newer statement never retires anything. When
the model fails, the heuristic verdict stands.
"""

from __future__ import annotations

import logging

from teamlore.errors import ModelOutputInvalid, ModelUnavailable
from teamlore.llm import prompts
from teamlore.llm.client import ModelClient, Role
from teamlore.llm.structured import ask
from teamlore.stores.protocols import ModelCache
from teamlore.timeutil import iso
from teamlore.workers.resolver import Claim, HeuristicResolver, Judgement, Resolution

log = logging.getLogger(__name__)
REASON_CHARS = 300


class ModelJudge:
    def __init__(
        self, client: ModelClient, rules: HeuristicResolver, cache: ModelCache | None, min_confidence: float
    ) -> None:
        self.client, self.rules, self.cache, self.min_confidence = client, rules, cache, min_confidence

    def judge(self, older: Claim, newer: Claim) -> Judgement:
        decided = self.rules.guard(older, newer)
        if decided is not None:
            return decided
        prompt = prompts.render_judge(older.text, iso(older.valid_from), newer.text, iso(newer.valid_from))
        try:
            answer = ask(
                self.client, Role.JUDGE, prompts.JUDGE_VERSION, prompt, prompts.JudgeAnswer, self.cache
            )
        except (ModelUnavailable, ModelOutputInvalid) as exc:
            self.client.note(Role.JUDGE, fallbacks=1)
            log.warning("judge fell back to the rules: %s", exc)
            return self.rules.judge(older, newer)
        resolution = Resolution(answer.decision)
        reason = f"model: {answer.reasoning[:REASON_CHARS]}"
        retiring = resolution in (Resolution.SUPERSEDES, Resolution.DUPLICATE)
        if retiring and answer.confidence < self.min_confidence:
            return Judgement(
                Resolution.CONTESTED, f"model unsure ({answer.confidence:.2f}): {reason}", answer.confidence
            )
        if resolution is Resolution.SUPERSEDES and self.rules.hedged(newer.text):
            return Judgement(Resolution.CONTESTED, f"the newer value is hedged; {reason}", answer.confidence)
        return Judgement(resolution, reason, answer.confidence)
