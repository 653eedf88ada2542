"""POST /api/push: signed batches of normalized events (see ``capabilities.push`` for the rules)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header, Request
from starlette.concurrency import run_in_threadpool

from teamlore.capabilities.push import PushReceipt, PushRequest
from teamlore.errors import TeamloreError, TooLarge
from teamlore.web.auth import lore_of

router = APIRouter(prefix="/api")


async def _body(request: Request, limit: int) -> bytes:
    """The body, refused as soon as it passes the limit (never read whole into memory first)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the body is {int(declared):,} bytes; the limit is {limit:,}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the body is over the limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@router.post(
    "/push",
    tags=["push"],
    summary="A signed batch of normalized events",
    description='Body `{"events": [...]}`; headers X-Teamlore-Timestamp (Unix seconds), '
    "X-Teamlore-Signature (`sha256=` + hex HMAC-SHA256 of `timestamp + '.' + body` under "
    "TEAMLORE_PUSH_SECRET) and Idempotency-Key.",
)
async def push(
    request: Request,
    x_teamlore_timestamp: str | None = Header(None),
    x_teamlore_signature: str | None = Header(None),
    idempotency_key: str | None = Header(None),
) -> dict[str, Any]:
    lore = lore_of(request)
    metrics = request.app.state.metrics
    try:
        body = await _body(request, lore.settings.push_max_bytes)
        pushed = PushRequest(body, x_teamlore_timestamp, x_teamlore_signature, idempotency_key)

        def accept() -> PushReceipt:
            with request.app.state.write_lock:
                return lore.push.accept(pushed)

        receipt = await run_in_threadpool(accept)
    except TeamloreError:
        metrics.pushed.labels("refused").inc()
        raise
    metrics.pushed.labels("accepted").inc(receipt.events)
    return {
        "accepted": receipt.events,
        "delivery": receipt.delivery,
        "outcomes": receipt.outcomes,
        "spooled": receipt.spooled,
    }
