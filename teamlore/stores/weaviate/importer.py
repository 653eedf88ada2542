"""Copy the fact versions of the SQLite file into Weaviate, in batches, reporting every refusal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from teamlore.domain import Fact
from teamlore.embedding import EmbeddingCache
from teamlore.stores.weaviate.facts import WeaviateFactBackend


class VersionSource(Protocol):
    """Where the versions come from: the SQLite file's fact store (``export_versions``)."""

    def export_versions(self, after_vid: int, limit: int) -> list[tuple[int, Fact, str | None]]: ...


@dataclass
class CopyReport:
    """What ``copy_versions`` copied, and each version Weaviate refused."""

    copied: int = 0
    failed: list[str] = field(default_factory=list)  # "fact v2: why", one per refused object


def copy_versions(
    source: VersionSource, target: WeaviateFactBackend, vectors: EmbeddingCache, batch_size: int
) -> CopyReport:
    """Every version, oldest first, with its cached vector. Re-runnable: object ids are fixed."""
    report = CopyReport()
    after = 0
    while page := source.export_versions(after, batch_size):
        after = page[-1][0]
        found = vectors.get_vectors([key for _, _, key in page if key])
        rows = [(fact, key, found.get(key) if key else None) for _, fact, key in page]
        refused = target.import_versions(rows)
        report.failed += refused
        report.copied += len(rows) - len(refused)
    return report
