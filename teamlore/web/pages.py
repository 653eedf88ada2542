"""The web wiki: server-rendered pages over the same capabilities and the same access rules as
the API. Works without JavaScript; every change is a POST form with a CSRF token."""

from __future__ import annotations

import re
from collections import Counter
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
from teamlore.capabilities.messages import channels_in, messages_linked
from teamlore.capabilities.review import Retract
from teamlore.domain import ReadView, Scope
from teamlore.errors import InvalidInput, NotFound, Unauthorized
from teamlore.timeutil import SENTINEL, parse_time
from teamlore.web import auth
from teamlore.web.auth import Caller, lore_of, scoped
from teamlore.web.render import RenderedSection, section_html
from teamlore.wiki.model import PageVersion

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
HISTORY = ReadView(include_history=True)
SESSION_S = 12 * 3600
ACTIVITY_PAGE = 50
LINK = re.compile(r"\]\((https?://[^)\s]+)\)")  # a Markdown link's target


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


HEADINGS = {400: "That did not work", 403: "Not allowed", 404: "Not found", 422: "That address is not valid"}
ADVICE = {
    400: "Check what you typed and try again.",
    403: "Your sign-in does not give you access to this. Ask an administrator if you need it.",
    404: "The link may be mistyped, or what it pointed to is gone.",
    422: "Part of the address is not valid. Check the link, or start again from your channels.",
}


def render_error(request: Request, status: int, message: str, who: Caller | None = None) -> HTMLResponse:
    context = {
        "status": status,
        "heading": HEADINGS.get(status, "Something went wrong"),
        "advice": ADVICE.get(status, "Try again in a moment; if it keeps happening, tell an administrator."),
        "message": message,
    }
    return render(request, "error.html", context, who, status=status)


def signed_in(request: Request) -> Caller | None:
    """The wiki reader behind a request, when its cookie holds a valid token (for error pages,
    which keep the navigation); None otherwise."""
    token = request.cookies.get(auth.TOKEN_COOKIE)
    if not token:
        return None
    try:
        return Caller(lore_of(request).access.authenticate(token), None)
    except Unauthorized:
        return None


def asked_day(value: str | None, label: str) -> datetime | None:
    """A date from a wiki form (YYYY-MM-DD; a full ISO time is accepted too), or None."""
    if value is None or not value.strip():
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise InvalidInput(
            f"“{value.strip()[:40]}” is not a date the wiki can read. Write {label} as YYYY-MM-DD, for"
            " example 2026-02-01."
        ) from None


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
    when_ = asked_day(as_of, "the as-of date")
    readable = lore.access.scope(who.grant, None, None)
    elsewhere: list[tuple[str, int]] = []
    if q.strip():
        result = lore.reader.search(q, who.read_scope, ReadView(when_), mode, 20)
        others = readable.channels - who.read_scope.channels
        if not result.hits and others:
            # Nothing here: say where the reader's other channels have something.
            wider = lore.reader.search(q, Scope(readable.workspace, others), ReadView(when_), mode, 20)
            elsewhere = Counter(hit.channel for hit in wider.hits).most_common()
    selected = request.query_params.getlist("channel")
    all_channels = channels_in(lore.stores.messages, readable)
    context = {
        "q": q,
        "mode": mode.value,
        "as_of": as_of or "",
        "as_of_moment": when_,
        "result": result,
        "elsewhere": elsewhere,
        "channels": all_channels,
        "selected": selected[0] if len(selected) == 1 else "",
        "names": _names(lore, readable),
    }
    return render(request, "search.html", context, who)


@router.get("/wiki/activity")
def activity(
    request: Request,
    since: str | None = None,
    before: Annotated[int | None, Query(ge=0)] = None,
    after: Annotated[int | None, Query(ge=0)] = None,
    who: Caller = scoped(),
) -> HTMLResponse:
    lore = lore_of(request)
    start = asked_day(since, "the start date")
    found = lore.activity_page(who.read_scope, start, ACTIVITY_PAGE, before, after)
    context = {
        "found": found,
        "since": since or "",
        "names": _names(lore, who.read_scope),
        "paged": before is not None or after is not None,
        "page_size": ACTIVITY_PAGE,
    }
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
    names = _names(lore, who.read_scope)
    if channel not in names:
        raise NotFound(f"There is no channel {channel} in workspace {who.grant.workspace}.")
    entries = lore.pages.list(who.read_scope)
    context = {"channel": channel, "name": names[channel], "entries": entries}
    return render(request, "channel.html", context, who)


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
    when_ = asked_day(as_of, "the as-of date")
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
        "in_the_past": when_ is not None and when_ < lore.clock(),
        "stored_then": stored_then,
        "sections": _sections(lore, scope, channel, shown, when_),
    }
    return render(request, "page.html", context, who)


def _sections(
    lore: Teamlore, scope: Scope, channel: str, page: PageVersion, when_: datetime | None
) -> list[tuple[RenderedSection, list[FactView]]]:
    cited = [f for s in page.sections for f in s.citations]
    view = ReadView(valid_at=when_, include_history=True)
    facts: dict[str, FactView] = {v.fact.fact_id: v for v in lore.reader.get_many(cited, scope, view)}
    urls = {
        src.permalink: f"/wiki/{quote(channel)}/messages/{quote(src.message_id, safe='')}"
        for v in facts.values()
        for src in v.sources
        if src.permalink
    }
    # Links to messages of facts not cited here ("replaced by ...", "update: ..."): same page.
    others = {link for s in page.sections for link in LINK.findall(s.body)} - set(urls)
    linked = messages_linked(lore.stores.messages, scope, channel, sorted(others))
    for permalink, message_id in linked.items():
        urls[permalink] = f"/wiki/{quote(channel)}/messages/{quote(message_id, safe='')}"
    fact_url = f"/wiki/{quote(channel)}/facts/{{fact_id}}"
    return [
        (section_html(s, urls, fact_url, s.citations), [facts[f] for f in s.citations if f in facts])
        for s in page.sections
    ]


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
