"""The seams between the pipeline, the read path and the stores.

Backends implement raw queries only (names start with an underscore): scope and the time
predicate are compiled into each of them, but nothing they return is shown to anyone before
``teamlore.capabilities.gate.visible`` has passed it. Writes go through ``write_version``, which
takes the audit event with it, so no mutation can skip the log.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

import numpy as np

from teamlore.dates import Period
from teamlore.domain import (
    Attachment,
    AttachmentKind,
    Channel,
    Fact,
    MediaReference,
    Message,
    MessageVersion,
    ResolvedView,
    Scope,
    Source,
)
from teamlore.errors import TeamloreError
from teamlore.page_model import PageRef, PageVersion, Route

# Reciprocal rank fusion constant: 60 is the value from the original RRF paper, and flat enough
# that a fact ranked well by only one of the two lists still surfaces. Every fact backend fuses
# with it, so hybrid scores mean the same on each.
RRF_K = 60


@dataclass(frozen=True, slots=True)
class RawHit:
    """A row from a raw query, not yet gated."""

    fact: Fact
    score: float


@dataclass(frozen=True, slots=True)
class RawMessageHit:
    """A message version from a raw query, not yet gated."""

    message: MessageVersion
    score: float


@dataclass(frozen=True, slots=True)
class ErasedMessages:
    """What erasing a person took from the message index: how many vectors, and the places of
    their messages (text already blank), whose neighbours need new context."""

    vectors: int
    messages: tuple[MessageVersion, ...]


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One line of the append-only audit log: ids and hashes, never message text."""

    event: str
    actor: str
    reason: str
    at: datetime
    workspace: str
    channel: str
    fact_ids: tuple[str, ...]
    content_hashes: tuple[str, ...] = ()
    details: dict[str, object] = field(default_factory=dict)
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class Related:
    """A current fact as the resolver sees it: enough to judge, cheap to load."""

    fact_id: str
    statement: str
    valid_from: datetime
    fact_type: str
    origin: str


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """A pair of facts waiting for a person: a possible contradiction, or a conflict with a
    reviewer's own fact, or a rejected statement said again."""

    id: int
    workspace: str
    channel: str
    kind: str  # contested | manual_conflict | rejected_returns
    older_fact: str
    newer_fact: str
    reason: str
    status: str  # open | accepted | rejected
    opened_at: datetime
    closed_at: datetime | None = None
    reviewer: str | None = None
    decision: str | None = None


class ConcurrentChange(TeamloreError):
    """The version being replaced is no longer current: someone else changed the fact first."""


class FactBackend(Protocol):
    """Fact versions: raw reads for the gate above, and audited writes."""

    def _keyword(self, text: str, scope: Scope, view: ResolvedView, limit: int) -> list[RawHit]: ...

    # ``floor``: the least cosine a row found by meaning needs (``capabilities.relevance``).
    def _semantic(
        self, vector: np.ndarray, scope: Scope, view: ResolvedView, limit: int, floor: float = -1.0
    ) -> list[RawHit]: ...

    def _hybrid(
        self,
        text: str,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        floor: float = -1.0,
    ) -> list[RawHit]: ...

    def _list(self, scope: Scope, view: ResolvedView, limit: int) -> list[RawHit]: ...

    def _by_ids(self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView) -> list[RawHit]: ...

    # ``_by_ids`` of these facts and of the facts that superseded them, link by link, up to
    # ``steps`` links away (each link read from the version ``_by_ids`` gives): a replaced
    # value's chain to the current one in one call.
    def _following(
        self, fact_ids: Sequence[str], scope: Scope, view: ResolvedView, steps: int
    ) -> list[RawHit]: ...

    def _versions(self, fact_id: str, scope: Scope) -> list[Fact]: ...

    # The write path's own lookups (pipeline only; never exposed to readers).
    def current_version(self, fact_id: str) -> Fact | None: ...

    def current_by_hash(self, workspace: str, channel: str, content_hash: str) -> Fact | None: ...

    def current_citing(self, workspace: str, channel: str, message_id: str) -> list[Fact]: ...

    def current_citing_any(self, workspace: str, channel: str, message_ids: Sequence[str]) -> list[Fact]: ...

    def current_ids(self, workspace: str, channel: str) -> list[str]: ...

    def current_related(self, workspace: str, channel: str, text: str, limit: int) -> list[Related]: ...

    def current_near(
        self, workspace: str, channel: str, vector: np.ndarray, limit: int, window: int
    ) -> list[Related]: ...

    def write_version(
        self, new: Fact, replaces: Fact | None, audit: AuditEvent, embedding_key: str | None = None
    ) -> Fact: ...

    def erase_text(self, fact_ids: Sequence[str]) -> int: ...


