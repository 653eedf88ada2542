"""Files an export carries as bytes: DiscordChatExporter's media saved beside its JSON
(``--media``), a Mattermost bulk export's ``data/`` attachments (in its zip, or beside its
``.jsonl``).

An export reader gives such an attachment the link ``export:<path inside the export>``
(``carried_link``); the import that opened the export reads it through ``CarriedFiles``, which
serves only paths inside that export (no ``..``, no absolute path, no link out of its folder) and
no more than the size limit. Nothing else can read such a link: a live event or an events file
naming one gets no bytes (``shared_files``), so a link can never reach a file on this machine
outside the export being imported.
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from teamlore.errors import FetchFailed

PREFIX = "export:"


def carried_link(path: str) -> str:
    """The link of a file at ``path`` (relative, ``/``-separated, percent-encoded or not, as the
    export writes it) inside the export; empty when ``path`` is a URL or leaves the export."""
    inside = _inside(unquote(path.strip()).replace("\\", "/"))
    return PREFIX + inside if inside else ""


def _inside(path: str) -> str:
    """``path`` without ``.`` parts, or empty when it is not plainly inside the export."""
    parts = [p for p in PurePosixPath(path).parts if p != "."]
    if not parts or path.startswith("/") or ".." in parts or any(":" in p for p in parts):
        return ""
    return "/".join(parts)


class CarriedFiles:
    """The files inside one export (a folder, or a zip file), by their ``export:`` links."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def fetch(self, url: str, max_bytes: int) -> bytes:
        inside = _inside(url[len(PREFIX) :]) if url.startswith(PREFIX) else ""
        if not inside:
            raise FetchFailed(f"{url[:200]!r} is not a file inside the export", retry=False)
        if zipfile.is_zipfile(self.root):
            return self._from_zip(inside, max_bytes)
        return self._from_folder(inside, max_bytes)

    def _from_folder(self, inside: str, max_bytes: int) -> bytes:
        base = self.root.resolve()
        path = (base / inside).resolve()
        if not path.is_relative_to(base):  # a symlink out of the export
            raise FetchFailed(f"{inside} leads outside the export", retry=False)
        if not path.is_file():
            raise FetchFailed(f"{inside} is not in the export (exported without its media?)", retry=False)
        size = path.stat().st_size
        if size > max_bytes:
            raise FetchFailed(_too_big(size, max_bytes), retry=False)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise FetchFailed(f"cannot read {inside} in the export: {exc.strerror}", retry=False) from exc

    def _from_zip(self, inside: str, max_bytes: int) -> bytes:
        with zipfile.ZipFile(self.root) as archive:
            # The path as written, or under the zip's one top folder (``export/data/...``).
            found = [i for i in archive.infolist() if i.filename in (inside, *_under_top(i.filename, inside))]
            if not found:
                raise FetchFailed(f"{inside} is not in {self.root.name}", retry=False)
            info = found[0]
            if info.file_size > max_bytes:
                raise FetchFailed(_too_big(info.file_size, max_bytes), retry=False)
            with archive.open(info) as handle:
                data = handle.read(max_bytes + 1)  # the header's size may lie
        if len(data) > max_bytes:
            raise FetchFailed(_too_big(len(data), max_bytes), retry=False)
        return data


def _under_top(member: str, inside: str) -> tuple[str, ...]:
    top, _, rest = member.partition("/")
    return (member,) if top and rest == inside else ()


def _too_big(size: int, max_bytes: int) -> str:
    return f"the file is {size:,} bytes; the limit is {max_bytes:,} (TEAMLORE_FILE_MAX_BYTES)"


__all__ = ["PREFIX", "CarriedFiles", "carried_link"]
