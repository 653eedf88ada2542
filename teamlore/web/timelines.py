"""The wiki's "why" pages: a fact's timeline, a source message with what it produced, and a
page's history with the reason for each version and a word-level diff."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from teamlore.capabilities.explain import HISTORY, causes
from teamlore.capabilities.messages import source_message, thread_of
from teamlore.errors import InvalidInput, NotFound
from teamlore.web.auth import Caller, lore_of, scoped
from teamlore.web.pages import _names, render
from teamlore.web.worddiff import word_diff

router = APIRouter(include_in_schema=False)


@router.get("/wiki/{channel}/facts/{fact_id}")
def fact_timeline(request: Request, channel: str, fact_id: str, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    scope = who.read_scope
    history = lore.reader.history(fact_id, scope)
    if not history.versions:
        raise NotFound(f"There is no fact {fact_id} in #{_names(lore, scope).get(channel, channel)}.")
    latest = history.versions[-1]
    around = [latest.fact.superseded_by, *latest.fact.supersedes]
    related = {v.fact.fact_id: v for v in lore.reader.get_many([f for f in around if f], scope, HISTORY)}
    context = {
        "channel": channel,
        "name": _names(lore, scope).get(channel, channel),
        "history": history,
        "latest": latest,
        "replaced_by": related.get(latest.fact.superseded_by or ""),
        "replaces": [related[f] for f in latest.fact.supersedes if f in related],
        "causes": causes(lore.reader, lore.stores.messages, scope, history.audit),
    }
    return render(request, "fact.html", context, who)


@router.get("/wiki/{channel}/messages/{message_id}")
def message(request: Request, channel: str, message_id: str, who: Caller = scoped()) -> HTMLResponse:
    lore = lore_of(request)
    scope = who.read_scope
    found = source_message(lore.stores.messages, scope, message_id)
    context = {
        "channel": channel,
        "name": _names(lore, scope).get(channel, channel),
        "message": found,
        "facts": lore.reader.citing(message_id, scope, HISTORY),
        "thread": thread_of(lore.stores.messages, scope, found),
    }
    return render(request, "message.html", context, who)


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
    scope = who.read_scope
    versions = lore.pages.versions(slug, scope)
    current = lore.pages.get(slug, scope)
    diff, rows = None, []
    if len(versions) > 1:
        newer = to_version or versions[0].version
        older = from_version or next((v.version for v in versions if v.version < newer), versions[-1].version)
        if older == newer:
            raise InvalidInput("Pick two different versions to compare.")
        diff = lore.pages.diff(slug, scope, older, newer)
        before, after = (lore.pages.get(slug, scope, n).markdown for n in (diff.older, diff.newer))
        rows = word_diff(before, after)
    context = {
        "channel": channel,
        "name": _names(lore, scope).get(channel, channel),
        "page": current,
        "versions": versions,
        "reasons": lore.page_reasons(slug, scope),
        "diff": diff,
        "rows": rows,
    }
    return render(request, "history.html", context, who)
