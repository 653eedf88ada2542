"""The public read path over any fact backend and the message index: search, list, get,
history. Written once.

Every method here returns only rows that passed ``gate.visible``. Search plans a mode, fetches
facts and messages, over-fetches until ``k`` visible results or the stores run out, and falls back
(hybrid or semantic -> keyword) through the same gate when the primary path fails; the receipt
says what happened. How messages and facts meet in one ranking: ``message_reading``.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from teamlore.capabilities.across_channels import newest_first
from teamlore.capabilities.gate import Withheld, WithheldCounter, visible
from teamlore.capabilities.hits import FactView, Hit, MessageView
from teamlore.capabilities.limits import MAX_K, check_query
from teamlore.capabilities.message_reading import FetchMessages, Judged, MessageSide, fuse
from teamlore.capabilities.relevance import RelevanceFloor
from teamlore.domain import Fact, ReadView, ResolvedView, Scope, Source
from teamlore.embedding import Embedder
from teamlore.errors import BackendUnavailable, InvalidInput
from teamlore.stores.protocols import (
    AuditEvent,
    AuditLog,
    FactBackend,
    MessageIndex,
    MessageStore,
    RawHit,
    RawMessageHit,
)
from teamlore.timeutil import utc_now
from teamlore.workers.resolver import Resolver

log = logging.getLogger(__name__)


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    SEMANTIC = "semantic"
    KEYWORD = "keyword"


FALLBACK: dict[SearchMode, SearchMode] = {
    SearchMode.HYBRID: SearchMode.KEYWORD,
    SearchMode.SEMANTIC: SearchMode.KEYWORD,
}
# First raw fetch is k * OVERFETCH (at least MIN_FETCH); it grows by GROWTH until k visible
# facts are found, the store has no more rows, or MAX_FETCH rows were examined.
OVERFETCH = 3
MIN_FETCH = 20
GROWTH = 4
MAX_FETCH = 20_000


@dataclass(frozen=True, slots=True)
class Receipt:
    """How a read was served: mode, fallback, what the gate withheld, whether k was reached."""

    mode_requested: str
    mode_used: str
    fallback_taken: bool
    fallback_reason: str | None
    k: int
    returned: int
    examined: int
    withheld: dict[str, int]
    fewer_than_k: bool
    valid_at: datetime
    known_at: datetime
    include_history: bool
    kinds: dict[str, int] = field(default_factory=dict)  # results by kind: fact, message, ...


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    receipt: Receipt


@dataclass(frozen=True, slots=True)
class FactHistory:
    versions: tuple[FactView, ...]
    audit: tuple[AuditEvent, ...] = field(default=())


Fetch = Callable[[int], list[RawHit]]

__all__ = ["FactReader", "FactView", "MessageView", "Hit", "SearchMode", "SearchResult", "Receipt"]


class FactReader:
    """The only way readers (CLI, API, MCP, bots, wiki) get facts and messages out of a store."""

    def __init__(
        self,
        backend: FactBackend,
        messages: MessageStore,
        audit: AuditLog,
        embedder: Embedder | None,
        clock: Callable[[], datetime] = utc_now,
        index: MessageIndex | None = None,
        resolver: Resolver | None = None,
        beside: bool = False,
    ) -> None:
        self._backend = backend
        self._messages = messages
        self._audit = audit
        self._embedder = embedder
        self._floor = None if embedder is None else RelevanceFloor(embedder)
        self._clock = clock
        # None: facts only (a reader of a store with no message index).
        self._message_side = None if index is None else MessageSide(index, messages, backend)
        # True where the facts are on a server: the fact half's round trip then runs on a thread
        # beside the message half (``_both``).
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fact-search") if beside else None
        # Compares current facts across the channels of a read (``across_channels``).
        self._resolver = resolver

    def search(
        self,
        query: str,
        scope: Scope,
        view: ReadView | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        k: int = 10,
    ) -> SearchResult:
        """Facts and the messages no visible fact covers, best first (see ``message_reading``)."""
        query = check_query(query)
        _check_k(k)
        resolved = (view or ReadView()).resolved(self._clock())
        mode = SearchMode(mode)
        attempts = [mode, FALLBACK[mode]] if mode in FALLBACK else [mode]
        reason: str | None = None
        for attempt in attempts:
            try:
                facts, messages = self._fetchers(attempt, query, scope, resolved)
                return self._serve_search(query, facts, messages, scope, resolved, k, mode, attempt, reason)
            except BackendUnavailable as exc:
                if attempt is attempts[-1]:
                    raise
                # A backend that failed (every store and embedder wraps its failures in
                # BackendUnavailable), not a bug: a programming error propagates instead of
                # looking like an ordinary fallback. The fallback goes through the same gate;
                # the receipt records why it was taken.
                reason = f"{type(exc).__name__}: {exc}"
                log.warning(
                    "search mode %s failed, falling back to %s: %s", attempt, FALLBACK[attempt], reason
                )
        raise AssertionError("unreachable")

    def list(self, scope: Scope, view: ReadView | None = None, k: int = 50) -> SearchResult:
        """Facts in scope, newest valid_from first."""
        _check_k(k)
        resolved = (view or ReadView()).resolved(self._clock())
        fetch: Fetch = lambda n: self._backend._list(scope, resolved, n)  # noqa: E731
        return self._serve(fetch, scope, resolved, k, "list", "list", None)

    def get(self, fact_id: str, scope: Scope, view: ReadView | None = None) -> FactView | None:
        """The version of one fact visible under ``view``, or None."""
        resolved = (view or ReadView()).resolved(self._clock())
        raw = self._backend._by_ids([fact_id], scope, resolved)
        shown, _ = self._gate(raw, scope, resolved, k=1)
        return shown[0] if shown else None

    def get_many(
        self, fact_ids: Sequence[str], scope: Scope, view: ReadView | None = None
    ) -> builtins.list[FactView]:
        """The versions of these facts visible under ``view`` (any order; missing ones left out)."""
        resolved = (view or ReadView()).resolved(self._clock())
        raw = self._by_ids(fact_ids, scope, resolved)
        shown, _ = self._gate(raw, scope, resolved, k=len(raw) or 1)
        return shown

    def citing(self, message_id: str, scope: Scope, view: ReadView | None = None) -> builtins.list[FactView]:
        """The facts a message is evidence for, visible under ``view``, oldest first."""
        resolved = (view or ReadView()).resolved(self._clock())
        ids = [
            f.fact_id
            for channel in sorted(scope.channels)
            for f in self._backend.current_citing(scope.workspace, channel, message_id)
        ]
        raw = self._by_ids(ids, scope, resolved)
        shown, _ = self._gate(raw, scope, resolved, k=len(raw) or 1)
        return sorted(shown, key=lambda v: (v.fact.valid_from, v.fact.fact_id))

    def history(self, fact_id: str, scope: Scope) -> FactHistory:
        """Every version of a fact, both time axes, and its audit events (scope still applies)."""
        versions = self._backend._versions(fact_id, scope)
        shown, _ = self._gate(
            [RawHit(v, 0.0) for v in versions], scope, None, k=len(versions), one_per_fact=False
        )
        if not shown:
            return FactHistory(())
        return FactHistory(tuple(shown), tuple(self._audit.events_for_fact(fact_id)))

    # ---- one implementation of over-fetch and gating for every public method ----

    def _fetchers(
        self, mode: SearchMode, query: str, scope: Scope, view: ResolvedView
    ) -> tuple[Fetch, FetchMessages | None]:
        vector = None
        if mode is not SearchMode.KEYWORD:
            if self._embedder is None:
                raise InvalidInput(f"{mode} search needs an embedder; use --mode keyword")
            vector = self._embedder.embed_query(query)
        # One floor for both halves and every backend: what is found only by meaning must be
        # closer to the query than ordinary chat is (``relevance``).
        floor = -1.0 if vector is None or self._floor is None else self._floor.of(vector)
        messages = (
            None
            if self._message_side is None
            else self._message_side.fetcher(mode.value, query, vector, floor, scope, view, self._clock())
        )
        if vector is None:
            return (lambda n: self._backend._keyword(query, scope, view, n)), messages
        if mode is SearchMode.SEMANTIC:
            return (lambda n: self._backend._semantic(vector, scope, view, n, floor)), messages
        return (lambda n: self._backend._hybrid(query, vector, scope, view, n, floor)), messages

    def _serve_search(
        self,
        query: str,
        facts: Fetch,
        messages: FetchMessages | None,
        scope: Scope,
        view: ResolvedView,
        k: int,
        requested: str,
        used: str,
        fallback_reason: str | None,
    ) -> SearchResult:
        if messages is None:
            return self._serve(facts, scope, view, k, requested, used, fallback_reason)
        side = self._message_side
        assert side is not None
        want = max(k * OVERFETCH, MIN_FETCH)
        while True:
            raw_facts, (fact_hits, counter), raw_messages = self._both(facts, messages, want, scope, view)
            message_hits = side.gate(raw_messages, scope, view, counter)
            found = side.stand_ins(message_hits, scope, view, self._judge, counter)
            shown = self._across_channels(fuse(query, fact_hits, found)[:k], scope)
            exhausted = len(raw_facts) < want and len(raw_messages) < want
            if len(shown) >= k or exhausted or want >= MAX_FETCH:
                break
            want = min(want * GROWTH, MAX_FETCH)
        examined = len(raw_facts) + len(raw_messages)
        return SearchResult(
            tuple(shown), self._receipt(shown, counter, examined, k, view, requested, used, fallback_reason)
        )

    def _across_channels(self, hits: builtins.list[Hit], scope: Scope) -> builtins.list[Hit]:
        if self._resolver is None or len(scope.channels) < 2:
            return hits
        return newest_first(hits, self._resolver)

    def _both(
        self, facts: Fetch, messages: FetchMessages, want: int, scope: Scope, view: ResolvedView
    ) -> tuple[
        builtins.list[RawHit],
        tuple[builtins.list[FactView], WithheldCounter],
        builtins.list[RawMessageHit],
    ]:
        """The two raw queries and the fact hits gated. Both halves in the file run one after the
        other: their numpy and SQLite calls are short, so on two threads they mostly wait for each
        other's GIL (docs/benchmarks.md, stop 35). Facts on a server are fetched on a thread
        while the message half runs: a network wait holds no GIL."""
        if self._pool is None:
            raw_messages = messages(want)
            raw_facts = facts(want)
        else:
            pending = self._pool.submit(facts, want)
            try:
                raw_messages = messages(want)
            finally:
                raw_facts = pending.result()
        gated = self._gate(raw_facts, scope, view, k=len(raw_facts) or 1)
        return raw_facts, gated, raw_messages

    def _serve(
        self,
        fetch: Fetch,
        scope: Scope,
        view: ResolvedView,
        k: int,
        requested: str,
        used: str,
        fallback_reason: str | None,
    ) -> SearchResult:
        want = max(k * OVERFETCH, MIN_FETCH)
        while True:
            raw = fetch(want)
            shown, counter = self._gate(raw, scope, view, k)
            exhausted = len(raw) < want
            if len(shown) >= k or exhausted or want >= MAX_FETCH:
                break
            want = min(want * GROWTH, MAX_FETCH)
        return SearchResult(
            tuple(shown), self._receipt(shown, counter, len(raw), k, view, requested, used, fallback_reason)
        )

    def _receipt(
        self,
        shown: Sequence[Hit],
        counter: WithheldCounter,
        examined: int,
        k: int,
        view: ResolvedView,
        requested: str,
        used: str,
        fallback_reason: str | None,
    ) -> Receipt:
        kinds: dict[str, int] = {}
        for hit in shown:
            kinds[hit.kind] = kinds.get(hit.kind, 0) + 1
        return Receipt(
            mode_requested=str(requested),
            mode_used=str(used),
            fallback_taken=fallback_reason is not None,
            fallback_reason=fallback_reason,
            k=k,
            returned=len(shown),
            examined=examined,
            withheld=counter.counts(),
            fewer_than_k=len(shown) < k,
            valid_at=view.valid_at,
            known_at=view.known_at,
            include_history=view.include_history,
            kinds=dict(sorted(kinds.items())),
        )

    def _by_ids(self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView) -> builtins.list[RawHit]:
        ids = list(dict.fromkeys(fact_ids))
        return [
            hit
            for i in range(0, len(ids), 500)
            for hit in self._backend._by_ids(ids[i : i + 500], scope, view)
        ]

    def _judge(
        self,
        fact_ids: Sequence[str],
        scope: Scope,
        view: ResolvedView,
        follow: int = 0,
        current: Mapping[str, Fact] | None = None,
    ) -> tuple[dict[str, FactView], dict[str, Judged]]:
        """Of the facts known at ``view.known_at`` (and of those that superseded them, up to
        ``follow`` links away): the ones that may be shown under ``view``, and why each other may
        not (with what superseded it). ``current``: facts already read at their current version;
        where that version is the one known at ``view.known_at`` it is not read again."""
        if not fact_ids:
            return {}, {}
        known = ResolvedView(view.valid_at, view.known_at, include_history=True)
        if follow:
            raw = self._backend._following(list(dict.fromkeys(fact_ids)), scope, known, follow)
        else:
            held = [
                RawHit(fact, 0.0)
                for fact in (current.get(f) for f in dict.fromkeys(fact_ids) if current)
                if fact is not None and _known_then(fact, scope, known)
            ]
            have = {hit.fact.fact_id for hit in held}
            raw = held + self._by_ids([f for f in fact_ids if f not in have], scope, known)
        # Most versions of a chain are refused by time or status alone: their sources can't
        # change that (a source matters only to a version otherwise visible), so only the
        # others' sources are read.
        unsourced = [visible(hit.fact, {}, scope, view) for hit in raw]
        sources = self._sources(h.fact for h, reason in zip(raw, unsourced, strict=True) if reason is None)
        shown: dict[str, FactView] = {}
        refused: dict[str, Judged] = {}
        for hit, first in zip(raw, unsourced, strict=True):
            fact = hit.fact
            cited = sources.get((fact.workspace, fact.channel), {})
            reason = first if first is not None else visible(fact, cited, scope, view)
            if reason is None:
                shown[fact.fact_id] = self._view_of(fact, cited, view, 0.0)
            else:
                refused[fact.fact_id] = Judged(reason, fact.superseded_by)
        return shown, refused

    def _gate(
        self,
        raw: builtins.list[RawHit],
        scope: Scope,
        view: ResolvedView | None,
        k: int,
        one_per_fact: bool = True,
    ) -> tuple[builtins.list[FactView], WithheldCounter]:
        sources = self._sources([hit.fact for hit in raw])
        counter = WithheldCounter()
        shown: list[FactView] = []
        seen: set[str] = set()
        for hit in raw:
            fact = hit.fact
            cited = sources.get((fact.workspace, fact.channel), {})
            reason: Withheld | None = visible(fact, cited, scope, view)
            if reason is not None:
                counter.add(fact, reason)
                continue
            if one_per_fact and fact.fact_id in seen:
                continue
            seen.add(fact.fact_id)
            shown.append(self._view_of(fact, cited, view, hit.score))
            if len(shown) >= k:
                break
        return shown, counter

    def _view_of(
        self, fact: Fact, cited: dict[str, Source], view: ResolvedView | None, score: float
    ) -> FactView:
        moment = view.valid_at if view is not None else self._clock()
        past_due = fact.due_at is not None and fact.due_at < moment
        retired = (
            view is not None
            and view.include_history
            and visible(fact, cited, Scope(fact.workspace, [fact.channel]), _present(view)) is not None
        )
        sources = tuple(cited[m] for m in fact.evidence if m in cited)
        return FactView(fact, sources, score, past_due, retired)

    def _sources(self, facts: Iterable[Fact]) -> dict[tuple[str, str], dict[str, Source]]:
        wanted: dict[tuple[str, str], set[str]] = {}
        for fact in facts:
            wanted.setdefault((fact.workspace, fact.channel), set()).update(fact.evidence)
        return {key: self._messages.sources(key[0], key[1], sorted(ids)) for key, ids in wanted.items()}


def _known_then(fact: Fact, scope: Scope, view: ResolvedView) -> bool:
    """The version a raw read by id under ``view`` (history included) would return: in the scope
    and recorded at ``view.known_at`` (``scope_time_sql``'s predicate; a fact's versions are
    recorded one after another, so at most one is)."""
    return (
        fact.workspace == scope.workspace
        and fact.channel in scope.channels
        and fact.recorded_from <= view.known_at < fact.recorded_to
    )


def _present(view: ResolvedView) -> ResolvedView:
    """The same moments without history: what a default read would show."""
    return ResolvedView(view.valid_at, view.known_at, include_history=False)


def _check_k(k: int) -> None:
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"limit must be between 1 and {MAX_K}, got {k}")
