"""Connectors: platform events, export files and pushes, normalized to ``MessageEvent``.

Every reader yields ``ImportItem``s: a location a person can find (``file:line``) and either a
valid event or the one-line reason it was refused, so one bad line never costs the rest.
``import_item`` is how a reader turns one platform object into an item: the event is validated by
``parse_event``, and a platform object of a shape its normalizer did not expect (a number where a
dict was, a missing key) is refused the same way, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from teamlore.domain import MessageEvent
from teamlore.errors import InvalidInput

# What a normalizer raises reading a platform's JSON of an unexpected shape.
MALFORMED = (AttributeError, KeyError, IndexError, TypeError, ValueError, OverflowError, RecursionError)


@dataclass(frozen=True, slots=True)
class ImportItem:
    location: str
    event: MessageEvent | None = None
    error: InvalidInput | None = None


def import_item(location: str, build: Callable[[], MessageEvent | None]) -> ImportItem | None:
    """The item ``build`` makes: its event, the reason it was refused, or None (nothing to import,
    such as a system message)."""
    try:
        event = build()
    except InvalidInput as exc:
        return ImportItem(location, error=exc)
    except MALFORMED as exc:
        return ImportItem(location, error=malformed(exc))
    return None if event is None else ImportItem(location, event=event)


def malformed(exc: BaseException) -> InvalidInput:
    """A one-line refusal for a platform object of the wrong shape; the exception's own text is
    not quoted (it may hold the object's content)."""
    return InvalidInput(f"malformed message: its fields have unexpected types ({type(exc).__name__})")


__all__ = ["MALFORMED", "ImportItem", "import_item", "malformed"]
