"""Files shared in chat become messages: fetch, keep, read, and ingest their passages.

After a batch is ingested (``Teamlore.ingest``), each attachment with a download link is fetched
within the size limit (``files.fetch``), kept by its sha256 (``BlobStore``), read in a
subprocess (``files.sandbox``) and split into passages (``files.passages``), which are ingested
as messages of the message that shared the file, through the same pipeline. None of this runs
inside the batch's transaction, and no failure here undoes or blocks a message: a file that
cannot be fetched or read is recorded with its one line (``teamlore media``), and a fetch
failure is tried again by re-index (``retry_failed``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teamlore.domain import Attachment, Channel, EventKind, Message, MessageEvent
from teamlore.errors import (
    BackendUnavailable,
    FetchFailed,
    InvalidInput,
    MissingExtra,
    ModelOutputInvalid,
    ModelUnavailable,
    Unreadable,
)
from teamlore.files import carried
from teamlore.files.fetch import Fetcher
from teamlore.files.media import MediaReader, name_problem, sniff_media
from teamlore.files.passages import passage_events, passages
from teamlore.files.sandbox import ReadFile, ReadLimits, read_file
from teamlore.stores.protocols import BlobStore, FileRecord, FileStatus, FileStore
from teamlore.workers.pipeline import IngestResult, Outcome, PipelineDeps, ingest

log = logging.getLogger(__name__)

# A sharing message whose text was stored (or was already): its files are read.
_STORED = frozenset({Outcome.STORED, Outcome.NOOP, Outcome.EDITED, Outcome.UNCHANGED})
# Trying again would change nothing (a skip says so too: too large, gone, off its origins).
_SETTLED = frozenset({FileStatus.EXTRACTED, FileStatus.PARTIAL, FileStatus.UNREADABLE, FileStatus.SKIPPED})


class _NameOnly(Unreadable):
    """An image or audio file no configured model reads: kept by name until one does."""


# What a platform's files need to be fetched (``app.file_fetchers`` builds the fetchers).
_TOKENS = {
    "slack": "Slack bot token (TEAMLORE_SLACK_BOT_TOKEN, scope files:read)",
    "mattermost": "Mattermost server and bot token (TEAMLORE_MATTERMOST_URL, TEAMLORE_MATTERMOST_TOKEN)",
    "teams": "Teams app for Graph (TEAMLORE_TEAMS_APP_ID, _APP_PASSWORD, _TENANT_ID; Files.Read.All)",
}


@dataclass
class FileDeps:
    pipeline: PipelineDeps
    files: FileStore
    blobs: BlobStore
    fetchers: Mapping[str, Fetcher]  # platform -> how its file links are fetched
    limits: ReadLimits
    max_bytes: int
    max_passages: int
    max_chars: int  # a passage is a message: TEAMLORE_MAX_MESSAGE_CHARS
    media: MediaReader | None = None  # images and audio read by a model (None: by name only)
    # The files of the export being imported (``files.carried``); None: no export is.
    carried: Fetcher | None = None


def take_files(events: Sequence[MessageEvent], results: Sequence[IngestResult], deps: FileDeps) -> None:
    """Read the files of the events just ingested; forget those of messages just deleted."""
    for event, result in zip(events, results, strict=True):
        if event.shared_in is not None:
            continue  # a passage shares nothing
        if result.outcome is Outcome.DELETED:
            _forget(deps, event.workspace, [(event.channel, event.message_id)])
        elif result.outcome in _STORED and event.attachments:
            read_message_files(event, deps)


def read_message_files(event: MessageEvent, deps: FileDeps) -> list[FileRecord]:
    """Each attachment of ``event`` with a download link read (a file read before, or found
    unreadable, is left as recorded); passages of files the message no longer shares are deleted."""
    where = [(event.channel, event.message_id)]
    held = {r.sha256 for r in deps.files.of_messages(event.workspace, where)}
    records, kept = [], set()
    for position, attachment in enumerate(event.attachments):
        if not attachment.download_url or deps.max_bytes == 0:
            continue  # a link for people only, or files not read at all: nothing to try
        record, ids = _read_one(event, position, attachment, deps)
        records.append(record)
        kept |= ids
    gone = set(deps.pipeline.messages.passages_of(event.workspace, event.channel, event.message_id)) - kept
    if gone:
        deletes = [_passage_delete(event, pid) for pid in sorted(gone)]
        ingest(deletes, deps.pipeline)
    # Files the message no longer shares: their records, and the bytes nothing else names.
    dropped = deps.files.forget(event.workspace, where, from_position=len(event.attachments))
    deps.blobs.delete(set(dropped) | set(deps.files.unreferenced(held)))
    return records


def _read_one(
    event: MessageEvent, position: int, attachment: Attachment, deps: FileDeps
) -> tuple[FileRecord, set[str]]:
    held = deps.files.get(event.workspace, event.channel, event.message_id, position)
    if held is not None and _settled(held, deps) and held.name == attachment.name:
        current = deps.pipeline.messages.passages_of(event.workspace, event.channel, event.message_id)
        return held, {p for p in current if f"~f{held.sha256[:16]}~" in p}
    attempts = (held.attempts if held is not None else 0) + 1

    def record(status: FileStatus, detail: str, sha: str = "", pages: int = 0, count: int = 0) -> FileRecord:
        made = FileRecord(
            event.workspace,
            event.channel,
            event.message_id,
            position,
            attachment.name,
            sha,
            attachment.size,
            status,
            detail,
            pages,
            count,
            attempts,
            deps.pipeline.clock(),
        )
        deps.files.put(made)
        log.info("file %s of %s/%s: %s %s", attachment.name, event.channel, event.message_id, status, detail)
        return made

    fetcher = _fetcher(event.platform, attachment, held, deps)
    if isinstance(fetcher, str):
        return record(FileStatus.FAILED, fetcher), set()
    if attachment.size is not None and attachment.size > deps.max_bytes:
        detail = f"the file is {attachment.size:,} bytes; the limit is {deps.max_bytes:,}"
        detail += " (TEAMLORE_FILE_MAX_BYTES)"
        return record(FileStatus.SKIPPED, detail), set()
    try:
        data = fetcher.fetch(attachment.download_url, deps.max_bytes)
    except FetchFailed as exc:
        return record(FileStatus.FAILED if exc.retry else FileStatus.SKIPPED, f"not fetched: {exc}"), set()
    try:
        sha = deps.blobs.put(data)
    except BackendUnavailable as exc:
        return record(FileStatus.FAILED, f"not kept: {exc}"), set()
    try:
        read = _read_media(data, attachment.name, deps) or read_file(
            data, attachment.name, attachment.mime_type, deps.limits
        )
    except (ModelUnavailable, ModelOutputInvalid) as exc:  # read again by re-index
        return record(FileStatus.FAILED, f"not read: {_one_line(str(exc))}", sha), set()
    except _NameOnly as exc:
        return record(FileStatus.NAME_ONLY, str(exc), sha), set()
    except Unreadable as exc:
        return record(FileStatus.UNREADABLE, str(exc), sha), set()
    except MissingExtra as exc:  # read again by re-index once the extra is installed
        return record(FileStatus.FAILED, str(exc), sha), set()
    found, cut = passages(read.sections, deps.max_passages)
    try:
        derived = passage_events(event, attachment.name, sha, found, deps.max_chars)
    except InvalidInput as exc:  # a passage no message could be (a tiny TEAMLORE_MAX_MESSAGE_CHARS)
        return record(FileStatus.UNREADABLE, str(exc), sha), set()
    ingest(derived, deps.pipeline)
    notes = list(read.notes) + (
        [f"kept the first {deps.max_passages} passages (TEAMLORE_FILE_MAX_PASSAGES)"] if cut else []
    )
    status = FileStatus.PARTIAL if notes else FileStatus.EXTRACTED
    return record(status, _summary(read, len(found), notes), sha, read.pages, len(found)), {
        e.message_id for e in derived
    }


@dataclass(frozen=True)
class _Kept:
    """The bytes an import took from its export and kept (``FileStatus.CARRIED``)."""

    blobs: BlobStore
    sha256: str

    def fetch(self, url: str, max_bytes: int) -> bytes:
        try:
            return self.blobs.get(self.sha256)
        except BackendUnavailable as exc:
            raise FetchFailed(str(exc), retry=False) from exc


def stage_carried(events: Sequence[MessageEvent], export: Fetcher, deps: FileDeps) -> int:
    """For an import that hands its events to the workers (who do not have the export): take
    each file the export carries from it now, keep its bytes and record it as ``carried``, so
    the worker storing the message reads it from the blob store. Only the importer writes such a
    record, keyed by the message and position it belongs to: an event naming an ``export:`` link
    reaches no bytes otherwise. A file that cannot be taken is recorded as it failed. Returns
    how many were kept."""
    kept = 0
    for event in events:
        for position, attachment in enumerate(event.attachments):
            if attachment.download_url.startswith(carried.PREFIX) and deps.max_bytes:
                kept += _stage_one(event, position, attachment, export, deps)
    return kept


def _stage_one(
    event: MessageEvent, position: int, attachment: Attachment, export: Fetcher, deps: FileDeps
) -> bool:
    held = deps.files.get(event.workspace, event.channel, event.message_id, position)
    if held is not None and held.name == attachment.name and held.status is not FileStatus.FAILED:
        return False  # taken (or read) by an earlier import of the same export
    status, detail, sha = FileStatus.CARRIED, "taken from the export; read when its message is stored", ""
    try:
        sha = deps.blobs.put(export.fetch(attachment.download_url, deps.max_bytes))
    except FetchFailed as exc:
        status, detail = FileStatus.SKIPPED, f"not fetched: {exc}"
    except BackendUnavailable as exc:
        status, detail = FileStatus.FAILED, f"not kept: {exc}"
    made = FileRecord(
        event.workspace, event.channel, event.message_id, position, attachment.name, sha,
        attachment.size, status, detail, 0, 0, 0, deps.pipeline.clock(),
    )  # fmt: skip
    deps.files.put(made)
    return status is FileStatus.CARRIED


def _settled(held: FileRecord, deps: FileDeps) -> bool:
    """Read before, or found unreadable: a re-delivery leaves it as recorded. A file kept by name
    only is read again once a model can read it."""
    return held.status in _SETTLED or (held.status is FileStatus.NAME_ONLY and deps.media is None)


def _fetcher(platform: str, attachment: Attachment, held: FileRecord | None, deps: FileDeps) -> Fetcher | str:
    """What fetches the attachment: the export being imported for a file it carries (or the
    bytes an import took from it for the workers, ``stage_carried``), else the platform's
    fetcher; or why there is none."""
    if attachment.download_url.startswith(carried.PREFIX):
        if deps.carried is not None:
            return deps.carried
        if held is not None and held.status is FileStatus.CARRIED and held.name == attachment.name:
            return _Kept(deps.blobs, held.sha256)
        return (
            "not fetched: a file carried by an export is read while that export is imported (import it again)"
        )
    fetcher = deps.fetchers.get(platform)
    if fetcher is None:
        needed = _TOKENS.get(platform, f"a way to fetch {platform} files (not built yet)")
        return f"not fetched: no {needed}"
    return fetcher


def _read_media(data: bytes, name: str, deps: FileDeps) -> ReadFile | None:
    """An image or audio file read by its model when one is configured (without one: kept by
    name only, ``Unreadable``, nothing sent anywhere); None for any other file."""
    media = sniff_media(data)
    if media is None:
        return None
    problem = name_problem(name, media)
    if problem == "document":
        return None  # a name that lies about a document: the parser's refusal, as for any file
    if problem:
        raise Unreadable(problem)
    if deps.media is None or not deps.media.model_for(media):
        setting = "TEAMLORE_LLM_MODEL_VISION" if media.kind == "image" else "TEAMLORE_LLM_MODEL_TRANSCRIBE"
        raise _NameOnly(f"{media.kind} ({media.format}) is kept by name only: no model reads it ({setting})")
    if len(data) > deps.media.max_bytes:
        raise Unreadable(
            f"the {media.kind} is {len(data):,} bytes; the limit for the model is "
            f"{deps.media.max_bytes:,} (TEAMLORE_FILE_MEDIA_MAX_BYTES)"
        )
    text, notes = deps.media.read(media, data, name)
    if len(text) > deps.limits.max_chars:
        text = text[: deps.limits.max_chars]
        notes += (f"stopped at {deps.limits.max_chars:,} characters (TEAMLORE_FILE_MAX_CHARS)",)
    return ReadFile(media.kind, 0, (("", text),), notes)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def _summary(read: ReadFile, count: int, notes: list[str]) -> str:
    unit = {"xlsx": "sheet", "pptx": "slide"}.get(read.kind, "page")
    paged = f"{read.pages} {unit}{'s' * (read.pages != 1)}, " if read.pages else ""
    return f"{read.kind}: {paged}{count} passage{'s' * (count != 1)}" + "".join(f"; {n}" for n in notes)


def _passage_delete(event: MessageEvent, passage_id: str) -> MessageEvent:
    return event.model_copy(
        update={
            "kind": EventKind.DELETED,
            "message_id": passage_id,
            "text": "",
            "attachments": (),
            "shared_in": event.message_id,
        }
    )


def _forget(deps: FileDeps, workspace: str, messages: list[tuple[str, str]]) -> None:
    """A deleted message's files: their records go, and the bytes no other message shares."""
    deps.blobs.delete(deps.files.forget(workspace, messages))


