"""What every extractor shares: the result type, the protocols, and the importance of each type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from teamlore.domain import CandidateFact, FactType, Message


class ExtractionStatus(StrEnum):
    OK = "ok"
    NOOP = "noop"  # the message carried nothing worth keeping; distinct from a failure


@dataclass(frozen=True, slots=True)
class Extraction:
    status: ExtractionStatus
    facts: tuple[CandidateFact, ...]
    # Set when the configured extractor failed and the offline one stood in: the reason.
    fallback: str | None = None


# A message to extract, with the first message of its thread when it is a reply (context).
ExtractionRequest = tuple[Message, Message | None]


class Extractor(Protocol):
    def extract(self, message: Message, thread_parent: Message | None) -> Extraction: ...


@runtime_checkable
class BatchExtractor(Extractor, Protocol):
    """An extractor that is cheaper given many messages at once (one model call, one embedding
    batch)."""

    def extract_batch(self, requests: Sequence[ExtractionRequest]) -> list[Extraction]: ...


def extract_many(extractor: Extractor, requests: Sequence[ExtractionRequest]) -> list[Extraction]:
    """One extraction per request, in order; batched when the extractor can batch."""
    if isinstance(extractor, BatchExtractor):
        return extractor.extract_batch(requests)
    return [extractor.extract(message, parent) for message, parent in requests]


IMPORTANCE = {
    FactType.DECISION: 0.9,
    FactType.DEFINITION: 0.7,
    FactType.OWNERSHIP: 0.8,
    FactType.SCHEDULE: 0.8,
    FactType.STATUS: 0.6,
    FactType.METRIC: 0.7,
    FactType.ACTION_ITEM: 0.7,
    FactType.ANNOUNCEMENT: 0.6,
    FactType.QUESTION: 0.4,
    FactType.ANSWER: 0.7,
    FactType.STATEMENT: 0.4,
}