class RemoteFactBackend(FactBackend, Protocol):
    """Facts kept on a server beside the SQLite file: its writes join the file's transactions
    through ``unit_of_work``, which undoes them when the transaction rolls back."""

    def unit_of_work(self, savepoint: bool = False) -> AbstractContextManager[None]: ...

    def write_ahead(self, log: Any) -> None:
        """Log each write's undo to ``log`` before the write (``stores.weaviate.journal``)."""
        ...

    def undo(self, step: dict[str, Any]) -> None:
        """Carry out an undo a dead process logged ahead of its write (its own or its message
        index's: the step names the collection)."""
        ...

    def close(self) -> None: ...


class MessageIndex(Protocol):
    """Every version of every message's text, searchable: raw queries for the gate above, and
    the pipeline's writes (a new text, a delete, an erasure). ``periods``: the periods the query
    names, whose messages rank higher (a ranking hint, never a filter)."""

    def _keyword(
        self, text: str, scope: Scope, view: ResolvedView, limit: int, periods: Sequence[Period] = ()
    ) -> list[RawMessageHit]: ...

    def _semantic(
        self,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]: ...

    def _hybrid(
        self,
        text: str,
        vector: np.ndarray,
        scope: Scope,
        view: ResolvedView,
        limit: int,
        periods: Sequence[Period] = (),
        floor: float = -1.0,
    ) -> list[RawMessageHit]: ...

    def put(self, message: Message, text: str, at: datetime, embedding_key: str | None) -> bool: ...

    def set_vector(
        self, workspace: str, channel: str, message_id: str, embedding_key: str | None
    ) -> None: ...

    # The pipeline's own lookups (never exposed to readers): neighbours in a conversation.
    def before(
        self, workspace: str, channel: str, message_id: str, thread_id: str | None, posted: datetime
    ) -> MessageVersion | None: ...

    def after(
        self, workspace: str, channel: str, message_id: str, thread_id: str | None, posted: datetime
    ) -> list[MessageVersion]: ...

    def withdraw(self, workspace: str, channel: str, message_id: str, at: datetime) -> None: ...

    def erase_author(self, workspace: str, author_id: str) -> ErasedMessages: ...


class MessageStore(Protocol):
    def put_channel(self, channel: Channel) -> None: ...

    def channels(self, workspace: str) -> list[Channel]: ...

    def get_message(self, workspace: str, channel: str, message_id: str) -> Message | None: ...

    def put_message(self, message: Message, recorded_at: datetime) -> None: ...

    def mark_deleted(self, workspace: str, channel: str, message_id: str, at: datetime) -> None: ...

    def sources(self, workspace: str, channel: str, message_ids: Sequence[str]) -> dict[str, Source]: ...

    def author_names(self, workspace: str) -> frozenset[str]: ...

    def live_messages(self, workspace: str, channel: str, after: str, limit: int) -> list[Message]: ...

    def live_between(self, workspace: str, channel: str, since: datetime, until: datetime) -> list[Message]:
        """Stored, not deleted messages of a channel posted in [since, until), in time order."""
        ...

    def thread(self, workspace: str, channel: str, thread_id: str, limit: int = 200) -> list[Message]: ...

    def by_permalink(self, workspace: str, channel: str, permalinks: Sequence[str]) -> dict[str, str]: ...

    def put_attachments(
        self, workspace: str, channel: str, message_id: str, attachments: Sequence[Attachment]
    ) -> None: ...

    def attachments(self, workspace: str, channel: str, message_id: str) -> list[Attachment]: ...

    # The live passages of the files a message shared (``Message.shared_in``): they go with it.
    def passages_of(self, workspace: str, channel: str, message_id: str) -> list[str]: ...

    # Raw: scope compiled in; read only through capabilities.media.search_media_references.
    def _media_references(
        self, scope: Scope, words: Sequence[str], kind: AttachmentKind | None, limit: int
    ) -> list[MediaReference]: ...

    # Erasure: (channel, message id) of every message a person wrote, and blanking them.
    def authored(self, workspace: str, author_id: str) -> list[tuple[str, str]]: ...

    def erase_author(self, workspace: str, author_id: str, at: datetime) -> None: ...

    # Erasure: the live replies in the thread a message opened (their statements may quote it).
    def replies(self, workspace: str, channel: str, thread_id: str) -> list[Message]: ...


