"""Ask: a short answer composed only from facts the reader may see, each statement cited.

The facts come from ``FactReader.search`` (so the gate, scope and time view apply as for any
read). A fact counts as relevant only when it shares a meaningful word with the question: a
semantic neighbour alone is not an answer, and when nothing is relevant the answer says so rather
than offering the nearest unrelated fact. The composer is pluggable (a model-backed one lives in
the LLM layer); whatever it writes may cite only the facts it was given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from teamlore.capabilities.facts import FactReader, FactView, Receipt, SearchMode
from teamlore.domain import FactType, ReadView, Scope
from teamlore.errors import InvalidInput
from teamlore.text import content_words

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2_000
# Words compare on their first letters so "launch" meets "launches" and "launched"; five keeps
# "deploy"/"deployment" together without merging "office"/"officer"-sized words too eagerly.
STEM = 5


@dataclass(frozen=True, slots=True)
class Composed:
    """What a composer wrote: the text (citation markers [n] refer to ``cited`` in order)."""

    text: str
    cited: tuple[str, ...]  # fact ids, in marker order


class Composer(Protocol):
    name: str

    def compose(self, question: str, facts: Sequence[FactView]) -> Composed: ...


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    text: str
    known: bool
    citations: tuple[FactView, ...]  # citation [n] is citations[n - 1]
    composer: str
    receipt: Receipt
    note: str | None = None  # e.g. why a model composer's output was not used


class ExtractiveComposer:
    """No model: the relevant facts themselves, most relevant first, with their dates."""

    name = "extractive"

    def compose(self, question: str, facts: Sequence[FactView]) -> Composed:
        lines = []
        for number, view in enumerate(facts, start=1):
            fact = view.fact
            notes = [f"since {fact.valid_from:%Y-%m-%d}"]
            if fact.contested:
                notes.append("contested: a possible contradiction is waiting for review")
            if view.past_due:
                notes.append("its due date has passed")
            lines.append(f"- {fact.statement} ({'; '.join(notes)}) [{number}]")
        return Composed("\n".join(lines), tuple(v.fact.fact_id for v in facts))


def relevant(question: str, facts: Sequence[FactView]) -> list[FactView]:
    """The facts sharing meaningful words (or entities) with the question: those matching the most
    of its words first (search rank breaks ties), and none matching under half as many as the
    best one, so a fact sharing only "Atlas" does not ride along with facts about Atlas's
    datastore. A question someone asked is not an answer, however well it matches."""
    asked = {w[:STEM] for w in content_words(question)}
    if not asked:
        return []
    scored = []
    for rank, view in enumerate(facts):
        fact = view.fact
        if fact.fact_type is FactType.QUESTION:
            continue
        overlap = len(
            asked & {w[:STEM] for w in content_words(f"{fact.statement} {' '.join(fact.entities)}")}
        )
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
    question = (question or "").strip()
    if not question:
        raise InvalidInput("ask needs a question")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"a question may be at most {MAX_QUESTION_CHARS} characters")
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
    by_id = {v.fact.fact_id: v for v in facts}
    citations = tuple(by_id[fact_id] for fact_id in composed.cited)
    return Answer(question, composed.text, True, citations, chosen.name, result.receipt, note)


def _check_citations(composed: Composed, facts: Sequence[FactView]) -> None:
    given = {v.fact.fact_id for v in facts}
    invented = [fact_id for fact_id in composed.cited if fact_id not in given]
    if invented:
        raise InvalidInput(f"answer cites facts it was not given: {', '.join(invented)}")
    if not composed.cited:
        raise InvalidInput("answer cites no fact")
