"""Wiki commands: list pages, show one (any version), rebuild a channel's pages."""

from __future__ import annotations

from typing import Annotated

import typer

from teamlore.capabilities import views
from teamlore.cli.support import Channels, DataDir, JsonFlag, Workspace, emit_json, open_lore, out
from teamlore.domain import Scope
from teamlore.errors import InvalidInput

pages_app = typer.Typer(no_args_is_help=True, help="The wiki: pages kept current from the facts.")


@pages_app.command("list")
def pages_list(
    workspace: Workspace = None, channel: Channels = None, data_dir: DataDir = None, as_json: JsonFlag = False
) -> int:
    """Pages of the given channels that have been written."""
    scope = Scope(workspace or "", channel or [])
    pages = [(e.page, e.version) for e in open_lore(data_dir).pages.list(scope)]
    if as_json:
        emit_json(
            [
                {
                    "page_id": p.page_id,
                    "slug": p.slug,
                    "title": p.title,
                    "kind": p.kind.value,
                    "channel": p.channel,
                    "version": v,
                }
                for p, v in pages
            ]
        )
    else:
        for page, version in pages:
            out.print(
                f"{page.channel}  {page.slug}  ({page.kind.value}, v{version})  {page.title}", markup=False
            )
    return 0


@pages_app.command("show")
def pages_show(
    slug: str,
    workspace: Workspace = None,
    channel: Channels = None,
    version: Annotated[int | None, typer.Option(help="An older version.")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="The page as Markdown.")] = True,
) -> int:
    """One page of one channel, as Markdown (or --json)."""
    scope = Scope(workspace or "", channel or [])
    if len(scope.channels) != 1:
        raise InvalidInput("a page belongs to one channel: give exactly one --channel")
    shown = open_lore(data_dir).pages.get(slug, scope, version)
    if as_json:
        emit_json(views.page_json(shown))
    else:
        out.print(shown.markdown, markup=False)
    return 0


@pages_app.command("rebuild")
def pages_rebuild(workspace: Workspace = None, channel: Channels = None, data_dir: DataDir = None) -> int:
    """Admin: re-route every fact of the channels and rewrite every page."""
    scope = Scope(workspace or "", channel or [])
    report = open_lore(data_dir).wiki.rebuild(scope)
    out.print(f"rebuilt: {report.pages_rewritten} page(s) changed, {report.writer_calls} writer call(s)")
    return 0
