"""Small helpers tests share: ingest events, find facts by statement, retire facts."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from teamlore.app import Teamlore
from teamlore.domain import Fact, FactStatus, FactType, Message, MessageEvent, content_hash
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


class HashEmbedder:
    """Deterministic unit vectors from a text's hash: no meaning at all, and no calibration (for
    comparing rankings, or reading statements by their words alone)."""

    name = "test/hash-384"

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.vstack([self._vector(t) for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


def billing_fact(
    statement: str,
    fact_id: str,
    *,
    valid_from: datetime,
    recorded_from: datetime,
    channel: str = "C1",
    **changes: Any,
) -> Fact:
    """A version-1 status fact about billing in workspace T1, written straight to a fact store."""
    fields: dict[str, Any] = {
        "fact_id": fact_id,
        "version": 1,
        "workspace": "T1",
        "channel": channel,
        "thread_id": None,
        "statement": statement,
        "content_hash": content_hash(statement),
        "fact_type": FactType.STATUS,
        "entities": ("billing",),
        "topic": "billing",
        "importance": 0.5,
        "confidence": 0.9,
        "status": FactStatus.ACTIVE,
        "evidence": (f"m_{fact_id}",),
        "valid_from": valid_from,
        "recorded_from": recorded_from,
    }
    return Fact(**{**fields, **changes})


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Terminate a server process the tests started; kill it if it will not go."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
