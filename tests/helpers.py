"""Small helpers tests share: ingest events, find facts by statement, retire facts."""

from __future__ import annotations

from teamlore.app import Teamlore
from teamlore.domain import Fact, Message, MessageEvent
from teamlore.extraction import Extraction, ExtractionStatus
from teamlore.workers import mutations
from teamlore.workers.pipeline import IngestResult, ingest


class KeepsNothing:
    """An extractor that keeps no statement, so every message stays a bare message."""

    def extract(self, message: Message, thread_parent: Message | None) -> Extraction:
        return Extraction(ExtractionStatus.NOOP, ())


def put(lore: Teamlore, *events: MessageEvent) -> list[IngestResult]:
    return ingest(list(events), lore.pipeline)


def only_fact(lore: Teamlore, result: IngestResult) -> Fact:
    assert len(result.created) == 1, result
    fact = lore.stores.facts.current_version(result.created[0])
    assert fact is not None
    return fact


def supersede(lore: Teamlore, older: Fact, newer: Fact) -> Fact:
    return mutations.supersede(lore.stores.facts, older, newer, lore.clock(), "test")
