"""``teamlore reindex``: extract again from the stored raw messages, with progress; an interrupted
run resumes where it stopped (a checkpoint per channel in the store's checkpoint table, under the
source name "reindex"; a finished run is marked done, so the next one starts over)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from teamlore.app import Teamlore
from teamlore.cli.support import Channels, DataDir, JsonFlag, Workspace, emit_json, err, open_lore, out
from teamlore.domain import Scope
from teamlore.stores.protocols import Checkpoint
from teamlore.timeutil import utc_now

# The checkpoint store is keyed by source; re-indexing is a source of its own.
SOURCE = "reindex"


def register(app: typer.Typer) -> None:
    app.command("reindex")(reindex)


def reindex(
    workspace: Workspace = None,
    channel: Channels = None,
    restart: Annotated[bool, typer.Option("--restart", help="Ignore a checkpoint; start over.")] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Re-extract facts from the stored raw messages of the channels (safe to interrupt: run it
    again to resume), and fetch and read again the shared files whose fetch failed."""
    scope = Scope(workspace or "", channel or [])
    lore = open_lore(data_dir)
    data = {}
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} messages"))
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True, disable=as_json) as bar:
        for name in sorted(scope.channels):
            data[name] = _reindex_channel(lore, bar, scope.workspace, name, restart)
            # Shared files whose fetch failed are fetched and read again (docs/files.md).
            retried = lore.retry_files(Scope(scope.workspace, [name]))
            data[name]["files_retried"] = len(retried)
            data[name]["files_read"] = sum(1 for r in retried if r.status.value in ("extracted", "partial"))
    lore.wiki.flush(everything=True)
    if as_json:
        emit_json(data)
        return 0
    for name, r in data.items():
        tried = r["files_retried"]
        files = f", {r['files_read']} of {tried} failed file(s) read" if tried else ""
        out.print(
            f"{name}: {r['messages']} message(s) re-read, {r['created']} fact(s) added, "
            f"{r['retracted']} retracted{files}",
            markup=False,
        )
    return 0


def _reindex_channel(
    lore: Teamlore, bar: Progress, workspace: str, channel: str, restart: bool
) -> dict[str, int]:
    from teamlore.capabilities.holding import admin_holding
    from teamlore.capabilities.reindex import reindex_channel

    checkpoints = lore.stores.checkpoints
    saved = None if restart else checkpoints.get(SOURCE, workspace, channel)
    resume = saved if saved is not None and not saved.done else None
    if resume is not None:
        err.print(f"{channel}: resuming after message {resume.cursor}", markup=False)
    task = bar.add_task(f"re-indexing {channel}", total=None)
    read = resume.fetched if resume is not None else 0

    def advance(count: int) -> None:
        nonlocal read
        read += count
        bar.advance(task, count)

    def mark(last: str) -> None:  # after each committed batch
        checkpoints.put(SOURCE, workspace, channel, Checkpoint(last, False, read), utc_now())

    after = resume.cursor if resume is not None else ""
    with admin_holding(lore, [(workspace, channel)]):  # with Redis, no worker ingests it meanwhile
        report = reindex_channel(workspace, channel, lore.pipeline, advance, after, mark)
    checkpoints.put(SOURCE, workspace, channel, Checkpoint("", True, read), utc_now())
    return {"messages": report.messages, "created": report.created, "retracted": report.retracted}
