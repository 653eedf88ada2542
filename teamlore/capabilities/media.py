"""Search the files shared in chat (attachments) by name and type, inside a scope.

Attachments are not facts, so they do not pass the fact gate; the same two rules apply here: the
scope is compiled into the raw query and checked again on what comes back, and a deleted
message's files are gone (the store drops them with the message).
"""

from __future__ import annotations

import dataclasses

from teamlore.capabilities.limits import check_query
from teamlore.domain import AttachmentKind, MediaReference, Scope
from teamlore.errors import InvalidInput
from teamlore.stores.protocols import FileStore, MessageStore

MAX_LIMIT = 500


def search_media_references(
    messages: MessageStore,
    scope: Scope,
    query: str,
    kind: AttachmentKind | str | None = None,
    limit: int = 50,
    files: FileStore | None = None,
) -> list[MediaReference]:
    """Attachments in ``scope`` whose name or mime type holds every word of ``query``, newest
    first; ``kind`` narrows to one coarse type (image, pdf, spreadsheet, ...). With ``files``,
    each says what reading it came to (``status``, ``detail``)."""
    words = check_query(query, "the file-name query").split() if query.strip() else []
    chosen = _kind(kind)
    if not words and chosen is None:
        raise InvalidInput("give words to look for in file names, or a --kind, or both")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    found = messages._media_references(scope, words, chosen, limit)
    shown = [ref for ref in found if scope.allows(ref.workspace, ref.channel)]
    return shown if files is None else _with_status(shown, files, scope.workspace)


def _with_status(refs: list[MediaReference], files: FileStore, workspace: str) -> list[MediaReference]:
    keys = sorted({(r.channel, r.message_id) for r in refs})
    records = {(f.channel, f.message_id, f.position): f for f in files.of_messages(workspace, keys)}
    shown = []
    for ref in refs:
        record = records.get((ref.channel, ref.message_id, ref.position))
        if record is not None and record.name == ref.name:
            ref = dataclasses.replace(ref, status=record.status.value, detail=record.detail)
        shown.append(ref)
    return shown


def _kind(kind: AttachmentKind | str | None) -> AttachmentKind | None:
    if kind is None or isinstance(kind, AttachmentKind):
        return kind
    try:
        return AttachmentKind(kind.strip().lower())
    except ValueError:
        known = ", ".join(k.value for k in AttachmentKind)
        raise InvalidInput(f"unknown kind {kind!r}; use one of {known}") from None
