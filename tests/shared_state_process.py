"""One Teamlore process of the server configuration, for the shared-state test:
``python -m tests.shared_state_process ACTION [ARG]`` with TEAMLORE_DATA_DIR, TEAMLORE_MONGO_URL
and TEAMLORE_MONGO_DB in its environment (its own empty data folder each). Opens the stores the
way the app does (``open_stores`` from Settings), does one thing, prints one JSON line.

    create-token            a reader token for T1/C1: {"token_id", "secret"}
    authenticate SECRET     {"ok": true, "channels": [...]} or {"ok": false, "error": "..."}
    revoke TOKEN_ID         {"ok": true}
    backfill PAGES          a backfill of a three-page history (cursors "", "p2", "p3"), at
                            most PAGES pages: {"resumed_from", "delivered": [ids], "total", "done"}
    spend N                 N calls of 10 prompt tokens recorded for judge/m1, then the totals
    totals                  {"calls", "prompt_tokens"} of judge/m1 (0 when none)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from teamlore.app import open_stores
from teamlore.capabilities.access import Access
from teamlore.config import Settings
from teamlore.connectors.backfill import Page, run_backfill
from teamlore.domain import MessageEvent, parse_event
from teamlore.errors import Unauthorized
from teamlore.stores.protocols import SpendRow
from teamlore.timeutil import utc_now

HISTORY = {"": (["1", "2"], "p2"), "p2": (["3", "4"], "p3"), "p3": (["5"], None)}


def _event(message_id: str) -> MessageEvent:
    data = {
        "kind": "message.created",
        "platform": "slack",
        "workspace": "T1",
        "channel": "C1",
        "message_id": message_id,
        "author_id": "U1",
        "author_name": "alice",
        "ts": "2026-01-05T10:00:00Z",
        "text": f"message {message_id}",
    }
    return parse_event(data, 40_000)


class Recorder:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def deliver(self, events: Sequence[MessageEvent]) -> object:
        self.ids += [e.message_id for e in events]
        return None


def main(action: str, arg: str = "") -> dict[str, object]:
    settings = Settings(_env_file=None)
    stores = open_stores(settings)
    try:
        access = Access(stores.tokens, lambda ws: ["C1"], utc_now)
        if action == "create-token":
            record, secret = access.create("bot", "reader", "T1", ["C1"])
            return {"token_id": record.token_id, "secret": secret}
        if action == "authenticate":
            try:
                grant = access.authenticate(arg)
            except Unauthorized as exc:
                return {"ok": False, "error": str(exc)}
            return {"ok": True, "channels": sorted(grant.channels or ())}
        if action == "revoke":
            access.revoke(arg)
            return {"ok": True}
        if action == "backfill":
            sink = Recorder()

            def fetch(cursor: str) -> Page:
                ids, following = HISTORY[cursor]
                return Page([_event(i) for i in ids], following)

            report = run_backfill("slack", "T1", "C1", fetch, sink, stores.checkpoints, max_pages=int(arg))
            return {
                "resumed_from": report.resumed_from,
                "delivered": sink.ids,
                "total": report.total_fetched,
                "done": report.done,
            }
        if action == "spend":
            for _ in range(int(arg)):
                stores.spend.record(SpendRow("judge", "m1", calls=1, prompt_tokens=10))
        if action in ("spend", "totals"):
            rows = [r for r in stores.spend.totals() if (r.role, r.model) == ("judge", "m1")]
            return {"calls": sum(r.calls for r in rows), "prompt_tokens": sum(r.prompt_tokens for r in rows)}
        raise SystemExit(f"unknown action {action!r}")
    finally:
        stores.close()


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
