"""``teamlore media``: find files shared in chat by name and type, inside a scope."""

from __future__ import annotations

from typing import Annotated

import typer

from teamlore.capabilities import views
from teamlore.cli.support import Channels, DataDir, JsonFlag, Workspace, emit_json, open_lore, out
from teamlore.domain import AttachmentKind, Scope
from teamlore.timeutil import iso


def register(app: typer.Typer) -> None:
    app.command("media")(media_command)


def media_command(
    query: Annotated[str, typer.Argument(help="Words of the file name or type; '' for any.")] = "",
    workspace: Workspace = None,
    channel: Channels = None,
    kind: Annotated[
        str | None, typer.Option(help=f"One of: {', '.join(k.value for k in AttachmentKind)}.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many files.")] = 50,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Files shared in the given channels (name, type, size, link, and what reading each came
    to: extracted, partial, failed, unreadable, skipped or name-only, with why), newest first."""
    scope = Scope(workspace or "", channel or [])
    found = open_lore(data_dir).search_media_references(scope, query, kind, limit)
    if as_json:
        emit_json([views.media_json(ref) for ref in found])
        return 0
    for ref in found:
        size = "" if ref.size is None else f", {ref.size:,} bytes"
        out.print(f"{ref.name}  ({ref.kind.value}, {ref.mime_type or 'type unknown'}{size})", markup=False)
        out.print(
            f"   #{ref.channel} {ref.author_name} {iso(ref.ts)} {ref.permalink or ref.url}",
            markup=False,
            style="dim",
        )
        if ref.status:
            out.print(f"   {ref.status}: {ref.detail}", markup=False, style="dim")
    out.print(f"{len(found)} file(s)", markup=False)
    return 0
