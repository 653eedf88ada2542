"""``teamlore reindex``: extract again from the stored raw messages, with progress; an interrupted
run resumes where it stopped (a checkpoint per channel in the data dir, removed when done)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from teamlore.cli.support import Channels, DataDir, JsonFlag, Workspace, emit_json, err, open_lore, out
from teamlore.domain import Scope


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
    again to resume)."""
    from teamlore.workers.reindex import reindex_channel

    scope = Scope(workspace or "", channel or [])
    lore = open_lore(data_dir)
    data = {}
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} messages"))
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True, disable=as_json) as bar:
        for name in sorted(scope.channels):
            mark = _checkpoint(lore.settings.data_dir, scope.workspace, name)
            after = "" if restart or not mark.exists() else mark.read_text().strip()
            if after:
                err.print(f"{name}: resuming after message {after}", markup=False)
            task = bar.add_task(f"re-indexing {name}", total=None)
            report = reindex_channel(
                scope.workspace,
                name,
                lore.pipeline,
                progress=lambda n, task=task: bar.advance(task, n),
                after=after,
                checkpoint=lambda last, mark=mark: _save(mark, last),
            )
            mark.unlink(missing_ok=True)
            data[name] = {
                "messages": report.messages,
                "created": report.created,
                "retracted": report.retracted,
            }
    lore.wiki.flush(everything=True)
    if as_json:
        emit_json(data)
        return 0
    for name, r in data.items():
        out.print(
            f"{name}: {r['messages']} message(s) re-read, {r['created']} fact(s) added, "
            f"{r['retracted']} retracted",
            markup=False,
        )
    return 0


def _checkpoint(data_dir: Path, workspace: str, channel: str) -> Path:
    return data_dir / "reindex" / f"{quote(workspace, safe='')}--{quote(channel, safe='')}.cursor"


def _save(mark: Path, last: str) -> None:
    mark.parent.mkdir(parents=True, exist_ok=True)
    spare = mark.with_suffix(".tmp")
    spare.write_text(last)
    os.replace(spare, mark)