class EventLedger(Protocol):
    """Idempotency keys of the events applied, written in the same transaction as their effects."""

    def seen(self, key: str) -> bool: ...

    def record(self, key: str, outcome: str, at: datetime) -> None: ...

    # Erasure: every key starting with one of these prefixes (a key holds a hash of the text).
    def forget(self, prefixes: Sequence[str]) -> int: ...


class AuditLog(Protocol):
    def append(self, event: AuditEvent) -> int: ...

    def events_for_fact(self, fact_id: str) -> list[AuditEvent]: ...

    def recent(
        self,
        workspace: str,
        channels: Iterable[str],
        since: datetime,
        limit: int,
        before: int | None = None,
        after: int | None = None,
    ) -> list[AuditEvent]: ...


class ReviewQueue(Protocol):
    def open(
        self,
        workspace: str,
        channel: str,
        kind: str,
        older_fact: str,
        newer_fact: str,
        reason: str,
        at: datetime,
    ) -> int: ...

    def items(self, scope: Scope, status: str = "open") -> list[ReviewItem]: ...

    def get(self, item_id: int) -> ReviewItem | None: ...

    def close(self, item_id: int, reviewer: str, decision: str, at: datetime) -> None: ...


class Tombstones(Protocol):
    def add(self, workspace: str, channel: str, content_hash: str, reason: str, at: datetime) -> None: ...

    def reason(self, workspace: str, channel: str, content_hash: str) -> str | None: ...

    # Erasure: the tombstones of erased statements go (their messages stay deleted).
    def forget(self, workspace: str, channel: str, content_hashes: Sequence[str]) -> None: ...


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where a channel's backfill stopped: the platform's own cursor, and whether it finished."""

    cursor: str
    done: bool
    fetched: int


class CheckpointStore(Protocol):
    def get(self, platform: str, workspace: str, channel: str) -> Checkpoint | None: ...

    def put(
        self, platform: str, workspace: str, channel: str, checkpoint: Checkpoint, at: datetime
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """An API token as stored: never the secret, only its SHA-256."""

    token_id: str
    name: str
    role: str  # reader | reviewer | admin
    workspace: str
    channels: tuple[str, ...]  # empty: every channel of the workspace
    secret_sha256: str
    created_at: datetime
    revoked_at: datetime | None = None


class TokenStore(Protocol):
    def add(self, record: TokenRecord) -> None: ...

    def get(self, token_id: str) -> TokenRecord | None: ...

    def all(self, workspace: str | None = None) -> list[TokenRecord]: ...

    def revoke(self, token_id: str, at: datetime) -> bool: ...


class ReplayGuard(Protocol):
    """Keys of signed pushes already accepted, kept for a while so a replay is refused."""

    def claim(self, keys: Iterable[str], at: datetime, forget_before: datetime) -> bool:
        """Remember every key; False (and nothing remembered) if any was seen already.
        Keys remembered before ``forget_before`` are dropped first."""
        ...


@dataclass(frozen=True, slots=True)
class Claim:
    """A dirty page taken for a rewrite under a lease: its pending facts as of the claim."""

    page_id: str
    token: str
    fact_ids: tuple[str, ...]
    max_seq: int


class DirtySet(Protocol):
    def mark(
        self, page_ids: Iterable[str], fact_ids: Iterable[str], now: datetime, window: timedelta
    ) -> None: ...

    def claim_due(self, now: datetime, lease: timedelta, limit: int = 100) -> list[Claim]: ...

    def complete(self, claim: Claim, now: datetime, window: timedelta) -> bool: ...

    def pending(self) -> list[tuple[str, datetime, int]]: ...


class StalePage(Exception):
    """Another writer saved this page first."""


class PageStore(Protocol):
    """Pages, their versions and the routing index (which facts sit in which section)."""

    def record_routes(self, fact_id: str, routes: Iterable[Route]) -> None: ...

    def page(self, page_id: str) -> PageRef | None: ...

    def pages(self, workspace: str, channels: Iterable[str]) -> list[tuple[PageRef, int]]: ...

    def sections_of(self, page_id: str) -> dict[str, tuple[str, int, list[str]]]: ...

    def sections_holding(self, page_id: str, fact_ids: Iterable[str]) -> set[str]: ...

    def current(self, page_id: str) -> PageVersion | None: ...

    def version(self, page_id: str, version: int) -> PageVersion | None: ...

    def save(self, version: PageVersion) -> None: ...

    def purge_facts(self, fact_ids: Iterable[str]) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class SpendRow:
    """What one role spent on one model: calls answered, calls failed, fallbacks taken, outputs
    (or parts of them) rejected by validation, answers served from the cache, and tokens."""

    role: str
    model: str
    calls: int = 0
    failures: int = 0
    fallbacks: int = 0
    rejected: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class BreakerRow:
    """A model role's circuit breaker as it last changed (``llm/breaker.py``)."""

    role: str
    state: str  # closed | open | half_open
    failures: int  # failed requests in a row
    changed_at: datetime
    retry_at: datetime | None = None  # open: when the next call may be the trial


