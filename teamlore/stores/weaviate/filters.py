"""The predicates every Weaviate query carries, built by pure functions (tests pin them).

Scope (workspace, and the channels as ContainsAny) goes into every read; the view adds the four
time bounds as range filters. Weaviate indexes a DATE as Go's ``UnixNano()``, an int64 that only
reaches 2262-04-11: the store's 9999-12-31 sentinel would wrap to a negative number there and
every open version would fail ``recorded_to > known_at``. So the open bound is written to Weaviate
as ``OPEN_BOUND`` (2262-01-01) and read back as the sentinel, and a query moment is clamped just
below it; any real time must lie inside the range Weaviate can order.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from weaviate.classes.query import Filter
from weaviate.collections.classes.filters import _Filters

from teamlore.domain import ResolvedView, Scope
from teamlore.errors import InvalidInput
from teamlore.timeutil import SENTINEL, iso

OPEN_BOUND = datetime(2262, 1, 1, tzinfo=UTC)
EARLIEST = datetime(1678, 1, 1, tzinfo=UTC)
_LATEST_MOMENT = OPEN_BOUND - timedelta(microseconds=1)
CURRENT_STATUSES = ("active", "contested")  # what the resolver may compare a new statement with


def to_stored(moment: datetime) -> datetime:
    """A fact's time as Weaviate stores it: the open sentinel becomes OPEN_BOUND."""
    if moment >= SENTINEL:
        return OPEN_BOUND
    if not EARLIEST <= moment < OPEN_BOUND:
        raise InvalidInput(
            f"time {iso(moment)} is outside what the Weaviate fact store can order"
            f" ({iso(EARLIEST)} to {iso(OPEN_BOUND)}, exclusive)"
        )
    return moment


def from_stored(moment: datetime | str) -> datetime:
    if isinstance(moment, str):  # REST answers carry RFC 3339 text; gRPC answers are parsed
        moment = datetime.fromisoformat(moment)
    moment = moment.astimezone(UTC)
    return SENTINEL if moment >= OPEN_BOUND else moment


def query_moment(moment: datetime) -> datetime:
    """A read's moment clamped into the orderable range; every stored real time lies inside it,
    so each comparison comes out as it would against the unclamped moment."""
    return min(max(moment, EARLIEST), _LATEST_MOMENT)


def scope_filter(scope: Scope) -> _Filters:
    return Filter.by_property("workspace").equal(scope.workspace) & Filter.by_property(
        "channel"
    ).contains_any(sorted(scope.channels))


def time_filter(view: ResolvedView) -> _Filters:
    """recorded_from <= known_at < recorded_to, and unless history is asked for, the same on
    valid time."""
    known = query_moment(view.known_at)
    bounds = [
        Filter.by_property("recorded_from").less_or_equal(known),
        Filter.by_property("recorded_to").greater_than(known),
    ]
    if not view.include_history:
        valid = query_moment(view.valid_at)
        bounds += [
            Filter.by_property("valid_from").less_or_equal(valid),
            Filter.by_property("valid_to").greater_than(valid),
        ]
    return Filter.all_of(bounds)


def compile_filters(scope: Scope, view: ResolvedView | None) -> _Filters:
    """What every raw read carries: the scope, and the view's time predicate when there is one
    (``None``: a version listing, where scope is the only rule)."""
    if view is None:
        return scope_filter(scope)
    return scope_filter(scope) & time_filter(view)


def current_in_channel(workspace: str, channel: str) -> _Filters:
    """The write path's predicate: versions the store holds now, in one channel."""
    return (
        current()
        & Filter.by_property("workspace").equal(workspace)
        & Filter.by_property("channel").equal(channel)
    )


def current() -> _Filters:
    return Filter.by_property("recorded_to").equal(OPEN_BOUND)


def fact_ids_filter(fact_ids: Iterable[str]) -> _Filters:
    return Filter.by_property("fact_id").contains_any(list(fact_ids))


# ---- the message index ----


def readable_messages(scope: Scope, view: ResolvedView) -> _Filters:
    """What every raw read of the message index carries: the scope, the view's time predicate
    (a message is valid from its posted time on), and versions that still have text (a deleted
    or erased version is never a hit)."""
    return compile_filters(scope, view) & Filter.by_property("has_text").equal(True)


def said_in(workspace: str, channel: str) -> _Filters:
    """Current message versions with text, in one channel (the pipeline's conversation lookups)."""
    return current_in_channel(workspace, channel) & Filter.by_property("has_text").equal(True)


def of_message(workspace: str, channel: str, message_id: str) -> _Filters:
    """Every version of one message (the write path's lookups)."""
    return (
        Filter.by_property("workspace").equal(workspace)
        & Filter.by_property("channel").equal(channel)
        & Filter.by_property("message_id").equal(message_id)
    )
