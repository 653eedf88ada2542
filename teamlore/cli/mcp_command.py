"""``teamlore mcp``: serve the read capabilities to agents over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from teamlore.cli.support import DataDir, err, open_lore
from teamlore.errors import InvalidInput, Unauthorized


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)


def mcp_command(
    transport: Annotated[
        Transport, typer.Option(help="stdio (one client, one token) or http.")
    ] = Transport.STDIO,
    host: Annotated[str, typer.Option(help="HTTP: address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTP: port to listen on.")] = 8765,
    data_dir: DataDir = None,
) -> int:
    """Serve facts, answers, pages and activity to agents over MCP, read-only. stdio reads with
    TEAMLORE_MCP_TOKEN; http takes a token per request (Authorization: Bearer) at /mcp."""
    # Imported here, not at the top: the MCP SDK is about half of the CLI's import time, and every
    # other command (a worker, `doctor --liveness` under a probe's timeout) would pay it.
    from teamlore.mcp_server import http_server, stdio_server

    lore = open_lore(data_dir)
    if transport is Transport.STDIO:
        token = lore.settings.mcp_token
        if not token:
            raise InvalidInput(
                "set TEAMLORE_MCP_TOKEN to an API token (create one with `teamlore tokens create`)"
            )
        try:
            lore.access.authenticate(token)
        except Unauthorized as exc:
            raise InvalidInput(f"TEAMLORE_MCP_TOKEN: {exc}") from None
        stdio_server(lore, token).run("stdio")
        return 0
    err.print(
        f"MCP over streamable HTTP at http://{host}:{port}/mcp (Authorization: Bearer <token>)", markup=False
    )
    lore.warm()  # the search indexes, before the port opens (``Teamlore.warm``)
    http_server(lore, f"http://{host}:{port}").run("streamable-http", host=host, port=port)
    return 0
