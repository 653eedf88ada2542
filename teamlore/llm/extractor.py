"""Model-backed extraction: messages of one thread and time window per call, validated, cached.

A batch is at most ``batch_messages`` messages of one channel and one thread (its first message
with its replies), or of the channel's top level within one fixed time bucket, so the same
history batches the same way on a re-index and the cache answers. Each fact must cite messages
of its batch and be supported by what they say (``grounding``); any other is rejected and
counted. A fact citing several messages is given to each of them: the pipeline's dedupe merges
the copies into one fact with all of them as evidence. When the model fails (after the client's
retries and ``invalid_retries`` re-asks), the offline extractor takes the batch and says so.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime

from teamlore.dates import due_date
from teamlore.domain import CandidateFact, FactType, Message
from teamlore.errors import ModelOutputInvalid, ModelUnavailable
from teamlore.extraction import (
    IMPORTANCE,
    Extraction,
    ExtractionRequest,
    ExtractionStatus,
    Extractor,
    clean,
    extract_many,
    topic_of,
)
from teamlore.llm import prompts
from teamlore.llm.client import ModelClient, Role
from teamlore.llm.grounding import grounded
from teamlore.llm.structured import ask
from teamlore.stores.protocols import ModelCache
from teamlore.timeutil import iso

log = logging.getLogger(__name__)
_SPACES = re.compile(r"\s+")
_DATED = (FactType.ACTION_ITEM, FactType.SCHEDULE)


def batches(requests: Sequence[ExtractionRequest], size: int, window_s: float) -> list[list[int]]:
    """Indices of ``requests`` grouped by channel and thread (a thread's first message with its
    replies), top-level messages by fixed time bucket, at most ``size`` each; a message id seen
    twice (created and edited in one delivery) starts a new batch."""
    parents = {m.thread_id for m, _ in requests if m.thread_id}
    groups: dict[tuple[str, str, str, int], list[list[int]]] = {}
    for index, (message, _) in enumerate(requests):
        thread = message.thread_id or (message.message_id if message.message_id in parents else "")
        # A thread is one conversation however long it runs; the channel's top level is cut in time.
        bucket = 0 if thread else int(message.ts.timestamp() // window_s)
        chunks = groups.setdefault((message.workspace, message.channel, thread, bucket), [[]])
        ids = {requests[i][0].message_id for i in chunks[-1]}
        if len(chunks[-1]) >= size or message.message_id in ids:
            chunks.append([])
        chunks[-1].append(index)
    return [chunk for chunks in groups.values() for chunk in chunks]


class ModelExtractor:
    def __init__(
        self,
        client: ModelClient,
        cache: ModelCache | None,
        fallback: Extractor,
        batch_messages: int = 20,
        window_s: float = 900.0,
        invalid_retries: int = 1,
    ) -> None:
        self.client, self.cache, self.fallback = client, cache, fallback
        self.batch_messages, self.window_s, self.invalid_retries = batch_messages, window_s, invalid_retries

    def extract(self, message: Message, thread_parent: Message | None) -> Extraction:
        return self.extract_batch([(message, thread_parent)])[0]

    def extract_batch(self, requests: Sequence[ExtractionRequest]) -> list[Extraction]:
        out: list[Extraction] = [Extraction(ExtractionStatus.NOOP, ())] * len(requests)
        for chunk in batches(requests, self.batch_messages, self.window_s):
            wanted = [i for i in chunk if requests[i][0].text.strip()]
            if wanted:
                for index, extraction in zip(wanted, self._batch([requests[i] for i in wanted]), strict=True):
                    out[index] = extraction
        return out

    def _batch(self, requests: Sequence[ExtractionRequest]) -> list[Extraction]:
        messages = [m for m, _ in requests]
        in_batch = {m.message_id for m in messages}
        context = {p.message_id: p for _, p in requests if p is not None and p.message_id not in in_batch}
        prompt = prompts.render_extraction(
            messages[0].channel, [_as_data(m) for m in messages], [_as_data(p) for p in context.values()]
        )
        try:
            answer = ask(
                self.client,
                Role.EXTRACT,
                prompts.EXTRACT_VERSION,
                prompt,
                prompts.ExtractionAnswer,
                self.cache,
                self.invalid_retries,
            )
        except (ModelUnavailable, ModelOutputInvalid) as exc:
            self.client.note(Role.EXTRACT, fallbacks=1)
            log.warning("extraction fell back to the heuristic for %d message(s): %s", len(messages), exc)
            return [
                _with_fallback(extraction, f"model extraction failed: {exc}")
                for extraction in extract_many(self.fallback, requests)
            ]
        return self._distribute(answer, requests)

    def _distribute(
        self, answer: prompts.ExtractionAnswer, requests: Sequence[ExtractionRequest]
    ) -> list[Extraction]:
        messages = [m for m, _ in requests]
        by_id = {m.message_id: m for m in messages}
        parents = {m.message_id: p for m, p in requests if p is not None}
        facts: dict[str, dict[str, CandidateFact]] = {m.message_id: {} for m in messages}
        rejected = 0
        for fact in answer.facts:
            cited = list(dict.fromkeys(fact.message_ids))
            if not set(cited) <= set(by_id):
                rejected += 1
                log.warning(
                    "extracted fact rejected: it cites %s, not in its batch", sorted(set(cited) - set(by_id))
                )
                continue
            if not grounded(fact.statement, _support(cited, by_id, parents)):
                rejected += 1
                log.warning(
                    "extracted fact rejected: what it cites does not say it (%d chars)", len(fact.statement)
                )
                continue
            candidate = _candidate(fact, max(by_id[i].ts for i in cited))
            for message_id in cited:
                facts[message_id].setdefault(candidate.statement.casefold(), candidate)
        if rejected:
            self.client.note(Role.EXTRACT, rejected=rejected)
        return [
            Extraction(
                ExtractionStatus.OK if facts[m.message_id] else ExtractionStatus.NOOP,
                tuple(facts[m.message_id].values()),
            )
            for m in messages
        ]


def _support(cited: list[str], by_id: dict[str, Message], parents: dict[str, Message]) -> list[str]:
    """What the cited messages say: their text, their authors, their thread's opening message."""
    said = [by_id[i] for i in cited] + [parents[i] for i in cited if i in parents]
    return [f"{m.author_name}: {clean(m.text)}" for m in said]


def _as_data(message: Message) -> dict[str, str]:
    return {
        "id": message.message_id,
        "author": message.author_name,
        "ts": iso(message.ts),
        "text": clean(message.text),
    }


def _candidate(fact: prompts.ExtractedFact, said_at: datetime) -> CandidateFact:
    statement = _SPACES.sub(" ", fact.statement).strip()
    entities = tuple(dict.fromkeys(e.strip() for e in fact.entities if e.strip()))
    return CandidateFact(
        statement=statement,
        fact_type=fact.type,
        entities=entities,
        topic=fact.topic.strip().casefold() or topic_of(entities, statement),
        importance=IMPORTANCE[fact.type],
        confidence=fact.confidence,
        valid_from=said_at,
        due_at=due_date(statement, said_at) if fact.type in _DATED else None,
    )


def _with_fallback(extraction: Extraction, reason: str) -> Extraction:
    return Extraction(extraction.status, extraction.facts, fallback=reason)