def retry_failed(workspace: str, channels: Sequence[str], deps: FileDeps) -> list[FileRecord]:
    """Fetch and read again the files whose fetch failed, and, once a model reads images or
    audio, those kept by name only (re-index); what each came to now."""
    tried: list[FileRecord] = []
    seen: set[tuple[str, str]] = set()
    statuses = {FileStatus.FAILED} | ({FileStatus.NAME_ONLY} if deps.media is not None else set())
    for failed in deps.files.with_status(workspace, channels, statuses):
        if (failed.channel, failed.message_id) in seen:
            continue
        seen.add((failed.channel, failed.message_id))
        event = _sharing_event(workspace, failed.channel, failed.message_id, deps)
        if event is not None:
            tried += read_message_files(event, deps)
    return tried


def _sharing_event(workspace: str, channel: str, message_id: str, deps: FileDeps) -> MessageEvent | None:
    """The created event a stored (live) message would be, with its attachments."""
    messages = deps.pipeline.messages
    message = messages.get_message(workspace, channel, message_id)
    if message is None or message.deleted_at is not None:
        return None
    known = {c.channel: c for c in messages.channels(workspace)}
    return _event_of(message, known.get(channel), messages.attachments(workspace, channel, message_id))


def _event_of(message: Message, channel: Channel | None, attachments: list[Attachment]) -> MessageEvent:
    return MessageEvent(
        kind=EventKind.CREATED,
        platform=message.platform,
        workspace=message.workspace,
        channel=message.channel,
        channel_name=channel.name if channel else "",
        channel_visibility=channel.visibility if channel else "public",
        message_id=message.message_id,
        thread_id=message.thread_id,
        author_id=message.author_id,
        author_name=message.author_name,
        ts=message.ts,
        text=message.text,
        permalink=message.permalink,
        attachments=tuple(attachments),
    )
