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


# A promise names its day without "by": "Priya will announce the new date tomorrow", "I'll send it
# on Friday". Only a sentence that promises (will, 'll, going to) is read this way.
_PROMISE = re.compile(
    r"\b(?:will|'ll|going to|gonna)\b.*?\b(?:on\s+|this\s+|next\s+)?"
    r"(?P<when>today|tonight|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.I,
)


def _relative_day(when: str, said_at: datetime) -> datetime | None:
    """The end of the day "today", "tomorrow", "end of week" or a weekday names, from said_at."""
    if when in ("eod", "today", "end of day", "end of the day"):
        return _end_of(said_at)
    if when == "tomorrow":
        return _end_of(said_at + timedelta(days=1))
    if when in ("eow", "end of week", "end of the week"):
        return _end_of(said_at + timedelta(days=(4 - said_at.weekday()) % 7))
    if when in _WEEKDAYS:
        ahead = (_WEEKDAYS[when] - said_at.weekday()) % 7 or 7
        return _end_of(said_at + timedelta(days=ahead))
    return None


def _end_of(day: datetime) -> datetime:
    return datetime.combine(day.date(), time(23, 59, 59), tzinfo=day.tzinfo)


def due_date(text: str, said_at: datetime) -> datetime | None:
    """The deadline a sentence names, or None."""
    match = _DUE.search(text) or _PROMISE.search(text)
    if match is None:
        return None
    relative = _relative_day(match.group("when").lower().replace("tonight", "today"), said_at)
    if relative is not None or match.re is _PROMISE:
        return relative
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


# ---- periods a question names ("on October 13, 2023", "in June"): search favours what was said then ----

_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_FIRST = re.compile(
    rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month>{_MONTH_NAMES})\.?,?\s+(?P<year>\d{{4}})\b", re.I
)
_MONTH_FIRST = re.compile(
    rf"\b(?P<month>{_MONTH_NAMES})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b", re.I
)
_ISO_DAY = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b(?P<month>{_MONTH_NAMES})\.?,?\s+(?P<year>\d{{4}})\b", re.I)
_IN_MONTH = re.compile(rf"\b(?:in|during|of|since)\s+(?P<month>{_MONTH_NAMES})\b", re.I)
# A named day reaches what was said from the day before to the day after (talk about a day
# happens around it); a month alone means that month in any of these recent years, and the two
# weeks after it (what was done in June is often told in early July).
_DAY_MARGIN = timedelta(days=1)
_MONTH_SPILL = timedelta(days=14)
_RECENT_YEARS = 5

Period = tuple[datetime, datetime]


def periods_named(text: str, now: datetime) -> tuple[Period, ...]:
    """The periods a question names, most precise kind first: days, then months of a year, then
    months of any recent year; empty when it names none."""
    days = [_day(m, now) for pattern in (_DAY_FIRST, _MONTH_FIRST, _ISO_DAY) for m in pattern.finditer(text)]
    found = [(d - _DAY_MARGIN, d + timedelta(days=1) + _DAY_MARGIN) for d in days if d is not None]
    if found:
        return tuple(found)
    months = [_month(m.group("month"), int(m.group("year")), now) for m in _MONTH_YEAR.finditer(text)]
    if any(months):
        return tuple(m for m in months if m is not None)
    recent: list[Period] = []
    for m in _IN_MONTH.finditer(text):
        for year in range(now.year - _RECENT_YEARS + 1, now.year + 1):
            period = _month(m.group("month"), year, now)
            if period is not None and period[0] <= now:
                recent.append((period[0], period[1] + _MONTH_SPILL))
    return tuple(recent)


def _day(match: re.Match[str], now: datetime) -> datetime | None:
    month = match.group("month")
    number = int(month) if month.isdigit() else _MONTHS.get(month.lower())
    try:
        return datetime(int(match.group("year")), number or 0, int(match.group("day")), tzinfo=now.tzinfo)
    except ValueError:
        return None


def _month(name: str, year: int, now: datetime) -> Period | None:
    number = _MONTHS.get(name.lower())
    if number is None or not 1 <= year <= 9998:
        return None
    start = datetime(year, number, 1, tzinfo=now.tzinfo)
    end = datetime(year + (number == 12), number % 12 + 1, 1, tzinfo=now.tzinfo)
    return start, end
