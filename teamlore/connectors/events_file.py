"""The normalized events file: JSON Lines, one ``MessageEvent`` a line (DESIGN.md, "Contracts")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from teamlore.connectors import ImportItem
from teamlore.domain import parse_event
from teamlore.errors import ExportError, InvalidInput
from teamlore.untrusted import load_json

# How much of a file ``check_events_file`` reads to tell an events file from something else.
SNIFF_BYTES = 64 * 1024
SNIFF_LINES = 20


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def check_events_file(path: Path) -> None:
    """Refuse, in one line, a file that is not JSON Lines at all (binary data, or none of its first
    lines a JSON object), instead of one error per line of it."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
            whole = not handle.read(1)
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror}") from exc
    if (nul := head.find(b"\x00")) >= 0:
        raise ExportError(
            f"{path.name} is not an events file: binary data (a NUL byte at byte {nul}); "
            "give a JSON Lines events file or a supported export"
        )
    lines = head.splitlines()
    complete = [line for line in (lines if whole else lines[:-1]) if line.strip()][:SNIFF_LINES]
    reasons = [_object_problem(line) for line in complete]
    if complete and all(reasons):
        raise ExportError(
            f"{path.name} is not an events file: none of its first {len(complete)} line(s) is a JSON "
            f"object (line 1: {reasons[0]}); give a JSON Lines events file or a supported export"
        )


def _object_problem(line: bytes) -> str | None:
    try:
        data = load_json(line)
    except InvalidInput as exc:
        return str(exc)
    return None if isinstance(data, dict) else f"a JSON {type(data).__name__}, not an object"


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
                yield ImportItem(where, event=parse_event(load_json(raw), max_chars))
            except InvalidInput as exc:
                yield ImportItem(where, error=exc)
