"""The JSON API: thin routes over the capabilities, each behind ``auth.scoped`` or ``auth.unscoped``.

Reads answer the same JSON as the CLI's ``--json`` (``capabilities.views``). Changes (review,
admin) run one at a time under the app's write lock and rewrite the affected pages before they
answer, as the CLI does.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request, Response

from teamlore.capabilities import views
from teamlore.capabilities.access import Role
from teamlore.capabilities.facts import SearchMode
from teamlore.capabilities.messages import channels_in, source_message
from teamlore.capabilities.review import Retract
from teamlore.domain import ReadView
from teamlore.errors import Forbidden, InvalidInput, NotFound
from teamlore.timeutil import parse_time
from teamlore.web.auth import Caller, lore_of, scoped, unscoped

router = APIRouter(prefix="/api")
Time = Annotated[str | None, Query(description="ISO 8601, e.g. 2026-02-01 or 2026-02-01T12:00:00Z.")]


def moment(value: str | None, name: str) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise InvalidInput(f"{name}: {exc}") from None


def writing(request: Request) -> threading.RLock:
    """One change at a time: SQLite serializes writes anyway; this keeps shared caches safe."""
    lock: threading.RLock = request.app.state.write_lock
    return lock


@router.get("/channels", tags=["read"], summary="Channels the token may read")
def list_channels(request: Request, who: Caller = scoped()) -> list[dict[str, Any]]:
    return [views.channel_json(c) for c in channels_in(lore_of(request).stores.messages, who.read_scope)]


@router.get("/search", tags=["read"], summary="Search facts and the messages no fact covers")
def search(
    request: Request,
    q: Annotated[str, Query(description="What to look for.")],
    mode: SearchMode = SearchMode.HYBRID,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    as_of: Time = None,
    known_at: Time = None,
    history: bool = False,
    who: Caller = scoped(),
) -> dict[str, Any]:
    view = ReadView(moment(as_of, "as_of"), moment(known_at, "known_at"), history)
    return views.search_json(lore_of(request).reader.search(q, who.read_scope, view, mode, limit))


@router.get("/ask", tags=["read"], summary="Answer a question from the facts, with citations")
def ask(
    request: Request,
    q: Annotated[str, Query(description="A question, in words.")],
    limit: Annotated[int, Query(ge=1, le=50)] = 5,
    as_of: Time = None,
    who: Caller = scoped(),
) -> dict[str, Any]:
    answer = lore_of(request).ask(q, who.read_scope, ReadView(moment(as_of, "as_of")), limit)
    return views.answer_json(answer)


@router.get("/activity", tags=["read"], summary="What changed recently, newest first, a page at a time")
def activity(
    request: Request,
    response: Response,
    since: Time = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[int | None, Query(ge=0, description="Cursor: the events older than this seq.")] = None,
    after: Annotated[int | None, Query(ge=0, description="Cursor: the events newer than this seq.")] = None,
    who: Caller = scoped(),
) -> list[dict[str, Any]]:
    found = lore_of(request).activity_page(who.read_scope, moment(since, "since"), limit, before, after)
    here = request.url.remove_query_params(["before", "after"])
    links = [
        f'<{here.include_query_params(**{key: seq})}>; rel="{rel}"'
        for key, seq, rel in (("before", found.older, "next"), ("after", found.newer, "prev"))
        if seq is not None
    ]
    if links:
        response.headers["Link"] = ", ".join(links)
    return [views.activity_json(a) for a in found.items]


@router.get("/pages", tags=["wiki"], summary="Pages of the channels")
def pages(request: Request, who: Caller = scoped()) -> list[dict[str, Any]]:
    return [views.page_listing_json(e) for e in lore_of(request).pages.list(who.read_scope)]


@router.get(
    "/pages/{slug}",
    tags=["wiki"],
    summary="One page: current, a version, as known at a time, or rendered for what was true at a date",
)
def page(
    request: Request,
    slug: str,
    version: Annotated[int | None, Query(ge=1)] = None,
    as_of: Annotated[str | None, Query(description="Render the page from the facts true then.")] = None,
    known_at: Annotated[str | None, Query(description="The version the wiki showed then.")] = None,
    who: Caller = scoped(),
) -> dict[str, Any]:
    reader = lore_of(request).pages
    when = moment(as_of, "as_of")
    if when is not None:
        if version is not None or known_at is not None:
            raise InvalidInput("give one of version, as_of and known_at")
        return views.as_of_json(reader.render_as_of(slug, who.read_scope, when))
    return views.page_json(reader.get(slug, who.read_scope, version, moment(known_at, "known_at")))


@router.get("/pages/{slug}/versions", tags=["wiki"], summary="A page's stored versions, newest first")
def page_versions(request: Request, slug: str, who: Caller = scoped()) -> list[dict[str, Any]]:
    return views.page_versions_json(lore_of(request).pages.versions(slug, who.read_scope))


@router.get("/pages/{slug}/diff", tags=["wiki"], summary="What changed between two versions of a page")
def page_diff(
    request: Request,
    slug: str,
    from_version: Annotated[int, Query(alias="from", ge=1)],
    to_version: Annotated[int, Query(alias="to", ge=1)],
    who: Caller = scoped(),
) -> dict[str, Any]:
    return views.diff_json(lore_of(request).pages.diff(slug, who.read_scope, from_version, to_version))


@router.get("/facts/{fact_id}", tags=["read"], summary="One fact as it stood at a moment")
def fact(
    request: Request, fact_id: str, as_of: Time = None, known_at: Time = None, who: Caller = scoped()
) -> dict[str, Any]:
    view = ReadView(moment(as_of, "as_of"), moment(known_at, "known_at"), include_history=True)
    shown = lore_of(request).reader.get(fact_id, who.read_scope, view)
    if shown is None:
        raise NotFound(f"no fact {fact_id} in the channels asked for")
    return views.fact_view_json(shown)


@router.get("/facts/{fact_id}/history", tags=["read"], summary="Every version of a fact, and its audit")
def fact_history(request: Request, fact_id: str, who: Caller = scoped()) -> dict[str, Any]:
    history = lore_of(request).reader.history(fact_id, who.read_scope)
    if not history.versions:
        raise NotFound(f"no fact {fact_id} in the channels asked for")
    return views.history_json(history)


@router.get("/messages/{message_id}", tags=["read"], summary="A source message (one channel)")
def message(request: Request, message_id: str, who: Caller = scoped()) -> dict[str, Any]:
    return views.message_json(source_message(lore_of(request).stores.messages, who.read_scope, message_id))


@router.get("/review", tags=["review"], summary="Review items (reviewer)")
def review_items(
    request: Request,
    status: Annotated[str, Query(pattern="^(open|accepted|rejected)$")] = "open",
    who: Caller = scoped(Role.REVIEWER),
) -> list[dict[str, Any]]:
    return [views.review_item_json(i) for i in lore_of(request).review.items(who.read_scope, status)]


@router.post("/review/{item_id}/accept", tags=["review"], summary="Accept: the newer fact replaces the older")
def review_accept(request: Request, item_id: int, who: Caller = scoped(Role.REVIEWER)) -> dict[str, Any]:
    lore = lore_of(request)
    with writing(request):
        item = lore.review.accept(item_id, who.actor, who.read_scope)
        lore.wiki.flush(everything=True)
    return views.review_item_json(item)


@router.post("/review/{item_id}/reject", tags=["review"], summary="Reject: keep both, or retract one")
def review_reject(
    request: Request, item_id: int, retract: Retract = Retract.NONE, who: Caller = scoped(Role.REVIEWER)
) -> dict[str, Any]:
    lore = lore_of(request)
    with writing(request):
        item = lore.review.reject(item_id, who.actor, retract, who.read_scope)
        lore.wiki.flush(everything=True)
    return views.review_item_json(item)


@router.post("/admin/reindex", tags=["admin"], summary="Re-extract channels from their stored messages")
def admin_reindex(request: Request, response: Response, who: Caller = scoped(Role.ADMIN)) -> dict[str, Any]:
    from teamlore.capabilities.reindex import reindex_channel

    lore, scope = lore_of(request), who.read_scope
    if lore.settings.redis_url:
        # On the admin queue: a long re-index never holds the request or delays live messages.
        response.status_code = 202
        return {
            c: {"queued": lore.producer().admin("teamlore.reindex_channel", scope.workspace, c)}
            for c in sorted(scope.channels)
        }
    with writing(request):
        reports = {c: reindex_channel(scope.workspace, c, lore.pipeline) for c in sorted(scope.channels)}
        lore.wiki.flush(everything=True)
    return {
        c: {"messages": r.messages, "created": r.created, "retracted": r.retracted}
        for c, r in reports.items()
    }


@router.post("/admin/pages/rebuild", tags=["admin"], summary="Re-route every fact and rewrite every page")
def admin_rebuild(request: Request, who: Caller = scoped(Role.ADMIN)) -> dict[str, Any]:
    lore = lore_of(request)
    with writing(request):
        report = lore.wiki.rebuild(who.read_scope)
    return {"pages_rewritten": report.pages_rewritten, "writer_calls": report.writer_calls}


@router.post(
    "/admin/erase", tags=["admin"], summary="Erase a person's messages and the facts only they support"
)
def admin_erase(
    request: Request,
    response: Response,
    author: Annotated[str, Query(description="The person's user id.")],
    who: Caller = unscoped(Role.ADMIN),
) -> dict[str, Any]:
    if who.grant.channels is not None:
        # Erasure reaches every channel of the workspace, so it needs a grant for all of them.
        raise Forbidden("erasing a person needs an admin token for every channel of the workspace")
    lore = lore_of(request)
    if lore.settings.redis_url:
        response.status_code = 202
        task = lore.producer().admin("teamlore.erase_person", who.grant.workspace, author, who.actor)
        return {"workspace": who.grant.workspace, "author_id": author, "queued": task}
    with writing(request):
        report = lore.erase_author(who.grant.workspace, author, who.actor)
        lore.wiki.flush(everything=True)
    return views.erasure_json(report)


@router.get("/admin/tokens", tags=["admin"], summary="Tokens within the caller's grant (never their secrets)")
def tokens_list(request: Request, who: Caller = unscoped(Role.ADMIN)) -> list[dict[str, Any]]:
    return [views.token_json(r) for r in lore_of(request).access.list_within(who.grant)]


@router.post("/admin/tokens", tags=["admin"], summary="Create a token; the secret is in this answer only")
def tokens_create(
    request: Request,
    name: Annotated[str, Body()],
    role: Annotated[str, Body()] = "reader",
    channels: Annotated[list[str] | None, Body(description="null: every channel of the workspace")] = None,
    who: Caller = unscoped(Role.ADMIN),
) -> dict[str, Any]:
    lore = lore_of(request)
    # An admin can hand out only what it may read itself.
    if channels is None and who.grant.channels is not None:
        raise Forbidden("a token for every channel needs an admin token for every channel")
    if channels is not None:
        lore.access.scope(who.grant, who.grant.workspace, channels, Role.ADMIN)
    with writing(request):
        record, secret = lore.access.create(name, role, who.grant.workspace, channels)
    return {**views.token_json(record), "token": secret}


@router.delete("/admin/tokens/{token_id}", tags=["admin"], summary="Revoke a token at once")
def tokens_revoke(
    request: Request, token_id: Annotated[str, Path()], who: Caller = unscoped(Role.ADMIN)
) -> dict[str, Any]:
    lore = lore_of(request)
    record = next((r for r in lore.access.list(who.grant.workspace) if r.token_id == token_id), None)
    if record is None:
        raise NotFound(f"no token {token_id} in workspace {who.grant.workspace}")
    if not who.grant.covers(record):
        raise Forbidden("this token reaches channels the admin token may not read")
    with writing(request):
        lore.access.revoke(token_id)
    return {"token_id": token_id, "revoked": True}
