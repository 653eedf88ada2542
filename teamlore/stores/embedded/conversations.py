"""Message versions in memory: their vectors (as ``VectorIndex``), the message each belongs to, and
who sits next to whom in a conversation, for ranking a message with what surrounds it.

Chat messages are short and lean on their neighbours ("yes, that one", a photo with "look at
this"): a match spreads to the messages around it. Neighbours are computed at query time from
each message's place in its conversation, never copied into another message's index row, so an
edit, a delete or an erasure touches only its own row.

Conversations are as ``teamlore.domain.CONVERSATION_GAP`` defines them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from teamlore.domain import CONVERSATION_GAP, ResolvedView, Scope
from teamlore.message_ranking import FAR, KEYWORD_SHARE, MIN_SPAN, PERIOD_LIFT, SPREAD, WINDOW
from teamlore.message_ranking import wordy as text_wordy
from teamlore.stores.embedded.vector_index import VectorIndex, best_of, middle_of

GAP_MICROS = int(CONVERSATION_GAP.total_seconds() * 1_000_000)


@dataclass(frozen=True, slots=True)
class Scores:
    """Per-message keyword and vector evidence for one query, before blending."""

    keyword: dict[int, float] | None  # version row id -> bm25 (higher is better); None: not asked
    vector: np.ndarray | None  # the query's vector; None: not asked
    periods: tuple[tuple[int, int], ...] = ()  # [start, end) in microseconds the question names
    floor: float = -1.0  # the least cosine a message found by meaning needs (``capabilities.relevance``)


class Conversations(VectorIndex):
    """The message versions' index: their vectors, and each message's place in its conversation."""

    def __init__(self) -> None:
        # Keyword weights: the text, the author's name (a question naming a person reaches what
        # they said), the channel (in a row's length only).
        super().__init__(
            table="message_versions", generation="message_index_generation", keywords=(1.0, 1.0, 0.0)
        )

    def _reset(self) -> None:
        super()._reset()
        self._slot_of: dict[tuple[int, int, str], int] = {}  # (workspace, channel, message id)
        self._thread_code: dict[tuple[int, int, str], int] = {}
        self._row_slot = np.zeros(0, np.int64)
        self._row_wordy = np.zeros(0, bool)  # the text has a letter or a digit (not "🚀" alone)
        self._slot_conv = np.zeros(0, np.int64)  # 0: the channel's top level, else a thread
        self._slot_ts = np.zeros(0, np.int64)
        self._slot_ws = np.zeros(0, np.int32)
        self._slot_ch = np.zeros(0, np.int32)
        self._parent_key: list[tuple[int, int, str] | None] = []
        self._links: tuple[np.ndarray, ...] | None = None

    def _columns(self) -> str:
        return super()._columns() + ", message_id, thread_id, text, author_name"

    def _texts(self, row: sqlite3.Row) -> tuple[str, ...]:
        return (row[11], row[12] or "", row[2])

    def _absorbed(self, fresh: list[sqlite3.Row], start: int) -> None:
        slots: list[int] = []
        added: list[tuple[int, int, int, int]] = []  # conversation, posted, workspace, channel
        for r in fresh:
            ws, ch = self._workspaces.code(r[1]), self._channels.code(r[2])
            key = (ws, ch, r[9])
            slot = self._slot_of.get(key)
            if slot is None:
                slot = self._slot_of[key] = len(self._parent_key)
                reply = r[10] is not None and r[10] != r[9]
                parent = (ws, ch, r[10]) if reply else None
                self._parent_key.append(parent)
                conv = self._thread_code.setdefault(parent, len(self._thread_code) + 1) if parent else 0
                added.append((conv, r[3], ws, ch))
            slots.append(slot)
        self._row_slot = np.concatenate([self._row_slot, np.asarray(slots, np.int64)])
        self._row_wordy = np.concatenate(
            [self._row_wordy, np.fromiter((text_wordy(r[11]) for r in fresh), bool)]
        )
        if added:
            convs, posted, wss, chs = (np.asarray(column, np.int64) for column in zip(*added, strict=True))
            self._slot_conv = np.concatenate([self._slot_conv, convs])
            self._slot_ts = np.concatenate([self._slot_ts, posted])
            self._slot_ws = np.concatenate([self._slot_ws, wss.astype(np.int32)])
            self._slot_ch = np.concatenate([self._slot_ch, chs.astype(np.int32)])
            self._links = None

    # ---- neighbours ----

    def _neighbours(self) -> tuple[np.ndarray, ...]:
        """(previous_1, ..., previous_W, next_1, ..., next_W): slot numbers, -1 for none."""
        if self._links is None:
            self._links = self._link()
        return self._links

    def _link(self) -> tuple[np.ndarray, ...]:
        n = len(self._parent_key)
        order = np.lexsort((np.arange(n), self._slot_ts, self._slot_conv, self._slot_ch, self._slot_ws))
        a, b = order[:-1], order[1:]
        together = (
            (self._slot_ws[a] == self._slot_ws[b])
            & (self._slot_ch[a] == self._slot_ch[b])
            & (self._slot_conv[a] == self._slot_conv[b])
            & ((self._slot_conv[b] != 0) | (self._slot_ts[b] - self._slot_ts[a] <= GAP_MICROS))
        )
        previous = np.full(n, -1, np.int64)
        following = np.full(n, -1, np.int64)
        previous[b[together]] = a[together]
        following[a[together]] = b[together]
        # A thread's first reply follows the thread's opening message.
        for slot in np.flatnonzero((self._slot_conv != 0) & (previous < 0)):
            parent_key = self._parent_key[slot]  # set: the slot is a reply
            parent = self._slot_of.get(parent_key) if parent_key is not None else None
            if parent is not None:
                previous[slot] = parent
        return (*_steps(previous), *_steps(following))

    # ---- ranking ----

    def rank(self, scope: Scope, view: ResolvedView, scores: Scores, limit: int) -> list[tuple[int, float]]:
        """(version row id, score) of the best messages visible in the scope and the view: the
        keyword and vector evidence, each scaled to its best, blended, then spread to the
        neighbours; best first. A scope large enough for the int8 first pass (``vector_index``)
        is ranked from rough cosines, then its best and their neighbours again from exact ones."""
        with self._lock:
            if len(self._vid) == 0 or limit <= 0:
                return []
            parts = self._scope_parts(scope, view)
            if not parts:
                return []
            visible = np.concatenate([positions for _, positions, _ in parts])
            if visible.size == 0:
                return []
            slots = len(self._parent_key)
            row_of_slot = np.full(slots, -1, np.int64)
            row_of_slot[self._row_slot[visible]] = visible
            # The halves' scores per slot, with one slot more, always 0: what a link of -1 (no
            # neighbour there) reads in ``_spread``.
            size = slots + 1
            keyword = self._keyword_part(scores.keyword, size) if scores.keyword is not None else None
            cosines = _Cosines(self, scores, self._held(parts), size) if scores.vector is not None else None
            # Only a visible message can be returned: the spread is computed at those alone.
            shown = np.flatnonzero(row_of_slot >= 0)
            # A message with no words of its own ("🚀", "😬") says nothing its neighbours said.
            wordy = self._row_wordy[row_of_slot[shown]]
            blend = _blend(keyword, cosines, size)
            spread = self._spread_all(blend, shown, wordy, scores.periods)
            if cosines is not None and cosines.rough:
                chosen = best_of(spread, max(self.rescore, 4 * limit))
                shown, wordy = shown[chosen], wordy[chosen]
                around = np.concatenate([shown, *(links[shown] for links in self._neighbours())])
                rescored = cosines.exact(row_of_slot[np.unique(around[around >= 0])])
                _reblend(blend, keyword, cosines, rescored)
                spread = self._spread_all(blend, shown, wordy, scores.periods)
            positive = spread > 0
            candidates, spread = shown[positive], spread[positive]
            if candidates.size > limit:
                top = np.argpartition(-spread, limit - 1)[:limit]
                candidates, spread = candidates[top], spread[top]
            rows = row_of_slot[candidates]
            order = np.lexsort((self._vid[rows], -spread))
            return [(int(self._vid[rows[i]]), float(spread[i])) for i in order]

    def _spread_all(
        self, blend: np.ndarray, shown: np.ndarray, wordy: np.ndarray, periods: tuple[tuple[int, int], ...]
    ) -> np.ndarray:
        """The score of each of ``shown``: its blend spread to its neighbours, lifted if it was
        posted in a period the question names."""
        spread = np.where(wordy, self._spread(blend, shown), blend[shown])
        if periods:
            # The best score anywhere: elsewhere a slot holds its own blend (no words there).
            best = max(spread.max(initial=0.0), _outside(blend, shown).max(initial=0.0))
            spread += PERIOD_LIFT * best * self._posted_in(periods, shown)
        return spread

    def _keyword_part(self, keyword: dict[int, float], slots: int) -> np.ndarray:
        part = np.zeros(slots)
        at = self._positions(np.fromiter(keyword, np.int64, len(keyword)))
        score = np.fromiter(keyword.values(), np.float64, len(keyword))
        use = (at >= 0) & (score > 0)
        np.maximum.at(part, self._row_slot[at[use]], score[use])
        top = part.max(initial=0.0)
        return part / top if top > 0 else part

    def _posted_in(self, periods: tuple[tuple[int, int], ...], slots: np.ndarray) -> np.ndarray:
        posted = self._slot_ts[slots]
        inside = np.zeros(len(slots), bool)
        for start, end in periods:
            inside |= (posted >= start) & (posted < end)
        return inside

    def _spread(self, blend: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """At each of ``slots``: its blend plus its neighbours' share of theirs (``blend``'s last
        slot is 0: a link of -1, no neighbour, reads it)."""
        spread: np.ndarray = blend[slots]
        for step, links in enumerate(self._neighbours()):
            weight = SPREAD * (FAR if step % WINDOW else 1.0)  # steps: WINDOW before, then WINDOW after
            spread += weight * blend[links[slots]]
        return spread


class _Cosines:
    """The vector half of one ranking: each held row's cosine above the scope's median, scaled so
    the best is 1 (what is merely typical of the channel's chat scores nothing, and neither does a
    cosine below the query's floor), per slot. ``rough``: from the int8 first pass, exact only for
    the best rows until ``exact`` puts more of them right."""

    def __init__(
        self, index: Conversations, scores: Scores, held: list[tuple[int, np.ndarray, np.ndarray]], slots: int
    ) -> None:
        assert scores.vector is not None
        self._index, self._vector, self._least = index, scores.vector, scores.floor
        self.part = np.zeros(slots)
        self.rough = sum(positions.size for _, positions, _ in held) >= index.rough_from
        self._floor = self._top = 0.0
        if not held:
            return
        positions, cosines = index._scored(self._vector, held, self.rough)
        median = None
        if self.rough:
            best = best_of(cosines, index.rescore)
            # The median of the rough cosines is still theirs once the best are exact, unless
            # the best reach into the middle or an exact one falls into it (then taken again).
            median = middle_of(cosines) if 2 * best.size + 2 < cosines.size else None
            exact = index._cosines(self._vector, positions[best])
            if median is not None and exact.min(initial=np.inf) < median[1]:
                median = None
            cosines[best] = exact
        self._top = float(cosines.max())
        # The floor stays below the best, so even a channel of one message can be found by meaning.
        middle = float(np.median(cosines)) if median is None else median[0]
        self._floor = min(middle, self._top - MIN_SPAN)
        self._put(positions, cosines)

    def exact(self, rows: np.ndarray) -> np.ndarray:
        """Score ``rows`` (positions; -1 and rows with no vector are skipped) from exact cosines;
        the slots scored."""
        rows = rows[rows >= 0]
        rows = rows[self._index._row[rows] >= 0]
        if rows.size:
            self._put(rows, self._index._cosines(self._vector, rows))
        slots: np.ndarray = self._index._row_slot[rows]
        return slots

    def _put(self, rows: np.ndarray, cosines: np.ndarray) -> None:
        scaled = np.clip((cosines - self._floor) / (self._top - self._floor), 0.0, None)
        self.part[self._index._row_slot[rows]] = np.where(cosines >= self._least, scaled, 0.0)


def _blend(keyword: np.ndarray | None, cosines: _Cosines | None, slots: int) -> np.ndarray:
    """The keyword and vector halves of a ranking, each scaled to its best, blended."""
    if keyword is None:
        return cosines.part if cosines is not None else np.zeros(slots)
    if cosines is None:
        return keyword
    blend: np.ndarray = KEYWORD_SHARE * keyword + (1 - KEYWORD_SHARE) * cosines.part
    return blend


def _reblend(blend: np.ndarray, keyword: np.ndarray | None, cosines: _Cosines, slots: np.ndarray) -> None:
    """``blend`` (``_blend``) made again at ``slots``, whose cosines changed: the same sum,
    element by element, as blending every slot again."""
    if keyword is not None and slots.size:
        blend[slots] = KEYWORD_SHARE * keyword[slots] + (1 - KEYWORD_SHARE) * cosines.part[slots]


def _outside(blend: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """``blend`` with ``slots`` cleared."""
    rest = blend.copy()
    rest[slots] = 0.0
    return rest


def _steps(first: np.ndarray) -> list[np.ndarray]:
    """[first, first of first, ...] up to WINDOW steps, -1 staying -1."""
    steps = [first]
    for _ in range(WINDOW - 1):
        last = steps[-1]
        steps.append(np.where(last >= 0, first[np.maximum(last, 0)], -1))
    return steps
