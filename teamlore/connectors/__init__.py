"""Connectors: platform events, export files and pushes, normalized to ``MessageEvent``.

Every reader yields ``ImportItem``s: a location a person can find (``file:line``) and either a
valid event or the one-line reason it was refused, so one bad line never costs the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from teamlore.domain import MessageEvent
from teamlore.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class ImportItem:
    location: str
    event: MessageEvent | None = None
    error: InvalidInput | None = None


__all__ = ["ImportItem"]
