"""Erasing a person: their message text and the facts only they support, everywhere.

Messages lose their text and author name; facts they alone support are retracted and the
statement text of every version, its keyword-index rows and its vector are deleted; facts
others also support only lose that evidence. The audit log keeps its events (ids and hashes,
never text), plus one "erased" event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime

from teamlore.domain import FactStatus
from teamlore.embedding import CachedEmbedder
from teamlore.errors import InvalidInput
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import AuditEvent
from teamlore.workers import lifecycle, mutations
from teamlore.workers.passages import refresh_following
from teamlore.workers.resolver import Resolver


@dataclasses.dataclass
class ErasureReport:
    workspace: str
    author_id: str
    messages: int = 0
    facts_erased: list[str] = dataclasses.field(default_factory=list)
    facts_kept_without_their_evidence: list[str] = dataclasses.field(default_factory=list)
    vectors: int = 0
    pages_rewritten: int = 0


def erase_author(
    stores: EmbeddedStores,
    workspace: str,
    author_id: str,
    actor: str,
    resolver_for: Callable[[str], Resolver],
    clock: Callable[[], datetime],
    embedder: CachedEmbedder,
) -> ErasureReport:
    if not workspace or not author_id:
        raise InvalidInput("erase needs --workspace and --author")
    if not actor.strip():
        raise InvalidInput("erase needs the name of who asked for it (--by)")
    now = clock()
    report = ErasureReport(workspace, author_id)
    messages = stores.messages.authored(workspace, author_id)
    doomed: set[str] = set()
    kept: set[str] = set()
    with stores.transaction():
        for channel, message_id in messages:
            for fact in stores.facts.current_citing(workspace, channel, message_id):
                if fact.status is FactStatus.RETRACTED and fact.fact_id in doomed:
                    continue
                new = mutations.drop_evidence(stores.facts, fact, message_id, now, "erased on request")
                if new.status is not FactStatus.RETRACTED:
                    kept.add(fact.fact_id)
                else:
                    doomed.add(fact.fact_id)
                    lifecycle.reconsider_replaced(stores.facts, resolver_for(workspace), new, now, actor)
        report.messages = len(messages)
        stores.messages.erase_author(workspace, author_id, now)
        erased = stores.message_index.erase_author(workspace, author_id)
        # The messages said just after theirs were embedded with their words as context.
        refresh_following(stores.message_index, embedder, erased.messages)
        report.vectors = erased.vectors + stores.facts.erase_text(sorted(doomed))
        report.facts_erased = sorted(doomed)
        report.facts_kept_without_their_evidence = sorted(kept - doomed)
        stores.audit.append(
            AuditEvent(
                "erased",
                actor,
                "erasure of a person's messages",
                now,
                workspace,
                "*",
                tuple(sorted(doomed)),
                (),
                {"author_id": author_id, "messages": len(messages)},
            )
        )
    return report
