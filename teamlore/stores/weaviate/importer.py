"""Copy the fact versions or the message index of the SQLite file into Weaviate, in batches,
reporting every refusal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from teamlore.embedding import EmbeddingCache

V = TypeVar("V")
V_in = TypeVar("V_in", contravariant=True)
V_out = TypeVar("V_out", covariant=True)


class VersionSource(Protocol[V_out]):
    """Where the versions come from: the SQLite file's fact store or message index
    (``export_versions``: row id, version, embedding key)."""

    def export_versions(self, after_vid: int, limit: int) -> Sequence[tuple[int, V_out, str | None]]: ...


class VersionTarget(Protocol[V_in]):
    """Where they go: the Weaviate fact store or message index (``import_versions``)."""

    def import_versions(self, rows: Sequence[tuple[V_in, str | None, np.ndarray | None]]) -> list[str]: ...


@dataclass
class CopyReport:
    """What ``copy_versions`` copied, and each version Weaviate refused."""

    copied: int = 0
    failed: list[str] = field(default_factory=list)  # "fact v2: why", one per refused object


def copy_versions(
    source: VersionSource[V], target: VersionTarget[V], vectors: EmbeddingCache, batch_size: int
) -> CopyReport:
    """Every version, oldest first, with its cached vector. Re-runnable: object ids are fixed."""
    report = CopyReport()
    after = 0
    while page := source.export_versions(after, batch_size):
        after = page[-1][0]
        found = vectors.get_vectors([key for _, _, key in page if key])
        rows = [(version, key, found.get(key) if key else None) for _, version, key in page]
        refused = target.import_versions(rows)
        report.failed += refused
        report.copied += len(rows) - len(refused)
    return report
