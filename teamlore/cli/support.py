"""What every command shares: consoles, option types, opening the store, output."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.errors import InvalidInput
from teamlore.timeutil import parse_time

# Printed text is data (messages, names, "file:1234: ..."): no markup, no ":code:" emoji, no colours
# guessed from its content.
out = Console(highlight=False, soft_wrap=True, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Overrides TEAMLORE_DATA_DIR.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
Workspace = Annotated[str | None, typer.Option("--workspace", "-w", help="Workspace id.")]
Channels = Annotated[list[str] | None, typer.Option("--channel", "-c", help="Channel id; repeat.")]


def open_lore(data_dir: Path | None) -> Teamlore:
    settings = Settings() if data_dir is None else Settings(data_dir=data_dir)
    return Teamlore(settings)


def parse_option_time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise InvalidInput(f"{option}: {exc}") from None


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
