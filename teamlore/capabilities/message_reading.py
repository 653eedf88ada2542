"""Messages on the read path: fetched from the message index, gated like facts, and stood in for
by the facts that cover them.

What a search finds is facts and the messages they came from. A message that no fact visible at
the moment read covers is itself an answer (nothing said is lost to search). Otherwise the message
is shown as a fact standing for it: one of its facts visible at the moment read, or the fact that
replaced a retired one; of those, the one the query matches best (as a fact in the fact ranking,
then by the words they share). A fact standing for a message whose value it replaced carries that
message (``FactView.replaced``): what was said stays findable, shown under the current value as
what it replaced. A message whose facts were all retired with nothing visible in their place is
withheld (``retired_value``), so a retired value never comes back as current through the message
that first said it. With ``--history`` the retired facts themselves stand in.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

import numpy as np

from teamlore.capabilities.gate import Withheld, WithheldCounter, visible
from teamlore.capabilities.hits import FactView, Hit, MessageView
from teamlore.dates import periods_named
from teamlore.domain import Fact, MessageVersion, ResolvedView, Scope, Source
from teamlore.stores.protocols import FactBackend, MessageIndex, MessageStore, RawMessageHit
from teamlore.text import stems

# A covering fact withheld for one of these was not yet there at the moment read: the message
# was, then, a message no fact covered.
_NOT_YET = frozenset({Withheld.NOT_KNOWN_YET, Withheld.NOT_VALID_YET})
# How many "superseded by" links are followed to reach the current value.
MAX_HOPS = 8
# How much a fact's own match counts beside the match of the messages it cites (each scaled so the
# best of its ranking is 1). A message is ranked with the conversation around it and a fact only by
# its own words, so a fact citing messages takes its place from them and its own match breaks
# near-ties (a fact matching on its own too outranks the bare message). A fact citing no message
# (a reviewer's) has only its own match, at full weight.
FACT_WEIGHT = 0.05
# A question someone asked matches a question about it best, but what answers it is usually said
# next: a question's score is weighed down (0.8; measured on the LoCoMo tuning split, where 0.4
# costs recall: docs/benchmarks.md). Where its answer is found too, the question goes right behind
# it (``answers_first``).
QUESTION_WEIGHT = 0.8

FetchMessages = Callable[[int], list[RawMessageHit]]


# The fact reader's judgement of fact ids under a view: the view of each fact that may be shown,
# and why each other known fact may not (a fact unknown at the moment read is in neither).
# ``follow``: judge too the facts that superseded them, up to that many links away (one read).
# ``current``: facts already read at their current version (a fact whose current version was
# known at the moment read needs no other read).
class Judge(Protocol):
    def __call__(
        self,
        fact_ids: Sequence[str],
        scope: Scope,
        view: ResolvedView,
        follow: int = 0,
        current: Mapping[str, Fact] | None = None,
    ) -> tuple[dict[str, FactView], dict[str, Judged]]: ...


@dataclass(frozen=True, slots=True)
class Judged:
    """A fact that may not be shown under the view: why, and what replaced it (if anything)."""

    reason: Withheld
    superseded_by: str | None


@dataclass(frozen=True, slots=True)
class Found:
    """A gated message hit and what stands for it in the results (empty: withheld)."""

    message: MessageView
    stand_ins: tuple[Hit, ...]


class MessageSide:
    """The message half of a search: fetch message hits (``fetcher``), gate them (``gate``) and find
    what stands for each in the results (``stand_ins``)."""

    def __init__(self, index: MessageIndex, messages: MessageStore, facts: FactBackend) -> None:
        self._index = index
        self._messages = messages
        self._facts = facts

    def fetcher(
        self,
        mode: str,
        query: str,
        vector: np.ndarray | None,
        floor: float,
        scope: Scope,
        view: ResolvedView,
        now: datetime,
    ) -> FetchMessages:
        # A question naming a period ("on October 13", "in June") favours what was said then.
        periods = periods_named(query, now)
        if mode == "keyword":
            return lambda n: self._index._keyword(query, scope, view, n, periods)
        assert vector is not None
        if mode == "semantic":
            return lambda n: self._index._semantic(vector, scope, view, n, periods, floor)
        return lambda n: self._index._hybrid(query, vector, scope, view, n, periods, floor)

    def gate(
        self, raw: list[RawMessageHit], scope: Scope, view: ResolvedView, counter: WithheldCounter
    ) -> list[MessageView]:
        sources = self._sources(hit.message for hit in raw)
        shown: list[MessageView] = []
        for hit in raw:
            message = hit.message
            cited = sources.get((message.workspace, message.channel), {})
            reason = visible(message, cited, scope, view)
            if reason is not None:
                counter.add(message, reason)
                continue
            shown.append(MessageView(message, cited[message.message_id], hit.score))
        return shown

    def stand_ins(
        self,
        hits: list[MessageView],
        scope: Scope,
        view: ResolvedView,
        judge: Judge,
        counter: WithheldCounter,
    ) -> list[Found]:
        """Each message hit with what stands for it: itself, the facts covering it, the facts
        that replaced them, or nothing."""
        covering, current = self._covering(hits)
        shown, refused = judge(
            sorted({f for ids in covering.values() for f in ids}), scope, view, current=current
        )
        successors = self._successors(refused, scope, view, judge)
        found: list[Found] = []
        for hit in hits:
            ids = covering.get((hit.message.channel, hit.message.message_id), [])
            stand = _stand_ins(hit, ids, shown, refused, successors)
            if not stand:
                counter.add(hit.message, Withheld.RETIRED_VALUE)
            found.append(Found(hit, stand))
        return found

    def _covering(self, hits: list[MessageView]) -> tuple[dict[tuple[str, str], list[str]], dict[str, Fact]]:
        """(channel, message id) -> ids of the facts citing it now (any status), in write order;
        and those facts' current versions by id."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for hit in hits:
            wanted.setdefault((hit.message.workspace, hit.message.channel), set()).add(hit.message.message_id)
        covering: dict[tuple[str, str], list[str]] = {}
        current: dict[str, Fact] = {}
        for (workspace, channel), message_ids in wanted.items():
            for fact in self._facts.current_citing_any(workspace, channel, sorted(message_ids)):
                current[fact.fact_id] = fact
                for message_id in fact.evidence:
                    if message_id in message_ids:
                        covering.setdefault((channel, message_id), []).append(fact.fact_id)
        return covering, current

    def _successors(
        self, refused: dict[str, Judged], scope: Scope, view: ResolvedView, judge: Judge
    ) -> dict[str, FactView]:
        """Retired fact id -> the fact visible now at the end of its "superseded by" chain."""
        found: dict[str, FactView] = {}
        pending: dict[str, str | None] = {
            fid: j.superseded_by for fid, j in refused.items() if j.superseded_by
        }
        if not pending:
            return found
        # The whole chain in one read; then walked here, link by link.
        shown, still = judge(sorted({s for s in pending.values() if s}), scope, view, MAX_HOPS - 1)
        for _ in range(MAX_HOPS):
            if not pending:
                break
            following: dict[str, str | None] = {}
            for origin, successor in pending.items():
                if successor in shown:
                    found[origin] = shown[successor]
                elif successor in still and still[successor].superseded_by:
                    following[origin] = still[successor].superseded_by
            pending = following
        return found

    def _sources(self, messages: Iterable[MessageVersion]) -> dict[tuple[str, str], dict[str, Source]]:
        wanted: dict[tuple[str, str], set[str]] = {}
        for message in messages:
            wanted.setdefault((message.workspace, message.channel), set()).add(message.message_id)
        return {key: self._messages.sources(key[0], key[1], sorted(ids)) for key, ids in wanted.items()}


