"""Re-index: extract again from the stored raw messages of a channel (after the extractor
changed, say). Facts the text still states keep their ids; others are dropped or added exactly
as an edit would. Safe to interrupt and run again: each message is its own savepoint and a
second run over unchanged extraction changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from teamlore.domain import EventKind
from teamlore.extraction import ExtractionRequest, extract_many
from teamlore.workers.passages import BatchPassages
from teamlore.workers.pipeline import (
    IngestResult,
    Outcome,
    PipelineDeps,
    add_statement,
    drop_unsupported,
    index_message,
)

PAGE = 256


@dataclass
class ReindexReport:
    messages: int = 0
    created: int = 0
    retracted: int = 0
    extraction_fallbacks: int = 0  # messages the heuristic extractor took over from the model


def reindex_channel(
    workspace: str,
    channel: str,
    deps: PipelineDeps,
    progress: Callable[[int], None] | None = None,
    after: str = "",
    checkpoint: Callable[[str], None] | None = None,
) -> ReindexReport:
    """Messages after ``after`` (message-id order); ``checkpoint`` is told the last message id of
    each committed batch, so an interrupted run can resume from there."""
    report = ReindexReport()
    while True:
        batch = deps.messages.live_messages(workspace, channel, after, PAGE)
        if not batch:
            return report
        parents = {m.message_id: m for m in batch}
        requests: list[ExtractionRequest] = []
        for message in batch:
            parent = None
            if message.thread_id and message.thread_id != message.message_id:
                parent = parents.get(message.thread_id) or deps.messages.get_message(
                    workspace, channel, message.thread_id
                )
            requests.append((message, parent))
        extractions = extract_many(deps.extractor, requests)
        report.extraction_fallbacks += sum(1 for e in extractions if e.fallback)
        extracted = [list(e.facts) for e in extractions]
        context = BatchPassages(deps.index)
        passages = [context.passage(m) if m.text.strip() else None for m in batch]
        keys = deps.embedder.ensure_passages(
            [c.statement for cs in extracted for c in cs] + [p for p in passages if p]
        )
        with deps.transaction():
            for message, candidates, passage in zip(batch, extracted, passages, strict=True):
                with deps.transaction(savepoint=True):
                    now = deps.clock()
                    result = IngestResult(message.as_event(EventKind.EDITED), Outcome.EDITED)
                    index_message(message, passage, keys, deps, now)
                    drop_unsupported(message, candidates, deps, now, result)
                    for candidate in candidates:
                        add_statement(candidate, message, keys, deps, now, result)
                    if deps.notify is not None and result.changed:
                        deps.notify(result.changed)
                    report.created += len(result.created)
                    report.retracted += len(result.retracted)
        report.messages += len(batch)
        after = batch[-1].message_id
        if progress:
            progress(len(batch))
        if checkpoint:
            checkpoint(after)
