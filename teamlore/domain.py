"""The data model: message events in, facts with evidence and two time axes out, scopes for reads.

Input (``MessageEvent``) is validated with pydantic because it comes from outside; everything
after validation is a frozen dataclass, cheap to build and impossible to change by accident.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from teamlore.errors import InvalidEvent, InvalidInput, ScopeError
from teamlore.timeutil import SENTINEL, utc_now
from teamlore.untrusted import text_problem, time_problem


class EventKind(StrEnum):
    CREATED = "message.created"
    EDITED = "message.edited"
    DELETED = "message.deleted"


class Visibility(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"
    DM = "dm"


class FactStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    PROVISIONAL = "provisional"
    CONTESTED = "contested"


class FactType(StrEnum):
    DECISION = "decision"
    ACTION_ITEM = "action_item"
    STATUS = "status"
    SCHEDULE = "schedule"
    OWNERSHIP = "ownership"
    METRIC = "metric"
    DEFINITION = "definition"
    QUESTION = "question"
    ANSWER = "answer"
    ANNOUNCEMENT = "announcement"
    STATEMENT = "statement"


# What an id (platform, workspace, channel, message, thread) may be: what an event may carry is
# what a request may name, so one pattern serves both.
IDENTIFIER_MAX = 200
IDENTIFIER_PATTERN = r"^[^\s\x00-\x1f\x7f]+$"
Identifier = Annotated[str, Field(min_length=1, max_length=IDENTIFIER_MAX, pattern=IDENTIFIER_PATTERN)]
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def check_identifier(value: str, what: str) -> str:
    """``value`` if it can name something stored; else ``InvalidInput`` naming ``what`` (the
    value itself is not echoed: it may hold the very characters that make it bad)."""
    if len(value) > IDENTIFIER_MAX or not _IDENTIFIER.fullmatch(value):
        raise InvalidInput(
            f"{what}: an id is 1-{IDENTIFIER_MAX} characters without spaces or control characters"
        )
    return value


# The one field of an event that may span lines; every other string is a single line.
_MULTILINE = frozenset({"text"})
# Names are read word by word (a person's name in a sentence): stored without surrounding
# whitespace, so a name of spaces alone is no name ("").
_NAMES = frozenset({"author_name", "channel_name"})


def _refuse_unstorable(value: Any, field_name: str | None) -> Any:
    """Every string of an event passes ``untrusted.text_problem`` (surrogates, control characters)."""
    if not isinstance(value, str):
        return value
    if problem := text_problem(value, multiline=field_name in _MULTILINE):
        raise ValueError(problem)
    return value.strip() if field_name in _NAMES else value


class AttachmentKind(StrEnum):
    """A coarse type people search by ("the pdf", "that screenshot"); the mime type stays exact."""

    IMAGE = "image"
    VIDEO = "video"
    AUDIO = "audio"
    PDF = "pdf"
    DOCUMENT = "document"
    SPREADSHEET = "spreadsheet"
    PRESENTATION = "presentation"
    ARCHIVE = "archive"
    TEXT = "text"
    OTHER = "other"


_KIND_BY_EXTENSION = {
    **dict.fromkeys(("png", "jpg", "jpeg", "gif", "webp", "svg", "heic", "bmp"), AttachmentKind.IMAGE),
    **dict.fromkeys(("mp4", "mov", "webm", "mkv", "avi"), AttachmentKind.VIDEO),
    **dict.fromkeys(("mp3", "wav", "ogg", "m4a", "flac"), AttachmentKind.AUDIO),
    "pdf": AttachmentKind.PDF,
    **dict.fromkeys(("doc", "docx", "odt", "rtf", "pages"), AttachmentKind.DOCUMENT),
    **dict.fromkeys(("xls", "xlsx", "ods", "csv", "tsv", "numbers"), AttachmentKind.SPREADSHEET),
    **dict.fromkeys(("ppt", "pptx", "odp", "key"), AttachmentKind.PRESENTATION),
    **dict.fromkeys(("zip", "tar", "gz", "tgz", "7z", "rar", "bz2", "xz"), AttachmentKind.ARCHIVE),
    **dict.fromkeys(("txt", "md", "log", "json", "yaml", "yml", "xml", "html"), AttachmentKind.TEXT),
}
_KIND_BY_MIME = (
    ("image/", AttachmentKind.IMAGE),
    ("video/", AttachmentKind.VIDEO),
    ("audio/", AttachmentKind.AUDIO),
    ("application/pdf", AttachmentKind.PDF),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml", AttachmentKind.DOCUMENT),
    ("application/msword", AttachmentKind.DOCUMENT),
    ("application/vnd.openxmlformats-officedocument.spreadsheetml", AttachmentKind.SPREADSHEET),
    ("application/vnd.ms-excel", AttachmentKind.SPREADSHEET),
    ("text/csv", AttachmentKind.SPREADSHEET),
    ("application/vnd.openxmlformats-officedocument.presentationml", AttachmentKind.PRESENTATION),
    ("application/vnd.ms-powerpoint", AttachmentKind.PRESENTATION),
    ("application/zip", AttachmentKind.ARCHIVE),
    ("application/gzip", AttachmentKind.ARCHIVE),
    ("application/x-tar", AttachmentKind.ARCHIVE),
    ("text/", AttachmentKind.TEXT),
)


def attachment_kind(mime_type: str, name: str) -> AttachmentKind:
    """The coarse kind: from the mime type when it says, else from the file name's extension."""
    mime = mime_type.strip().lower()
    for prefix, kind in _KIND_BY_MIME:
        if mime.startswith(prefix):
            return kind
    extension = name.rpartition(".")[2].lower() if "." in name else ""
    return _KIND_BY_EXTENSION.get(extension, AttachmentKind.OTHER)


