"""Import an events file or a platform export: validate per item, ingest in batches, summarize."""

from __future__ import annotations

import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from teamlore.connectors import ImportItem
from teamlore.connectors.events_file import check_events_file, count_lines, read_events_file
from teamlore.errors import ExportError
from teamlore.files.carried import CarriedFiles
from teamlore.untrusted import printable
from teamlore.workers.pipeline import IngestResult, Outcome, PipelineDeps, ingest
from teamlore.workers.shared_files import FileDeps, take_files

BATCH_SIZE = 256
MAX_ERRORS_KEPT = 1_000


@dataclass
class ImportSummary:
    taken: int = 0
    skipped: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    facts_created: int = 0
    evidence_added: int = 0
    retracted: int = 0
    superseded: int = 0
    pages_rewritten: int = 0
    extraction_fallbacks: int = 0  # messages the heuristic extractor took over from the model
    errors: list[str] = field(default_factory=list)  # the first MAX_ERRORS_KEPT
    on_skip: Callable[[str], None] | None = None  # told of every refusal as it happens

    def note_error(self, location: str, reason: str) -> None:
        self.skipped += 1
        line = printable(f"{location}: {reason}")
        if self.on_skip is not None:
            self.on_skip(line)
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(line)

    def absorb(self, location: str, result: IngestResult) -> None:
        if result.outcome is Outcome.FAILED:
            self.note_error(location, result.error or "failed")
            return
        self.taken += 1
        self.outcomes[result.outcome.value] += 1
        self.facts_created += len(result.created)
        self.evidence_added += len(result.evidence_added)
        self.retracted += len(result.retracted)
        self.superseded += len(result.superseded)
        self.extraction_fallbacks += result.extraction_fallback is not None


@dataclass(frozen=True, slots=True)
class Source:
    """An import source: its items, and how many there will be (for a progress bar)."""

    kind: str
    items: Iterator[ImportItem]
    total: int
    carried: CarriedFiles | None = None  # the files the export carries as bytes, if it can


def open_source(path: Path, max_chars: int, workspace: str | None = None) -> Source:
    """The items at ``path``: the first platform export it reads as, else an events file."""
    from teamlore.connectors import slack_export
    from teamlore.connectors.discord import export as discord_export
    from teamlore.connectors.mattermost import bulk_export as mattermost_export
    from teamlore.connectors.teams import export as teams_export

    if not path.exists():
        raise ExportError(f"{path} does not exist")
    _refuse_unreadable_zip(path)
    if slack_export.is_slack_export(path):
        return Source(
            "slack export",
            slack_export.read_slack_export(path, max_chars, workspace),
            slack_export.count_slack_messages(path),
        )
    if discord_export.is_discord_export(path):
        return Source(
            "DiscordChatExporter JSON",
            discord_export.read_discord_export(path, max_chars),
            discord_export.count_discord_messages(path),
            CarriedFiles(path if path.is_dir() else path.parent),  # media saved beside the JSON
        )
    if teams_export.is_teams_export(path):
        return Source(
            "Teams channel messages (Graph JSON)",
            teams_export.read_teams_export(path, max_chars, workspace),
            teams_export.count_teams_messages(path),
        )
    if mattermost_export.is_mattermost_export(path):
        return Source(
            "mattermost export",
            mattermost_export.read_mattermost_export(path, max_chars, workspace),
            mattermost_export.count_mattermost_posts(path),
            CarriedFiles(path if zipfile.is_zipfile(path) else path.parent),  # its data/ folder
        )
    if path.is_file() and not zipfile.is_zipfile(path):
        check_events_file(path)
        return Source("events file", read_events_file(path, max_chars), count_lines(path))
    raise ExportError(f"{path} is {_NONE_OF_THEM}")


_NONE_OF_THEM = (
    "neither an events file (JSON Lines), a Slack export (a zip or folder with channels.json), a "
    "Mattermost bulk export (JSON Lines or its zip), a DiscordChatExporter JSON file nor a Graph "
    "channel-messages JSON file"
)
# What every zip file opens with: a local file header, or the end record of an empty archive.
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _refuse_unreadable_zip(path: Path) -> None:
    """A file that opens like a zip but cannot be read as one (a truncated download) gets one line,
    not a pass through every other format that ends in an error per line of binary data."""
    if not path.is_file():
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror}") from exc
    if head in _ZIP_MAGIC and not zipfile.is_zipfile(path):
        raise ExportError(
            f"{path.name} is not a readable zip (truncated or damaged?): re-download the export"
        )


def import_items(
    items: Iterable[ImportItem],
    deps: PipelineDeps,
    progress: Callable[[int], None] | None = None,
    on_skip: Callable[[str], None] | None = None,
    files: FileDeps | None = None,
) -> ImportSummary:
    """Ingest the items in batches; an item refused while reading is counted and reported, not
    ingested. With ``files``, the files each batch shared are fetched and read after it."""
    summary = ImportSummary(on_skip=on_skip)
    batch: list[ImportItem] = []

    def flush() -> None:
        events = [item.event for item in batch if item.event is not None]
        results = ingest(events, deps)
        if files is not None:
            take_files(events, results, files)
        for item, result in zip(batch, results, strict=True):
            summary.absorb(item.location, result)
        if progress:
            progress(len(batch))
        batch.clear()

    for item in items:
        if item.error is not None:
            summary.note_error(item.location, str(item.error))
            if progress:
                progress(1)
            continue
        batch.append(item)
        if len(batch) >= BATCH_SIZE:
            flush()
    if batch:
        flush()
    return summary
