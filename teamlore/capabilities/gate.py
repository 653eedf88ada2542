"""The one gate every fact and every message passes before anyone sees it.

Raw queries already compile scope and time into their filters; this re-checks all of it (defence
in depth: a backend bug must not become a leak) and adds what only the read path knows: status,
and whether the source message is still there. Each refusal is counted by reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import StrEnum

from teamlore.domain import Fact, FactStatus, MessageVersion, ResolvedView, Scope, Source


class Withheld(StrEnum):
    """Why a fact or message version was not shown; the receipt counts them by reason."""

    OUT_OF_SCOPE = "out_of_scope"
    NOT_KNOWN_YET = "not_known_yet"  # recorded after known_at
    REPLACED_IN_STORE = "replaced_in_store"  # a later version was current at known_at
    NOT_VALID_YET = "not_valid_yet"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"  # its valid time ended without a successor (a dated end)
    RETRACTED = "retracted"
    PROVISIONAL = "provisional"
    SOURCE_DELETED = "source_deleted"
    # A message whose every fact was retired, with no current fact to stand in for it: showing
    # it would bring the retired value back as current.
    RETIRED_VALUE = "retired_value"


# Statuses a default read returns. Contested facts stay readable, flagged; provisional ones wait
# for a reviewer.
READABLE = frozenset({FactStatus.ACTIVE, FactStatus.CONTESTED, FactStatus.SUPERSEDED})


def visible(
    item: Fact | MessageVersion, sources: Mapping[str, Source], scope: Scope, view: ResolvedView | None
) -> Withheld | None:
    """None if ``item`` (a fact version or a message version) may be shown under ``scope`` and
    ``view``, else why not.

    ``view`` None means a version listing (a fact's history): scope is then the only rule.
    """
    if not scope.allows(item.workspace, item.channel):
        return Withheld.OUT_OF_SCOPE
    if view is None:
        return None
    if view.known_at < item.recorded_from:
        return Withheld.NOT_KNOWN_YET
    if view.known_at >= item.recorded_to:
        return Withheld.REPLACED_IN_STORE
    if isinstance(item, MessageVersion):
        return _message_visible(item, sources, view)
    return _fact_visible(item, sources, view)


def _fact_visible(fact: Fact, sources: Mapping[str, Source], view: ResolvedView) -> Withheld | None:
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


def _message_visible(
    message: MessageVersion, sources: Mapping[str, Source], view: ResolvedView
) -> Withheld | None:
    """A message is there from when it was posted (valid time) until it was deleted; its text
    is the version the store held at ``known_at``."""
    source = sources.get(message.message_id)
    if (
        source is None
        or not message.text
        or (source.deleted_at is not None and source.deleted_at <= view.known_at)
    ):
        return Withheld.SOURCE_DELETED
    if not view.include_history and view.valid_at < message.posted_at:
        return Withheld.NOT_VALID_YET
    return None


class WithheldCounter:
    """Counts refusals by reason, each fact or message version once however often it was fetched."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, ...], Withheld] = {}

    def add(self, item: Fact | MessageVersion, reason: Withheld) -> None:
        key: tuple[str, ...]
        if isinstance(item, MessageVersion):
            key = ("message", item.workspace, item.channel, item.message_id, str(item.version))
        else:
            key = ("fact", item.fact_id, str(item.version))
        self._seen[key] = reason

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(r.value for r in self._seen.values()).items()))
