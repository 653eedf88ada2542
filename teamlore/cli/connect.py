"""``teamlore connect PLATFORM``: run a platform's connector, or backfill channels and exit.

A platform is one line in ``PLATFORMS``: its name (also the name of the extra that installs its
library) and the module of its runner, imported only when asked for (so one platform's library
never slows or breaks another, and a missing one is a line naming the extra). A runner module has:

    listen(lore, say) -> None                       # runs until interrupted
    backfill(lore, channel, *, say, restart) -> BackfillReport
"""

from __future__ import annotations

import importlib
from typing import Annotated, Protocol

import typer

from teamlore.app import Teamlore
from teamlore.cli.support import DataDir, JsonFlag, emit_json, err, open_lore
from teamlore.connectors.backfill import BackfillReport
from teamlore.connectors.running import Say
from teamlore.errors import InvalidInput
from teamlore.extras import require

PLATFORMS: dict[str, str] = {
    "slack": "teamlore.connectors.slack.runner",
    "mattermost": "teamlore.connectors.mattermost.runner",
    "discord": "teamlore.connectors.discord.runner",
    "teams": "teamlore.connectors.teams.runner",
}


class Runner(Protocol):
    def listen(self, lore: Teamlore, say: Say) -> None: ...

    def backfill(
        self, lore: Teamlore, channel: str, *, say: Say, restart: bool = False
    ) -> BackfillReport: ...


def runner_for(platform: str) -> Runner:
    name = platform.strip().lower()
    module = PLATFORMS.get(name)
    if module is None:
        raise InvalidInput(f"unknown platform {platform!r}; use one of {', '.join(sorted(PLATFORMS))}")
    require(name)
    return importlib.import_module(module)


def register(app: typer.Typer) -> None:
    app.command("connect")(connect_command)


def connect_command(
    platform: Annotated[str, typer.Argument(help=f"One of: {', '.join(sorted(PLATFORMS))}.")],
    backfill: Annotated[
        list[str] | None,
        typer.Option("--backfill", help="Backfill this channel id (repeat), then exit instead of listening."),
    ] = None,
    restart: Annotated[bool, typer.Option(help="Backfill from the start, not from the checkpoint.")] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Capture a platform's messages live and answer questions in its channels; or backfill."""
    runner = runner_for(platform)
    lore = open_lore(data_dir)

    def say(line: str) -> None:
        err.print(line, markup=False)

    if not backfill:
        try:
            runner.listen(lore, say)
        except KeyboardInterrupt:
            say("stopped")
        return 0
    reports = {channel: runner.backfill(lore, channel, say=say, restart=restart) for channel in backfill}
    if as_json:
        emit_json(
            {
                channel: {
                    "done": r.done,
                    "pages": r.pages,
                    "fetched": r.fetched,
                    "total_fetched": r.total_fetched,
                    "rate_limited": r.rate_limited,
                }
                for channel, r in reports.items()
            }
        )
    return 0 if all(r.done for r in reports.values()) else 1
