"""The rules for input from outside, in one place: JSON, text and message times.

Every path that takes events (the events file, each export reader, the signed push, the live
connectors, the worker task) parses JSON with ``load_json`` and validates each event through
``MessageEvent`` (``domain.parse_event``), which applies ``text_problem`` to every string and
``time_problem`` to the message time. A refusal is an ``InvalidInput`` with a one-line reason that
never quotes the offending text (it may hold what cannot be printed).

- JSON: nesting deeper than Python's recursion limit, an integer of more than ``MAX_INT_DIGITS``
  digits, a number that is not finite (``1e999``, ``NaN``, ``Infinity``), bytes that are not UTF-8.
- Text: a lone surrogate (``"\\ud800"`` is valid JSON but cannot be stored as UTF-8) anywhere;
  control characters other than tab, newline and carriage return in message text, and any control
  character in a single-line field (names, links, ids).
- Time: a message time before 1970-01-01T00:00:00Z or from the far-future sentinel
  (9999-12-31T00:00:00Z, the open end of every interval) on.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from teamlore.errors import InvalidInput
from teamlore.timeutil import SENTINEL

MAX_INT_DIGITS = 20  # every 64-bit integer fits; a longer one is never a real id, size or time
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = SENTINEL  # exclusive: the sentinel means "open", so no message may be dated at or after it

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_IN_LINE = re.compile("[\x00-\x1f\x7f]")


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise InvalidInput(f"a number with {len(digits):,} digits (at most {MAX_INT_DIGITS} are taken)")
    return int(digits)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidInput(f"the number {text[:30]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not a JSON number")


def load_json(raw: bytes | str) -> Any:
    """Parse one JSON document from outside; ``InvalidInput`` with a one-line reason otherwise."""
    try:
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not valid UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
        raise InvalidInput(f"not JSON: {exc.msg} at {where}") from None
    except RecursionError:
        raise InvalidInput("JSON nested too deeply to read") from None


def text_problem(value: str, *, multiline: bool) -> str | None:
    """Why this string cannot be stored, or None. Names the character's position, not the text."""
    if found := _SURROGATE.search(value):
        return f"holds a lone surrogate (U+{ord(found[0]):04X}) at character {found.start()}"
    pattern = _CONTROL_IN_TEXT if multiline else _CONTROL_IN_LINE
    if found := pattern.search(value):
        return f"holds a control character (U+{ord(found[0]):04X}) at character {found.start()}"
    return None


def time_problem(moment: datetime) -> str | None:
    """Why a message time is out of range, or None (the moment must be aware)."""
    if moment < EARLIEST or moment >= LATEST:
        return (
            f"{moment.isoformat()} is outside the accepted range 1970-01-01T00:00:00Z to 9999-12-30T23:59:59Z"
        )
    return None


def printable(text: str) -> str:
    """``text`` with lone surrogates escaped, safe to print or send as UTF-8 (file names can hold
    them: Python decodes undecodable bytes in a path to surrogates)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