def _stand_ins(
    hit: MessageView,
    ids: list[str],
    shown: dict[str, FactView],
    refused: dict[str, Judged],
    successors: dict[str, FactView],
) -> tuple[Hit, ...]:
    """The facts that may stand for the message, in the order it said them: each of its facts
    visible now, or what replaced it; the message itself when nothing covered it yet."""
    if all(f not in shown and (f not in refused or refused[f].reason in _NOT_YET) for f in ids):
        return (hit,)  # nothing covered it at the moment read (or nothing ever did)
    standing: dict[str, Hit] = {}
    for fact_id in ids:
        view = shown.get(fact_id)
        if view is None and fact_id in successors:
            view = replace(successors[fact_id], replaced=(hit,))
        if view is not None:
            standing.setdefault(view.key, view)
    return tuple(standing.values())


def fuse(query: str, fact_hits: Sequence[FactView], found: Sequence[Found]) -> list[Hit]:
    """One ranking from the fact ranking and the message ranking. A message's score goes to what
    stands for it (``choose``)."""
    fact_top = max((hit.score for hit in fact_hits), default=0.0)
    message_top = max((entry.message.score for entry in found), default=0.0)
    own = {hit.key: _scaled(hit.score, fact_top) for hit in fact_hits}
    asked = stems(query)
    from_messages: dict[str, float] = {}
    items: dict[str, Hit] = {hit.key: hit for hit in fact_hits}
    replying: dict[str, set[tuple[str, str]]] = {}  # result key -> (channel, thread) of replies it stands for
    for entry in found:
        chosen = choose(entry.stand_ins, own, asked)
        score = _scaled(entry.message.score, message_top)
        said = entry.message.message
        for hit in chosen:
            from_messages[hit.key] = max(from_messages.get(hit.key, 0.0), score)
            items[hit.key] = _joined(items.get(hit.key), hit)
            if said.thread_id is not None and said.thread_id != said.message_id:
                replying.setdefault(hit.key, set()).add((said.channel, said.thread_id))
    fused = {
        key: (from_messages.get(key, 0.0) + own.get(key, 0.0) * (FACT_WEIGHT if _cites(hit) else 1.0))
        * (QUESTION_WEIGHT if hit.is_question else 1.0)
        for key, hit in items.items()
    }
    order = sorted(fused, key=lambda key: (-fused[key], key))
    return answers_first([replace(items[key], score=fused[key]) for key in order], replying)


