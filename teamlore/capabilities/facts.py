"""The public read path over any fact backend: search, list, get, history. Written once.

Every method here returns only rows that passed ``gate.visible``. Search plans a mode, over-fetches
until ``k`` visible facts or the store runs out, and falls back (hybrid or semantic -> keyword)
through the same gate when the primary path fails; the receipt says what happened.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from teamlore.capabilities.gate import Withheld, WithheldCounter, visible
from teamlore.domain import Fact, ReadView, ResolvedView, Scope, Source
from teamlore.embedding import Embedder
from teamlore.errors import InvalidInput
from teamlore.stores.protocols import AuditEvent, AuditLog, FactBackend, MessageStore, RawHit
from teamlore.timeutil import utc_now

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
MAX_K = 1_000


@dataclass(frozen=True, slots=True)
class FactView:
    """A fact as a reader sees it: the version, its sources, and its score for this query."""

    fact: Fact
    sources: tuple[Source, ...]
    score: float = 0.0
    past_due: bool = False  # its deadline has passed at the moment read; it stays until evidence


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


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[FactView, ...]
    receipt: Receipt


@dataclass(frozen=True, slots=True)
class FactHistory:
    versions: tuple[FactView, ...]
    audit: tuple[AuditEvent, ...] = field(default=())


Fetch = Callable[[int], list[RawHit]]


class FactReader:
    """The only way readers (CLI, API, MCP, bots, wiki) get facts out of a store."""

    def __init__(
        self,
        backend: FactBackend,
        messages: MessageStore,
        audit: AuditLog,
        embedder: Embedder | None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._backend = backend
        self._messages = messages
        self._audit = audit
        self._embedder = embedder
        self._clock = clock

    def search(
        self,
        query: str,
        scope: Scope,
        view: ReadView | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        k: int = 10,
    ) -> SearchResult:
        if not query or not query.strip():
            raise InvalidInput("search needs a query")
        _check_k(k)
        resolved = (view or ReadView()).resolved(self._clock())
        mode = SearchMode(mode)
        attempts = [mode, FALLBACK[mode]] if mode in FALLBACK else [mode]
        reason: str | None = None
        for attempt in attempts:
            try:
                fetch = self._fetcher(attempt, query, scope, resolved)
                return self._serve(fetch, scope, resolved, k, mode, attempt, reason)
            except Exception as exc:
                if attempt is attempts[-1]:
                    raise
                # The fallback goes through the same gate; the receipt records why it was taken.
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

    def get_many(self, fact_ids: Sequence[str], scope: Scope, view: ReadView | None = None) -> list[FactView]:
        """The versions of these facts visible under ``view`` (any order; missing ones left out)."""
        resolved = (view or ReadView()).resolved(self._clock())
        ids = list(dict.fromkeys(fact_ids))
        raw = [
            hit
            for i in range(0, len(ids), 500)
            for hit in self._backend._by_ids(ids[i : i + 500], scope, resolved)
        ]
        shown, _ = self._gate(raw, scope, resolved, k=len(raw) or 1)
        return shown

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

    def _fetcher(self, mode: SearchMode, query: str, scope: Scope, view: ResolvedView) -> Fetch:
        if mode is SearchMode.KEYWORD:
            return lambda n: self._backend._keyword(query, scope, view, n)
        if self._embedder is None:
            raise InvalidInput(f"{mode} search needs an embedder; use --mode keyword")
        vector = self._embedder.embed_query(query)
        if mode is SearchMode.SEMANTIC:
            return lambda n: self._backend._semantic(vector, scope, view, n)
        return lambda n: self._backend._hybrid(query, vector, scope, view, n)

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
        receipt = Receipt(
            mode_requested=str(requested),
            mode_used=str(used),
            fallback_taken=fallback_reason is not None,
            fallback_reason=fallback_reason,
            k=k,
            returned=len(shown),
            examined=len(raw),
            withheld=counter.counts(),
            fewer_than_k=len(shown) < k,
            valid_at=view.valid_at,
            known_at=view.known_at,
            include_history=view.include_history,
        )
        return SearchResult(tuple(shown), receipt)

    def _gate(
        self,
        raw: list[RawHit],
        scope: Scope,
        view: ResolvedView | None,
        k: int,
        one_per_fact: bool = True,
    ) -> tuple[list[FactView], WithheldCounter]:
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
            moment = view.valid_at if view is not None else self._clock()
            past_due = fact.due_at is not None and fact.due_at < moment
            shown.append(
                FactView(fact, tuple(cited[m] for m in fact.evidence if m in cited), hit.score, past_due)
            )
            if len(shown) >= k:
                break
        return shown, counter

    def _sources(self, facts: Iterable[Fact]) -> dict[tuple[str, str], dict[str, Source]]:
        wanted: dict[tuple[str, str], set[str]] = {}
        for fact in facts:
            wanted.setdefault((fact.workspace, fact.channel), set()).update(fact.evidence)
        return {key: self._messages.sources(key[0], key[1], sorted(ids)) for key, ids in wanted.items()}


def _check_k(k: int) -> None:
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"limit must be between 1 and {MAX_K}, got {k}")
