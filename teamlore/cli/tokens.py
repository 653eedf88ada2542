"""Admin commands for API tokens (HTTP API, web wiki, MCP)."""

from __future__ import annotations

from typing import Annotated

import typer

from teamlore.capabilities import views
from teamlore.capabilities.access import Role
from teamlore.cli.support import Channels, DataDir, JsonFlag, Workspace, emit_json, open_lore, out
from teamlore.errors import InvalidInput

tokens_app = typer.Typer(no_args_is_help=True, help="API tokens: a role and the channels they may read.")


@tokens_app.command("create")
def tokens_create(
    name: Annotated[str, typer.Option("--name", help="Who or what uses the token.")] = "",
    role: Annotated[str, typer.Option(help="reader, reviewer or admin.")] = "reader",
    workspace: Workspace = None,
    channel: Channels = None,
    all_channels: Annotated[
        bool, typer.Option("--all-channels", help="Every channel of the workspace, present and future.")
    ] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Create a token; the secret is printed once and stored only as a hash."""
    if all_channels == bool(channel):
        raise InvalidInput("give --channel (repeat for several) or --all-channels, not both or neither")
    record, secret = open_lore(data_dir).access.create(
        name, Role.parse(role), workspace or "", None if all_channels else channel
    )
    if as_json:
        emit_json(
            {
                "token_id": record.token_id,
                "token": secret,
                "role": record.role,
                "workspace": record.workspace,
                "channels": list(record.channels) or "all",
            }
        )
        return 0
    out.print(secret, markup=False)
    channels = ", ".join(record.channels) or "every channel"
    out.print(
        f"token {record.token_id} ({record.role}) for {record.workspace}: {channels}. "
        "Shown once; store it now.",
        markup=False,
        style="dim",
    )
    return 0


@tokens_app.command("list")
def tokens_list(workspace: Workspace = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> int:
    """Tokens (never their secrets)."""
    records = open_lore(data_dir).access.list(workspace)
    if as_json:
        emit_json([views.token_json(r) for r in records])
        return 0
    for r in records:
        state = "revoked" if r.revoked_at else "live"
        out.print(
            f"{r.token_id} {r.name} {r.role} {r.workspace} {','.join(r.channels) or 'all channels'} {state}",
            markup=False,
        )
    if not records:
        out.print("no tokens")
    return 0


@tokens_app.command("revoke")
def tokens_revoke(token_id: str, data_dir: DataDir = None) -> int:
    """Revoke a token at once."""
    open_lore(data_dir).access.revoke(token_id)
    out.print(f"token {token_id} revoked", markup=False)
    return 0
