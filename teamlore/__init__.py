"""Teamlore: a team's chat turned into cited, time-aware facts and a wiki that stays true."""

from teamlore.capabilities.facts import FactReader, FactView, Receipt, SearchMode, SearchResult
from teamlore.config import Settings
from teamlore.domain import Fact, FactStatus, FactType, MessageEvent, ReadView, Scope
from teamlore.errors import TeamloreError

__version__ = "0.1.0"

__all__ = [
    "Fact",
    "FactReader",
    "FactStatus",
    "FactType",
    "FactView",
    "MessageEvent",
    "ReadView",
    "Receipt",
    "Scope",
    "SearchMode",
    "SearchResult",
    "Settings",
    "TeamloreError",
]
