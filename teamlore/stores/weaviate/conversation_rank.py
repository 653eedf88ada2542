"""Ranking a message with the conversation around it, on Weaviate: the file's rule
(``stores/embedded/conversations.py``, constants in ``teamlore.message_ranking``) applied to what
the raw queries returned.

A query's pool is its best keyword matches (BM25) and nearest vectors (cosine), each scaled to its
best (cosines above the pool's median, as the file scales them above the scope's), blended. Then
the places around the pool are read (message ids, conversations and posted times, across every
version: who sits next to whom, never what was said), each message's score becomes its blend plus
its neighbours' share of theirs, and a message lifted so that was not in the pool is read back
through the same scope and time filter as the pool (``filters.readable_messages``): nothing leaves
without having passed it, and the gate above checks it all again.

What differs from the file: a place read is one the pool's windows reach (``WINDOW`` gaps around a
top-level match, its thread's replies, a reply's opening message), and the vector half's floor is
the pool's median, not the scope's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import Any

from weaviate.classes.query import Filter
from weaviate.collections.classes.filters import _Filters

from teamlore.dates import Period
from teamlore.domain import CONVERSATION_GAP, MessageVersion, ResolvedView, Scope
from teamlore.message_ranking import KEYWORD_SHARE, MIN_SPAN, PERIOD_LIFT, WINDOW, step_weight, wordy
from teamlore.stores.protocols import RawMessageHit
from teamlore.stores.weaviate import filters
from teamlore.stores.weaviate.codec import TOP_LEVEL, conversation, to_message_version
from teamlore.stores.weaviate.queries import translated

Key = tuple[str, str]  # (channel, message id)
_PLACE = ["channel", "message_id", "conversation", "valid_from"]


@dataclass(frozen=True, slots=True)
class Pool:
    """What a raw query found, before the spread: each message's blend (its keyword and vector
    evidence, each scaled to its best) and the version found."""

    blend: dict[Key, float]
    found: dict[Key, MessageVersion]


def keyword_part(scored: Iterable[tuple[MessageVersion, float]]) -> dict[Key, float]:
    """BM25 scores scaled to the best."""
    scores = {_key(v): s for v, s in scored if s > 0}
    top = max(scores.values(), default=0.0)
    return {k: s / top for k, s in scores.items()} if top > 0 else {}


def vector_part(scored: Iterable[tuple[MessageVersion, float]]) -> dict[Key, float]:
    """Cosines above the pool's median (what is merely typical scores nothing), scaled so the
    best is 1; the floor stays below the best, so one message alone can still be found."""
    cosines = {_key(v): c for v, c in scored}
    if not cosines:
        return {}
    top = max(cosines.values())
    floor = min(median(cosines.values()), top - MIN_SPAN)
    return {k: max(0.0, (c - floor) / (top - floor)) for k, c in cosines.items()}


def pool(
    keyword: Sequence[tuple[MessageVersion, float]] | None,
    vector: Sequence[tuple[MessageVersion, float]] | None,
) -> Pool:
    """The blend of the halves asked (``None``: not asked), as the file blends them."""
    found = {_key(v): v for v, _ in [*(keyword or ()), *(vector or ())]}
    kw = keyword_part(keyword) if keyword is not None else {}
    vec = vector_part(vector) if vector is not None else {}
    if keyword is None or vector is None:
        return Pool(kw or vec, found)
    blend = {k: KEYWORD_SHARE * kw.get(k, 0.0) + (1 - KEYWORD_SHARE) * vec.get(k, 0.0) for k in found}
    return Pool(blend, found)


@dataclass(frozen=True, slots=True)
class _Place:
    channel: str
    message_id: str
    conversation: str
    posted: datetime

    @property
    def key(self) -> Key:
        return (self.channel, self.message_id)


class Links:
    """Who sits next to whom among the places read: consecutive in a conversation (the top level
    split where nobody wrote for ``CONVERSATION_GAP``); a thread's first reply follows its opening
    message."""

    def __init__(self, places: Iterable[_Place]) -> None:
        self.places = {p.key: p for p in places}
        self.previous: dict[Key, Key] = {}
        self.following: dict[Key, Key] = {}
        ordered = sorted(
            self.places.values(), key=lambda p: (p.channel, p.conversation, p.posted, p.message_id)
        )
        for a, b in zip(ordered, ordered[1:], strict=False):
            together = a.channel == b.channel and a.conversation == b.conversation
            if together and (b.conversation != TOP_LEVEL or b.posted - a.posted <= CONVERSATION_GAP):
                self.previous[b.key], self.following[a.key] = a.key, b.key
        for place in ordered:
            if place.conversation != TOP_LEVEL and place.key not in self.previous:
                opening = (place.channel, place.conversation.removeprefix("t:"))
                if opening in self.places:
                    self.previous[place.key] = opening

    def neighbours(self, key: Key) -> list[tuple[float, Key]]:
        """(weight, neighbour) up to ``WINDOW`` steps on each side."""
        found: list[tuple[float, Key]] = []
        for links in (self.previous, self.following):
            at = key
            for step in range(1, WINDOW + 1):
                nxt = links.get(at)
                if nxt is None:
                    break
                found.append((step_weight(step), nxt))
                at = nxt
        return found


def spread(
    collection: Any,
    found: Pool,
    scope: Scope,
    view: ResolvedView,
    limit: int,
    periods: Sequence[Period],
    cap: int,
) -> list[RawMessageHit]:
    """The best ``limit`` messages visible in the scope and view: each one's blend spread to its
    neighbours, lifted if posted in a period the question names; best first."""
    if not found.blend:
        return []
    links = Links(_places(collection, found, scope.workspace, cap))
    scores: dict[Key, float] = {}
    for key in links.places.keys() | found.blend.keys():
        own = found.blend.get(key, 0.0)
        around = sum(w * found.blend.get(n, 0.0) for w, n in links.neighbours(key))
        if own > 0 or around > 0:
            scores[key] = own + around
    versions = dict(found.found)
    missing = [k for k in scores if k not in versions]
    versions.update(_readable(collection, missing, scope, view, cap))
    hits = []
    for key, score in scores.items():
        version = versions.get(key)
        if version is None:
            continue  # not visible in this scope and view
        hits.append(RawMessageHit(version, score if wordy(version.text) else found.blend.get(key, 0.0)))
    hits = [h for h in hits if h.score > 0]
    if periods and hits:
        best = max(h.score for h in hits)
        hits = [
            RawMessageHit(h.message, h.score + PERIOD_LIFT * best * _posted_in(h.message, periods))
            for h in hits
        ]
    hits.sort(key=lambda h: (-h.score, h.message.channel, h.message.message_id))
    return hits[:limit]


def _places(collection: Any, found: Pool, workspace: str, cap: int) -> list[_Place]:
    """The places around the pool: per channel, the top level within ``WINDOW`` gaps of each
    top-level match, the replies of every thread the pool touches, and those threads' opening
    messages."""
    places: list[_Place] = []
    by_channel: dict[str, list[MessageVersion]] = {}
    for version in found.found.values():
        by_channel.setdefault(version.channel, []).append(version)
    for channel, versions in sorted(by_channel.items()):
        here = Filter.by_property("workspace").equal(workspace) & Filter.by_property("channel").equal(channel)
        top = [v for v in versions if conversation(v.message_id, v.thread_id) == TOP_LEVEL]
        threads = {conversation(v.message_id, v.thread_id) for v in versions} - {TOP_LEVEL}
        threads |= {conversation("", v.message_id) for v in top}
        openings = {t.removeprefix("t:") for t in threads}
        wanted = []
        if top:
            wanted.append(Filter.by_property("conversation").equal(TOP_LEVEL) & _windows(top))
        if threads:
            wanted.append(Filter.by_property("conversation").contains_any(sorted(threads)))
            wanted.append(Filter.by_property("message_id").contains_any(sorted(openings)))
        for where in wanted:
            places += _read_places(collection, here & where, cap)
    return places


def _windows(top: Sequence[MessageVersion]) -> _Filters:
    """Posted within ``WINDOW`` conversation gaps of any of these messages (overlaps merged)."""
    reach = WINDOW * CONVERSATION_GAP
    spans: list[list[datetime]] = []
    for posted in sorted(v.posted_at for v in top):
        if spans and posted - reach <= spans[-1][1]:
            spans[-1][1] = posted + reach
        else:
            spans.append([posted - reach, posted + reach])
    bound = Filter.by_property("valid_from")
    ranges = [
        bound.greater_or_equal(filters.query_moment(a)) & bound.less_or_equal(filters.query_moment(b))
        for a, b in spans
    ]
    return ranges[0] if len(ranges) == 1 else Filter.any_of(ranges)


def _read_places(collection: Any, where: _Filters, cap: int) -> list[_Place]:
    with translated("conversation read", "message index"):
        found = collection.query.fetch_objects(filters=where, limit=cap, return_properties=_PLACE)
    return [
        _Place(p["channel"], p["message_id"], p["conversation"], filters.from_stored(p["valid_from"]))
        for p in (o.properties for o in found.objects)
    ]


def _readable(
    collection: Any, keys: Sequence[Key], scope: Scope, view: ResolvedView, cap: int
) -> dict[Key, MessageVersion]:
    """The versions of these messages visible in the scope and the view (the raw reads' filter)."""
    if not keys:
        return {}
    where = filters.readable_messages(scope, view) & Filter.by_property("message_id").contains_any(
        sorted({mid for _, mid in keys})
    )
    with translated("conversation read", "message index"):
        found = collection.query.fetch_objects(filters=where, limit=cap)
    wanted = set(keys)
    versions = (to_message_version(o.properties) for o in found.objects)
    return {_key(v): v for v in versions if _key(v) in wanted}


def _key(version: MessageVersion) -> Key:
    return (version.channel, version.message_id)


def _posted_in(message: MessageVersion, periods: Sequence[Period]) -> bool:
    return any(start <= message.posted_at < end for start, end in periods)