class Attachment(BaseModel):
    """A file shared with a message: recorded and searchable by name and type; content not read."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field(min_length=1, max_length=500)
    mime_type: str = Field("", max_length=200)
    # Bytes; None when the platform does not say. At most an int64, the widest every store keeps.
    size: int | None = Field(None, ge=0, le=2**63 - 1)
    url: str = Field("", max_length=2000)
    # Where the bytes can be fetched (Slack's ``url_private``: it needs the bot token); empty when
    # the platform gave only a link for people. Only a file with one is read (teamlore/files/).
    download_url: str = Field("", max_length=2000)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        return _refuse_unstorable(value, info.field_name)

    @property
    def kind(self) -> AttachmentKind:
        return attachment_kind(self.mime_type, self.name)


class MessageEvent(BaseModel):
    """One line of the normalized events file (see DESIGN.md, "Contracts")."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: EventKind
    platform: Identifier
    workspace: Identifier
    channel: Identifier
    channel_name: str = Field("", max_length=200)
    channel_visibility: Visibility = Visibility.PUBLIC
    message_id: Identifier
    thread_id: Identifier | None = None
    author_id: str = Field("", max_length=200)
    author_name: str = Field("", max_length=200)
    ts: AwareDatetime
    text: str = ""
    permalink: str = Field("", max_length=2000)
    # Optional, so events files written before attachments existed stay valid. On an edit, an
    # empty list keeps the attachments already stored (most platforms resend them anyway).
    attachments: tuple[Attachment, ...] = Field((), max_length=100)
    # Set by Teamlore on a passage of a shared file (``teamlore.files``): the message that shared
    # it, and which file and where in it ("report.pdf, p. 3"). A message's own events leave them.
    shared_in: Identifier | None = None
    file_ref: str = Field("", max_length=600)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        return _refuse_unstorable(value, info.field_name)

    @field_validator("ts")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        if problem := time_problem(value):  # before the conversion, which could overflow
            raise ValueError(problem)
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _text_fits(self, info: Any) -> MessageEvent:
        limit = (info.context or {}).get("max_chars")
        if limit is not None and len(self.text) > limit:
            raise ValueError(
                f"text is {len(self.text):,} characters; the limit is {limit:,} (TEAMLORE_MAX_MESSAGE_CHARS)"
            )
        return self

    @property
    def idempotency_key(self) -> str:
        """Names this event and nothing else: platform, workspace, channel, message id and edit
        version. The edit version is the kind, the time the platform gave this version and a hash
        of its text, so a re-delivery has the same key and an edit (or an export re-imported
        after an edit) a new one."""
        version = (
            "deleted"
            if self.kind is EventKind.DELETED
            else (f"{self.kind.value}@{self.ts.isoformat()}#{message_hash(self.text)[:16]}")
        )
        return "\x1f".join((self.platform, self.workspace, self.channel, self.message_id, version))

    @property
    def thread_key(self) -> str | None:
        """The thread this message belongs to; a thread's parent is its own key."""
        return self.thread_id


