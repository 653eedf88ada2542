"""The one gate every fact passes before anyone sees it.

Raw queries already compile scope and time into their filters; this re-checks all of it (defence
in depth: a backend bug must not become a leak) and adds what only the read path knows: status,
and whether any source message is still there. Each refusal is counted by reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import StrEnum

from teamlore.domain import Fact, FactStatus, ResolvedView, Scope, Source


class Withheld(StrEnum):
    OUT_OF_SCOPE = "out_of_scope"
    NOT_KNOWN_YET = "not_known_yet"  # recorded after known_at
    REPLACED_IN_STORE = "replaced_in_store"  # a later version was current at known_at
    NOT_VALID_YET = "not_valid_yet"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"  # its valid time ended without a successor (a dated end)
    RETRACTED = "retracted"
    PROVISIONAL = "provisional"
    SOURCE_DELETED = "source_deleted"


# Statuses a default read returns. Contested facts stay readable, flagged; provisional ones wait
# for a reviewer.
READABLE = frozenset({FactStatus.ACTIVE, FactStatus.CONTESTED, FactStatus.SUPERSEDED})


def visible(
    fact: Fact, sources: Mapping[str, Source], scope: Scope, view: ResolvedView | None
) -> Withheld | None:
    """None if ``fact`` may be shown under ``scope`` and ``view``, else why not.

    ``view`` None means a version listing (a fact's history): scope is then the only rule.
    """
    if not scope.allows(fact.workspace, fact.channel):
        return Withheld.OUT_OF_SCOPE
    if view is None:
        return None
    if view.known_at < fact.recorded_from:
        return Withheld.NOT_KNOWN_YET
    if view.known_at >= fact.recorded_to:
        return Withheld.REPLACED_IN_STORE
    if view.include_history:
        return None
    if view.valid_at < fact.valid_from:
        return Withheld.NOT_VALID_YET
    if view.valid_at >= fact.valid_to:
        return Withheld.SUPERSEDED if fact.status is FactStatus.SUPERSEDED else Withheld.EXPIRED
    # A superseded version inside its valid interval was the live value at valid_at.
    if fact.status not in READABLE:
        return Withheld(fact.status.value)
    cited = [sources.get(message_id) for message_id in fact.evidence]
    if cited and all(
        s is not None and s.deleted_at is not None and s.deleted_at <= view.known_at for s in cited
    ):
        return Withheld.SOURCE_DELETED
    return None


class WithheldCounter:
    """Counts refusals by reason, each fact version once however often it was fetched."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int], Withheld] = {}

    def add(self, fact: Fact, reason: Withheld) -> None:
        self._seen[(fact.fact_id, fact.version)] = reason

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(r.value for r in self._seen.values()).items()))
