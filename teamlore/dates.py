"""Deadlines in chat text ("by Friday", "due March 3", "by EOD"), resolved against the message time.

Pure functions; a deadline is the end of the named day in UTC. A fact with a deadline is never
retired by the clock: reads only mark it past due.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_WEEKDAYS = {
    d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
}
_DUE = re.compile(
    r"\b(?:by|due(?: on| by)?|deadline(?: is)?|before)\s+"
    r"(?:(?:next|this)\s+)?(?P<when>eod|eow|end of (?:the )?(?:day|week)|today|tomorrow|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"(?P<month>[a-z]{3,9})\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?|"
    r"(?P<iso>\d{4}-\d{2}-\d{2}))\b",
    re.I,
)


def _end_of(day: datetime) -> datetime:
    return datetime.combine(day.date(), time(23, 59, 59), tzinfo=day.tzinfo)


def due_date(text: str, said_at: datetime) -> datetime | None:
    """The deadline a sentence names, or None."""
    match = _DUE.search(text)
    if match is None:
        return None
    when = match.group("when").lower()
    if when in ("eod", "today", "end of day", "end of the day"):
        return _end_of(said_at)
    if when == "tomorrow":
        return _end_of(said_at + timedelta(days=1))
    if when in ("eow", "end of week", "end of the week"):
        return _end_of(said_at + timedelta(days=(4 - said_at.weekday()) % 7))
    if when in _WEEKDAYS:
        ahead = (_WEEKDAYS[when] - said_at.weekday()) % 7 or 7
        return _end_of(said_at + timedelta(days=ahead))
    if match.group("iso"):
        try:
            return _end_of(datetime.fromisoformat(match.group("iso")).replace(tzinfo=said_at.tzinfo))
        except ValueError:
            return None
    month = _MONTHS.get(match.group("month").lower())
    if month is None:
        return None
    for year in (said_at.year, said_at.year + 1):
        try:
            day = said_at.replace(year=year, month=month, day=int(match.group("day")))
        except ValueError:
            return None
        if _end_of(day) >= said_at:
            return _end_of(day)
    return None
