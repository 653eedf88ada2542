"""``teamlore serve``: the HTTP API, the signed push endpoint and the web wiki."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from teamlore.app import Teamlore
from teamlore.cli.support import DataDir, open_lore, out

Host = Annotated[str, typer.Option(help="Interface to listen on (0.0.0.0: every interface).")]
Port = Annotated[int, typer.Option(help="TCP port.")]


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(host: Host = "127.0.0.1", port: Port = 8000, data_dir: DataDir = None) -> int:
    """Serve the API (docs at /docs), the wiki (/wiki), /healthz and /metrics."""
    lore = open_lore(data_dir)
    out.print(f"Teamlore on http://{host}:{port}/wiki  (API docs: http://{host}:{port}/docs)", markup=False)
    run(lore, host, port)
    return 0


def run(lore: Teamlore, host: str, port: int) -> None:
    import uvicorn

    from teamlore.web import create_app

    # Loaded before the port opens, so the first request (and a readiness probe) finds them.
    started = time.monotonic()
    with out.status("Loading the search indexes ..."):
        held = lore.warm()
    out.print(f"Search indexes loaded: {held:,} rows in {time.monotonic() - started:.1f} s", markup=False)

    # The app decides whose forwarded headers to believe (TEAMLORE_TRUSTED_PROXIES), not uvicorn.
    uvicorn.run(create_app(lore), host=host, port=port, log_level="warning", proxy_headers=False)