def parse_event(data: Mapping[str, Any], max_chars: int) -> MessageEvent:
    """Validate one event; raise ``InvalidEvent`` with a one-line reason."""
    if not isinstance(data, Mapping):
        raise InvalidEvent(f"an event must be a JSON object, got {type(data).__name__}")
    try:
        return MessageEvent.model_validate(data, context={"max_chars": max_chars})
    except ValidationError as exc:
        raise InvalidEvent(_named(data) + _one_line(exc)) from None


def _named(data: Mapping[str, Any]) -> str:
    """ "message ID: " when the event names a printable id, so a refusal says which message it was."""
    mid = data.get("message_id")
    if isinstance(mid, str) and 0 < len(mid) <= 200 and mid.isprintable() and " " not in mid:
        return f"message {mid}: "
    return ""


def _one_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "event"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "enum":
            message = f"must be one of {err['ctx']['expected']}"
        parts.append(f"{where}: {message}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class Message:
    """A raw message as stored: the source of truth that facts cite and re-indexing reads."""

    platform: str
    workspace: str
    channel: str
    message_id: str
    thread_id: str | None
    author_id: str
    author_name: str
    ts: datetime
    text: str
    permalink: str
    content_hash: str
    edited_at: datetime | None = None
    deleted_at: datetime | None = None
    # A passage of a file shared in chat: the message that shared it and "report.pdf, p. 3".
    shared_in: str | None = None
    file_ref: str = ""

    def as_event(
        self, kind: EventKind, channel: Channel | None = None, attachments: Sequence[Attachment] = ()
    ) -> MessageEvent:
        """The event that would bring this message (its channel's name and visibility, when
        given; its files) to the pipeline again: re-index, reading its files again."""
        return MessageEvent(
            kind=kind,
            platform=self.platform,
            workspace=self.workspace,
            channel=self.channel,
            channel_name=channel.name if channel else "",
            channel_visibility=channel.visibility if channel else Visibility.PUBLIC,
            message_id=self.message_id,
            thread_id=self.thread_id,
            author_id=self.author_id,
            author_name=self.author_name,
            ts=self.ts,
            text=self.text,
            permalink=self.permalink,
            attachments=tuple(attachments),
        )


# A conversation is a thread (its opening message, then its replies in time order) or a channel's
# top-level messages, split where nobody wrote for this long (a pause of a working afternoon; a
# thread stays one conversation however long it runs). Search ranks a message with its
# neighbours, and embeds it after the message before it.
CONVERSATION_GAP = timedelta(hours=4)


@dataclass(frozen=True, slots=True)
class MessageVersion:
    """A message's text as the search index held it over an interval of transaction time.

    An edit closes one version and opens the next, so a read "as known at K" finds the text the
    message had then. ``posted_at`` is the message time: a read "as of T" sees what was posted by T.
    """

    workspace: str
    channel: str
    message_id: str
    version: int
    thread_id: str | None
    author_id: str
    author_name: str
    text: str
    posted_at: datetime
    recorded_from: datetime
    recorded_to: datetime = SENTINEL


@dataclass(frozen=True, slots=True)
class MediaReference:
    """An attachment as a search finds it: the file, and the message that shared it."""

    workspace: str
    channel: str
    message_id: str
    thread_id: str | None
    author_name: str
    ts: datetime
    permalink: str
    name: str
    mime_type: str
    kind: AttachmentKind
    size: int | None
    url: str
    position: int = 0  # among the message's attachments
    # What reading the file came to (``teamlore.files``): "" when it was never tried.
    status: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Channel:
    workspace: str
    channel: str
    name: str
    visibility: Visibility
    platform: str


@dataclass(frozen=True, slots=True)
class Scope:
    """What a read may see: one workspace and a non-empty set of its channels."""

    workspace: str
    channels: frozenset[str]

    def __init__(self, workspace: str, channels: Iterable[str]) -> None:
        chosen = frozenset(c.strip() for c in ([channels] if isinstance(channels, str) else channels))
        if not workspace or not workspace.strip():
            raise ScopeError("a read needs a workspace (--workspace)")
        if not chosen or "" in chosen:
            raise ScopeError("a read needs at least one channel (--channel)")
        object.__setattr__(self, "workspace", workspace.strip())
        object.__setattr__(self, "channels", chosen)

    def allows(self, workspace: str, channel: str) -> bool:
        return workspace == self.workspace and channel in self.channels


@dataclass(frozen=True, slots=True)
class ReadView:
    """Which moment a read looks at, on both time axes.

    ``valid_at``: the moment in the world ("what was true on 1 May"); ``known_at``: the moment in
    the store ("what did we believe on 1 May"). ``None`` means the clock's now at read time.
    ``include_history`` returns retired facts (superseded, retracted, provisional) too, with each
    fact's version as the store held it at ``known_at``, whatever its valid interval.
    """

    valid_at: datetime | None = None
    known_at: datetime | None = None
    include_history: bool = False

    def __post_init__(self) -> None:
        for name in ("valid_at", "known_at"):
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is None:
                raise InvalidInput(f"{name} needs a time zone")

    def resolved(self, now: datetime | None = None) -> ResolvedView:
        """This view with each moment left None set to ``now`` (the clock, when not given)."""
        clock = now or utc_now()
        return ResolvedView(
            valid_at=self.valid_at or clock,
            known_at=self.known_at or clock,
            include_history=self.include_history,
        )


@dataclass(frozen=True, slots=True)
class ResolvedView:
    """A ReadView with both moments fixed; what raw queries and the gate receive."""

    valid_at: datetime
    known_at: datetime
    include_history: bool


@dataclass(frozen=True, slots=True)
class CandidateFact:
    """A statement an extractor proposes, before resolution against what the store holds."""

    statement: str
    fact_type: FactType
    entities: tuple[str, ...]
    topic: str
    importance: float
    confidence: float
    valid_from: datetime
    due_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    """One version of a fact. Versions are never changed; a change closes one and writes another."""

    fact_id: str
    version: int
    workspace: str
    channel: str
    thread_id: str | None
    statement: str
    content_hash: str
    fact_type: FactType
    entities: tuple[str, ...]
    topic: str
    importance: float
    confidence: float
    status: FactStatus
    evidence: tuple[str, ...]
    valid_from: datetime
    valid_to: datetime = SENTINEL
    recorded_from: datetime = field(default_factory=utc_now)
    recorded_to: datetime = SENTINEL
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    origin: str = "extracted"  # or "manual": added or corrected by a reviewer
    due_at: datetime | None = None  # a deadline: passing it never retires the fact

    @property
    def contested(self) -> bool:
        return self.status is FactStatus.CONTESTED


@dataclass(frozen=True, slots=True)
class Source:
    """A message a fact cites, as shown to readers."""

    message_id: str
    author_id: str
    author_name: str
    ts: datetime
    permalink: str
    deleted_at: datetime | None
    # A passage of a shared file: "report.pdf, p. 3", and the message that shared it.
    file_ref: str = ""
    shared_in: str | None = None


_SPACES = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


def normalize_statement(text: str) -> str:
    """The form two statements are compared in: case, accents of width, punctuation, spacing."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACES.sub(" ", _PUNCT.sub(" ", folded)).strip()


def content_hash(text: str) -> str:
    """A statement's identity: equal for two wordings ``normalize_statement`` makes the same."""
    return hashlib.sha256(normalize_statement(text).encode()).hexdigest()[:32]


def message_hash(text: str) -> str:
    """A message text's hash, exact: any edit changes it."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]
