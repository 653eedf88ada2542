"""Search the files shared in chat (attachments) by name and type, inside a scope.

Attachments are not facts, so they do not pass the fact gate; the same two rules apply here: the
scope is compiled into the raw query and checked again on what comes back, and a deleted
message's files are gone (the store drops them with the message).
"""

from __future__ import annotations

from teamlore.capabilities.limits import check_query
from teamlore.domain import AttachmentKind, MediaReference, Scope
from teamlore.errors import InvalidInput
from teamlore.stores.protocols import MessageStore

MAX_LIMIT = 500


def search_media_references(
    messages: MessageStore,
    scope: Scope,
    query: str,
    kind: AttachmentKind | str | None = None,
    limit: int = 50,
) -> list[MediaReference]:
    """Attachments in ``scope`` whose name or mime type holds every word of ``query``, newest
    first; ``kind`` narrows to one coarse type (image, pdf, spreadsheet, ...)."""
    words = check_query(query, "the file-name query").split() if query.strip() else []
    chosen = _kind(kind)
    if not words and chosen is None:
        raise InvalidInput("give words to look for in file names, or a --kind, or both")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    found = messages._media_references(scope, words, chosen, limit)
    return [ref for ref in found if scope.allows(ref.workspace, ref.channel)]


def _kind(kind: AttachmentKind | str | None) -> AttachmentKind | None:
    if kind is None or isinstance(kind, AttachmentKind):
        return kind
    try:
        return AttachmentKind(kind.strip().lower())
    except ValueError:
        known = ", ".join(k.value for k in AttachmentKind)
        raise InvalidInput(f"unknown kind {kind!r}; use one of {known}") from None
