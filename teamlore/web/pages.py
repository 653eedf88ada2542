"""The web wiki: server-rendered pages over the same capabilities and the same access rules as
the API. Works without JavaScript; every change is a POST form with a CSRF token."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from teamlore.app import Teamlore
from teamlore.capabilities.access import Role
from teamlore.capabilities.facts import FactView, SearchMode
from teamlore.capabilities.messages import channels_in, source_message
from teamlore.capabilities.review import Retract
from teamlore.domain import ReadView, Scope
from teamlore.errors import InvalidInput, NotFound, Unauthorized
from teamlore.timeutil import SENTINEL
from teamlore.web import auth
from teamlore.web.api import moment
from teamlore.web.auth import Caller, lore_of, scoped
from teamlore.web.render import section_html
from teamlore.wiki.model import PageVersion

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
HISTORY = ReadView(include_history=True)
SESSION_S = 12 * 3600


def when(moment_: datetime | None) -> str:
    if moment_ is None or moment_ == SENTINEL:
        return "open"
    return moment_.strftime("%Y-%m-%d %H:%M UTC")


def web_link(url: str | None) -> str | None:
    """A permalink as a link only when it is http(s): message fields are data, never script."""
    return url if url and url.lower().startswith(("https://", "http://")) else None


templates.env.filters["when"] = when
templates.env.filters["web_link"] = web_link
templates.env.filters["day"] = lambda m: "open" if m is None or m == SENTINEL else m.strftime("%Y-%m-%d")


def render(
    request: Request, name: str, context: dict[str, Any], who: Caller | None = None, status: int = 200
) -> HTMLResponse:
    csrf = request.cookies.get(auth.CSRF_COOKIE) or auth.new_csrf_token()
    base = {"caller": who, "csrf": csrf, "is_reviewer": who is not None and who.grant.role >= Role.REVIEWER}
    response = templates.TemplateResponse(request, name, {**base, **context}, status_code=status)
    if request.cookies.get(auth.CSRF_COOKIE) != csrf:
        _cookie(request, response, auth.CSRF_COOKIE, csrf)
    return response


def render_error(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", {"status": status, "message": message}, status=status)


def _cookie(request: Request, response: Response, name: str, value: str, max_age: int | None = None) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )


def _names(lore: Teamlore, scope: Scope) -> dict[str, str]:
    return {c.channel: c.name or c.channel for c in channels_in(lore.stores.messages, scope)}


def _channel(who: Caller) -> str:
    return next(iter(who.read_scope.channels))


# ---- signing in ----


@router.get("/")
def root() -> RedirectResponse:
    return RedirectResponse("/wiki", status_code=303)


@router.get("/login")
def login_form(request: Request, next: str = "/wiki") -> HTMLResponse:
    return render(request, "login.html", {"next": _local(next), "error": None})


@router.post("/login")
async def login(
    request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/wiki"
) -> Response:
    await auth.check_csrf(request)
    try:
        await run_in_threadpool(lore_of(request).access.authenticate, token.strip())
    except Unauthorized as exc:
        return render(request, "login.html", {"next": _local(next), "error": str(exc)}, status=401)
    response = RedirectResponse(_local(next), status_code=303)
    _cookie(request, response, auth.TOKEN_COOKIE, token.strip(), SESSION_S)
    _cookie(request, response, auth.CSRF_COOKIE, auth.new_csrf_token())  # a fresh one per session
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    await auth.check_csrf(request)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(auth.TOKEN_COOKIE, path="/")
    return response


def _local(target: str) -> str:
    """Only paths of this site: never an open redirect."""
    return target if target.startswith("/") and not target.startswith("//") else "/wiki"


# ---- reading ----


@router.get("/wiki")
def home(request: Request, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    channels = channels_in(lore.stores.messages, who.read_scope)
    counts: dict[str, int] = {}
    for entry in lore.pages.list(who.read_scope):
        counts[entry.page.channel] = counts.get(entry.page.channel, 0) + 1
    return render(request, "home.html", {"channels": channels, "counts": counts}, who)


@router.get("/wiki/search")
def search(
    request: Request,
    q: str = "",
    mode: SearchMode = SearchMode.HYBRID,
    as_of: str | None = None,
    who: Caller = scoped(),
) -> HTMLResponse:
    lore = lore_of(request)
    result = None
    if q.strip():
        view = ReadView(moment(as_of, "as of"))
        result = lore.reader.search(q, who.read_scope, view, mode, 20)
    selected = request.query_params.getlist("channel")
    all_channels = channels_in(lore.stores.messages, lore.access.scope(who.grant, None, None))
    context = {
        "q": q,
        "mode": mode.value,
        "as_of": as_of or "",
        "result": result,
        "channels": all_channels,
        "selected": selected[0] if len(selected) == 1 else "",
        "names": _names(lore, who.read_scope),
    }
    return render(request, "search.html", context, who)


@router.get("/wiki/activity")
def activity(request: Request, since: str | None = None, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    items = lore.recent_activity(who.read_scope, moment(since, "since"), 100)
    context = {"items": items, "since": since or "", "names": _names(lore, who.read_scope)}
    return render(request, "activity.html", context, who)


@router.get("/wiki/review")
def review(request: Request, who: Caller = scoped(Role.REVIEWER)) -> HTMLResponse:
    lore = lore_of(request)
    items = lore.review.items(who.read_scope)
    wanted = [f for item in items for f in (item.older_fact, item.newer_fact)]
    facts = {v.fact.fact_id: v for v in lore.reader.get_many(wanted, who.read_scope, HISTORY)}
    context = {"items": items, "facts": facts, "names": _names(lore, who.read_scope)}
    return render(request, "review.html", context, who)


@router.get("/wiki/{channel}")
def channel_pages(request: Request, channel: str, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    entries = lore.pages.list(who.read_scope)
    return render(
        request,
        "channel.html",
        {"channel": channel, "name": _names(lore, who.read_scope).get(channel, channel), "entries": entries},
        who,
    )


@router.get("/wiki/{channel}/facts/{fact_id}")
def fact_timeline(request: Request, channel: str, fact_id: str, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    history = lore.reader.history(fact_id, who.read_scope)
    if not history.versions:
        raise NotFound(f"no fact {fact_id} in this channel")
    events = sorted(
        [("version", v.fact.recorded_from, v) for v in history.versions]
        + [("audit", e.at, e) for e in history.audit],
        key=lambda item: (item[1], item[0] == "audit"),
    )
    context = {
        "channel": channel,
        "name": _names(lore, who.read_scope).get(channel, channel),
        "history": history,
        "latest": history.versions[-1],
        "events": events,
    }
    return render(request, "fact.html", context, who)


@router.get("/wiki/{channel}/messages/{message_id}")
def message(request: Request, channel: str, message_id: str, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    found = source_message(lore.stores.messages, who.read_scope, message_id)
    context = {
        "channel": channel,
        "name": _names(lore, who.read_scope).get(channel, channel),
        "message": found,
    }
    return render(request, "message.html", context, who)


@router.get("/wiki/{channel}/{slug}")
def page(
    request: Request,
    channel: str,
    slug: str,
    as_of: str | None = None,
    version: Annotated[int | None, Query(ge=1)] = None,
    who: Caller = scoped(),
) -> HTMLResponse:
    lore = lore_of(request)
    scope = who.read_scope
    current = lore.pages.get(slug, scope)
    when_ = moment(as_of, "as of")
    stored_then = None
    if when_ is not None:
        as_of_view = lore.pages.render_as_of(slug, scope, when_)
        shown, stored_then = as_of_view.rendered, as_of_view.stored_version
    else:
        shown = lore.pages.get(slug, scope, version)
    context = {
        "channel": channel,
        "name": _names(lore, scope).get(channel, channel),
        "page": shown,
        "current": current,
        "as_of": as_of or "",
        "as_of_moment": when_,
        "stored_then": stored_then,
        "sections": _sections(lore, scope, channel, shown, when_),
    }
    return render(request, "page.html", context, who)


def _sections(lore: Teamlore, scope: Scope, channel: str, page: PageVersion, when_: datetime | None):
    cited = [f for s in page.sections for f in s.citations]
    view = ReadView(valid_at=when_, include_history=True)
    facts: dict[str, FactView] = {v.fact.fact_id: v for v in lore.reader.get_many(cited, scope, view)}
    urls = {
        src.permalink: f"/wiki/{quote(channel)}/messages/{quote(src.message_id, safe='')}"
        for v in facts.values()
        for src in v.sources
        if src.permalink
    }
    fact_url = f"/wiki/{quote(channel)}/facts/{{fact_id}}"
    return [
        (section_html(s, urls, fact_url, s.citations), [facts[f] for f in s.citations if f in facts])
        for s in page.sections
    ]


@router.get("/wiki/{channel}/{slug}/history")
def page_history(
    request: Request,
    channel: str,
    slug: str,
    from_version: Annotated[int | None, Query(alias="from", ge=1)] = None,
    to_version: Annotated[int | None, Query(alias="to", ge=1)] = None,
    who: Caller = scoped(),
) -> HTMLResponse:
    lore = lore_of(request)
    versions = lore.pages.versions(slug, who.read_scope)
    current = lore.pages.get(slug, who.read_scope)
    diff = None
    if len(versions) > 1:
        newer = to_version or versions[0].version
        older = from_version or next((v.version for v in versions if v.version < newer), versions[-1].version)
        if older == newer:
            raise InvalidInput("pick two different versions to compare")
        diff = lore.pages.diff(slug, who.read_scope, older, newer)
    context = {
        "channel": channel,
        "name": _names(lore, who.read_scope).get(channel, channel),
        "page": current,
        "versions": versions,
        "diff": diff,
    }
    return render(request, "history.html", context, who)


# ---- reviewing ----


@router.post("/wiki/{channel}/review/{item_id}/accept")
def review_accept(
    request: Request, channel: str, item_id: int, who: Caller = scoped(Role.REVIEWER)
) -> Response:
    lore = lore_of(request)
    with request.app.state.write_lock:
        lore.review.accept(item_id, who.actor, who.read_scope)
        lore.wiki.flush(everything=True)
    return RedirectResponse(f"/wiki/review?done={item_id}", status_code=303)


@router.post("/wiki/{channel}/review/{item_id}/reject")
def review_reject(
    request: Request,
    channel: str,
    item_id: int,
    retract: Annotated[Retract, Form()] = Retract.NONE,
    who: Caller = scoped(Role.REVIEWER),
) -> Response:
    lore = lore_of(request)
    with request.app.state.write_lock:
        lore.review.reject(item_id, who.actor, retract, who.read_scope)
        lore.wiki.flush(everything=True)
    return RedirectResponse(f"/wiki/review?done={item_id}", status_code=303)
