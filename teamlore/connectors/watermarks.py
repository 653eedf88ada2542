"""Per-channel high-water marks: the newest message created that a connector saw, live or by a
backfill (its time and id), kept in the checkpoint store beside the backfill checkpoints under
``PLATFORM+watermark``. ``EventSink`` moves them on every delivery; catchup.py reads from them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from teamlore.domain import EventKind, MessageEvent
from teamlore.stores.protocols import Checkpoint, CheckpointStore
from teamlore.timeutil import utc_now

MARK = "+watermark"  # checkpoint source of a channel's high-water mark


@dataclass(frozen=True, slots=True)
class Watermark:
    ts: datetime
    message_id: str


class Watermarks:
    """Per-channel high-water marks in the checkpoint store."""

    def __init__(self, checkpoints: CheckpointStore) -> None:
        self._checkpoints = checkpoints

    def get(self, platform: str, workspace: str, channel: str) -> Watermark | None:
        saved = self._checkpoints.get(platform + MARK, workspace, channel)
        if saved is None:
            return None
        data = json.loads(saved.cursor)
        return Watermark(datetime.fromisoformat(data["ts"]), str(data["id"]))

    def advance(self, events: Sequence[MessageEvent]) -> None:
        """Move each channel's mark to the newest created message of ``events``, never back."""
        newest: dict[tuple[str, str, str], MessageEvent] = {}
        for event in events:
            key = (event.platform, event.workspace, event.channel)
            if event.kind is EventKind.CREATED and (key not in newest or event.ts > newest[key].ts):
                newest[key] = event
        for (platform, workspace, channel), event in newest.items():
            mark = self.get(platform, workspace, channel)
            if mark is not None and mark.ts >= event.ts:
                continue
            cursor = json.dumps({"ts": event.ts.isoformat(), "id": event.message_id})
            self._checkpoints.put(platform + MARK, workspace, channel, Checkpoint(cursor, True, 0), utc_now())
