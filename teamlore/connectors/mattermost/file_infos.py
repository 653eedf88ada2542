"""A post's files named in full: ``file_ids`` completed from ``GET /api/v4/files/{id}/info``.

A post carries its files twice: ``file_ids`` and, in ``metadata.files``, each file's FileInfo
(name, type, size). A post without that metadata (an older server, a client that strips it)
would lose its files: each id without a FileInfo is looked up, so the file is recorded and read
like any other. An id that cannot be looked up is left out with a warning; the post is kept.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
from mattermostautodriver import TypedDriver
from mattermostautodriver.exceptions import InvalidMattermostError

log = logging.getLogger(__name__)
# Mattermost attaches at most 10 files to a post; more ids than that are not looked up (a forged
# post cannot make the connector call the server once per id).
MAX_FILES = 10


def with_file_infos(post: dict[str, Any], driver: TypedDriver) -> dict[str, Any]:
    """``post``, its ``metadata.files`` holding a FileInfo for every id of ``file_ids``."""
    ids, metadata = post.get("file_ids"), post.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    known = metadata.get("files")
    if not isinstance(known, list):
        known = []
    have = {f.get("id") for f in known if isinstance(f, dict)}
    listed = ids[:MAX_FILES] if isinstance(ids, list) else []
    missing = [i for i in listed if isinstance(i, str) and i and i not in have]
    if not missing:
        return post
    found = [info for file_id in missing if (info := _info(driver, file_id, post.get("id"))) is not None]
    return {**post, "metadata": {**metadata, "files": [*known, *found]}}


def _info(driver: TypedDriver, file_id: str, post_id: Any) -> dict[str, Any] | None:
    try:
        info = driver.files.get_file_info(file_id)
    except (httpx.HTTPError, InvalidMattermostError) as exc:
        log.warning("post %s: file %s not looked up (%s); the post is kept without it", post_id, file_id, exc)
        return None
    return info if isinstance(info, dict) else None
