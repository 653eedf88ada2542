"""The normalized events file: JSON Lines, one ``MessageEvent`` a line (DESIGN.md, "Contracts")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from teamlore.connectors import ImportItem
from teamlore.domain import parse_event
from teamlore.errors import ExportError, InvalidInput


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def read_events_file(path: Path, max_chars: int) -> Iterator[ImportItem]:
    """Yield one item per non-blank line; a bad line becomes an error item, never an exception."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield ImportItem(where, error=InvalidInput(f"not valid UTF-8 at byte {exc.start}"))
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                yield ImportItem(where, error=InvalidInput(f"not JSON: {exc.msg} at column {exc.colno}"))
                continue
            try:
                yield ImportItem(where, event=parse_event(data, max_chars))
            except InvalidInput as exc:
                yield ImportItem(where, error=exc)