class SpendLedger(Protocol):
    def record(self, row: SpendRow) -> None:
        """Add ``row``'s counts to the totals of its role and model."""
        ...

    def totals(self) -> list[SpendRow]: ...

    def set_breaker(self, row: BreakerRow) -> None:
        """Remember a role's breaker state (the latest change wins)."""
        ...

    def breakers(self) -> list[BreakerRow]: ...


class ModelCache(Protocol):
    """Validated model output, keyed by a hash of prompt version, model and content."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, role: str, model: str, value: str) -> None: ...

    # Erasure: model output may quote anyone, and its keys hash the prompts: all of it goes.
    def clear(self) -> int: ...


class FileStatus(StrEnum):
    """What reading one shared file came to (``teamlore.files``)."""

    EXTRACTED = "extracted"  # read whole: its passages are messages
    PARTIAL = "partial"  # read up to a limit (pages, passages, characters): the detail says which
    FAILED = "failed"  # fetching failed for now (unreachable, refused, rate-limited): re-index tries again
    UNREADABLE = "unreadable"  # fetched, but not readable (broken, a bomb, a lying name, a type not read)
    SKIPPED = "skipped"  # not fetched, and trying again will not change that (no link, too large)
    # An image or audio file no model was configured to read: kept by name; re-index reads it
    # once a model is.
    NAME_ONLY = "name-only"
    # A file an export carries, taken from it by an import that hands its events to the workers:
    # its bytes are kept; the worker that stores the message reads them from there.
    CARRIED = "carried"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One attachment of one message, as reading it left it."""

    workspace: str
    channel: str
    message_id: str
    position: int
    name: str
    sha256: str  # the blob's name; "" when the bytes were never fetched
    size: int | None
    status: FileStatus
    detail: str
    pages: int
    passages: int
    attempts: int
    at: datetime


class FileStore(Protocol):
    """The state of each shared file: in the SQLite file, or MongoDB in the server stack."""

    def put(self, record: FileRecord) -> None: ...

    def get(self, workspace: str, channel: str, message_id: str, position: int) -> FileRecord | None: ...

    def of_messages(self, workspace: str, messages: Sequence[tuple[str, str]]) -> list[FileRecord]: ...

    def with_status(
        self, workspace: str, channels: Sequence[str], statuses: Collection[FileStatus]
    ) -> list[FileRecord]:
        """The scope's records in any of ``statuses``, by channel, message and position."""
        ...

    def forget(
        self, workspace: str, messages: Sequence[tuple[str, str]], from_position: int = 0
    ) -> list[str]:
        """Drop the records of these (channel, message id)s (from that attachment position on);
        the blobs no record names any more."""
        ...

    def unreferenced(self, shas: Iterable[str]) -> list[str]:
        """Those of ``shas`` no record names."""
        ...


class BlobStore(Protocol):
    """File bytes by their sha256: a folder beside the SQLite file in the embedded default, MongoDB
    GridFS in the server stack (``stores.mongo.blobs``)."""

    def put(self, data: bytes) -> str: ...

    def get(self, sha256: str) -> bytes: ...

    def delete(self, shas: Iterable[str]) -> int: ...