def answers_first(ranked: Sequence[Hit], replying: dict[str, set[tuple[str, str]]]) -> list[Hit]:
    """Each question that an answer in the same results replies to (in the question's thread)
    moved just behind the best-ranked such answer, and shown with it."""
    out = list(ranked)
    for question in [hit for hit in ranked if hit.is_question]:
        opened = {(question.channel, source.message_id) for source in question.sources}
        answer = next((h for h in out if not h.is_question and replying.get(h.key, set()) & opened), None)
        if answer is None:
            continue
        at = next(i for i, h in enumerate(out) if h.key == question.key)
        del out[at]
        after = out.index(answer) + 1
        moved = replace(question, answer=answer, score=min(question.score, answer.score))
        out.insert(max(at, after), moved)
    return out


def choose(stand_ins: Sequence[Hit], matched: Collection[str], asked: set[str]) -> list[Hit]:
    """Of what may stand for a message, what the query matches best: found by the fact ranking
    too, then sharing the most words with the query; the first said of those."""

    def match(hit: Hit) -> tuple[bool, int]:
        return hit.key in matched, len(asked & stems(hit.text))

    if not stand_ins:
        return []
    best = max(match(hit) for hit in stand_ins)
    return [next(hit for hit in stand_ins if match(hit) == best)]


def _joined(known: Hit | None, hit: Hit) -> Hit:
    """One result for a fact found several ways: the first found, with every message it replaced."""
    if known is None:
        return hit
    if not isinstance(known, FactView) or not isinstance(hit, FactView) or not hit.replaced:
        return known
    seen = {m.key for m in known.replaced}
    return replace(known, replaced=known.replaced + tuple(m for m in hit.replaced if m.key not in seen))


def _scaled(score: float, top: float) -> float:
    return score / top if top > 0 else 0.0


def _cites(hit: Hit) -> bool:
    return not isinstance(hit, FactView) or bool(hit.fact.evidence)
