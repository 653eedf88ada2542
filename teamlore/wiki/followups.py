"""Updates on action items: a later status statement about the same thing ("the canary stage is
live" after "@ben will add a canary stage ... by April 15").

The page links the update beside the item; it never closes the item (only evidence the resolver
accepts retires a fact, and a deadline never does). "The same thing" is deliberately strict:
a status fact of the same channel, said after the item, sharing at least two longer words with
it, found through the keyword search every reader uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from teamlore.capabilities.facts import FactReader, FactView, SearchMode
from teamlore.domain import FactType, ReadView, Scope, normalize_statement

MIN_SHARED = 2
_LONG_WORD = re.compile(r"\w{5,}")
CANDIDATES = 10


# Long words that say when or how politely, not what: sharing them makes no two things the same.
_NOT_A_SUBJECT = frozenset(
    "after before today tomorrow tonight morning evening about there their which would could should"
    " please thanks every still again later these those where while until since being".split()
)


def _words(text: str) -> set[str]:
    return set(_LONG_WORD.findall(normalize_statement(text))) - _NOT_A_SUBJECT


def updates(
    reader: FactReader, scope: Scope, items: Iterable[FactView], valid_at: datetime | None = None
) -> dict[str, FactView]:
    """Action item fact id -> the first later status statement about it, where there is one."""
    found: dict[str, FactView] = {}
    for item in items:
        if item.fact.fact_type is not FactType.ACTION_ITEM:
            continue
        wanted = _words(item.fact.statement)
        hits = reader.search(
            item.fact.statement, scope, ReadView(valid_at), SearchMode.KEYWORD, CANDIDATES
        ).hits
        later = [
            hit
            for hit in hits
            if isinstance(hit, FactView)
            and hit.fact.fact_type is FactType.STATUS
            and hit.fact.valid_from > item.fact.valid_from
            and len(wanted & _words(hit.fact.statement)) >= MIN_SHARED
        ]
        if later:
            found[item.fact.fact_id] = min(later, key=lambda v: (v.fact.valid_from, v.fact.fact_id))
    return found
