"""Ask: a short answer composed only from what the reader may see, each statement cited.

The facts (and the messages no fact covers) come from ``FactReader.search``, so the gate, scope
and time view apply as for any read. A result counts as relevant only when it shares a meaningful
word with the question: a semantic neighbour alone is not an answer, and when nothing is relevant
the answer says so rather than offering the nearest unrelated fact. The composer is pluggable (a
model-backed one lives in the LLM layer); whatever it writes may cite only what it was given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from teamlore.capabilities.facts import FactReader, Receipt, SearchMode
from teamlore.capabilities.hits import FactView, Hit
from teamlore.capabilities.limits import check_query
from teamlore.domain import ReadView, Scope
from teamlore.errors import InvalidInput
from teamlore.text import stems

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Composed:
    """What a composer wrote: the text (citation markers [n] refer to ``cited`` in order)."""

    text: str
    cited: tuple[str, ...]  # the keys of the cited results (fact ids, message keys), in marker order


class Composer(Protocol):
    """Turns a question and the hits relevant to it into an answer that cites them by key."""

    name: str

    def compose(self, question: str, facts: Sequence[Hit]) -> Composed: ...


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    text: str
    known: bool
    citations: tuple[Hit, ...]  # citation [n] is citations[n - 1]
    composer: str
    receipt: Receipt
    note: str | None = None  # e.g. why a model composer's output was not used


class ExtractiveComposer:
    """No model: the relevant facts and messages themselves, most relevant first, with dates."""

    name = "extractive"

    def compose(self, question: str, facts: Sequence[Hit]) -> Composed:
        lines = []
        for number, hit in enumerate(facts, start=1):
            if not isinstance(hit, FactView):
                said = f"{hit.message.author_name} said" if hit.message.author_name else "said"
                lines.append(f"- {hit.text} ({said} on {hit.since:%Y-%m-%d}) [{number}]")
                continue
            notes = [f"since {hit.fact.valid_from:%Y-%m-%d}"]
            if hit.fact.contested:
                notes.append("contested: a possible contradiction is waiting for review")
            if hit.past_due:
                notes.append("its due date has passed")
            if hit.newer_elsewhere is not None:
                newer = hit.newer_elsewhere
                notes.append(f"older than #{newer.channel}, which says since {newer.valid_from:%Y-%m-%d}")
            notes.extend(f'replaces "{said.text}" ({said.since:%Y-%m-%d})' for said in hit.replaced)
            lines.append(f"- {hit.text} ({'; '.join(notes)}) [{number}]")
        return Composed("\n".join(lines), tuple(hit.key for hit in facts))


def relevant(question: str, facts: Sequence[Hit]) -> list[Hit]:
    """The results sharing meaningful words (or entities) with the question: those matching the
    most of its words first (search rank breaks ties), and none matching under half as many as
    the best one, so a fact sharing only "Atlas" does not ride along with facts about Atlas's
    datastore. A question someone asked is not an answer, however well it matches."""
    asked = stems(question)
    if not asked:
        return []
    scored = []
    for rank, view in enumerate(facts):
        if view.is_question:
            continue
        said = f"{view.text} {' '.join(view.fact.entities)}" if isinstance(view, FactView) else view.text
        overlap = len(asked & stems(said))
        if overlap:
            scored.append((overlap, rank, view))
    if not scored:
        return []
    best = max(overlap for overlap, _, _ in scored)
    kept = [item for item in scored if 2 * item[0] >= best]
    return [view for _, _, view in sorted(kept, key=lambda item: (-item[0], item[1]))]


def ask(
    reader: FactReader,
    question: str,
    scope: Scope,
    view: ReadView | None = None,
    k: int = 5,
    composer: Composer | None = None,
) -> Answer:
    """Answer ``question`` from the facts visible in ``scope`` at ``view``."""
    question = check_query(question, "the question")
    result = reader.search(question, scope, view, SearchMode.HYBRID, k=max(k * 2, 10))
    facts = relevant(question, result.hits)[:k]
    if not facts:
        channels = ", ".join(sorted(scope.channels))
        return Answer(question, f"Nothing known about that in {channels}.", False, (), "none", result.receipt)
    extractive = ExtractiveComposer()
    chosen = composer or extractive
    note = None
    try:
        composed = chosen.compose(question, facts)
        _check_citations(composed, facts)
    except Exception as exc:  # a model composer failing must not cost the reader an answer
        if chosen is extractive:
            raise
        note = f"{chosen.name} composer failed ({type(exc).__name__}: {exc}); extractive answer shown"
        log.warning(note)
        chosen, composed = extractive, extractive.compose(question, facts)
    by_id = {v.key: v for v in facts}
    citations = tuple(by_id[fact_id] for fact_id in composed.cited)
    return Answer(question, composed.text, True, citations, chosen.name, result.receipt, note)


def _check_citations(composed: Composed, facts: Sequence[Hit]) -> None:
    given = {v.key for v in facts}
    invented = [fact_id for fact_id in composed.cited if fact_id not in given]
    if invented:
        raise InvalidInput(f"answer cites facts it was not given: {', '.join(invented)}")
    if not composed.cited:
        raise InvalidInput("answer cites no fact")
