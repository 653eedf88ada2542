"""Reviewer and admin commands: the review queue, manual facts, erasure."""

from __future__ import annotations

from typing import Annotated

import typer

from teamlore.capabilities import views
from teamlore.capabilities.review import Retract
from teamlore.cli.support import (
    Channels,
    DataDir,
    JsonFlag,
    Workspace,
    emit_json,
    open_lore,
    out,
    parse_option_time,
)
from teamlore.domain import FactType, ReadView, Scope

review_app = typer.Typer(no_args_is_help=True, help="Possible contradictions waiting for a person.")
HISTORY = ReadView(include_history=True)
Reviewer = Annotated[str, typer.Option("--by", help="Your name, recorded in the audit log.")]


@review_app.command("list")
def review_list(
    workspace: Workspace = None,
    channel: Channels = None,
    status: Annotated[str, typer.Option(help="open, accepted or rejected.")] = "open",
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Review items of the given channels, with both facts' statements."""
    scope = Scope(workspace or "", channel or [])
    lore = open_lore(data_dir)
    items = lore.review.items(scope, status)
    if as_json:
        emit_json([views.review_item_json(i) for i in items])
        return 0
    # Both statements through the gate, as the web review page reads them (with history: a
    # retired one is still the subject of its item; an erased or out-of-scope one shows as "?").
    wanted = [f for item in items for f in (item.older_fact, item.newer_fact)]
    shown = {v.fact.fact_id: v.fact.statement for v in lore.reader.get_many(wanted, scope, HISTORY)}
    for item in items:
        out.print(f"#{item.id} {item.kind} in {item.channel}: {item.reason}", markup=False)
        out.print(f"   older {item.older_fact}: {shown.get(item.older_fact, '?')}", markup=False)
        out.print(f"   newer {item.newer_fact}: {shown.get(item.newer_fact, '?')}", markup=False)
    if not items:
        out.print(f"no {status} review items")
    return 0


@review_app.command("accept")
def review_accept(
    item_id: int, by: Reviewer = "", data_dir: DataDir = None, as_json: JsonFlag = False
) -> int:
    """Apply the change: the newer fact replaces the older one."""
    lore = open_lore(data_dir)
    item = lore.review.accept(item_id, by)
    lore.wiki.flush(everything=True)
    emit_json(views.review_item_json(item)) if as_json else out.print(
        f"#{item.id} accepted by {by}", markup=False
    )
    return 0


@review_app.command("reject")
def review_reject(
    item_id: int,
    by: Reviewer = "",
    retract: Annotated[Retract, typer.Option(help="Retract one of the two, or neither.")] = Retract.NONE,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Keep both facts (flags cleared), or retract the newer or the older one."""
    lore = open_lore(data_dir)
    item = lore.review.reject(item_id, by, retract)
    lore.wiki.flush(everything=True)
    emit_json(views.review_item_json(item)) if as_json else out.print(
        f"#{item.id} rejected by {by}", markup=False
    )
    return 0


def register(app: typer.Typer, facts_app: typer.Typer) -> None:
    facts_app.command("add")(facts_add)
    facts_app.command("correct")(facts_correct)
    app.command("erase")(erase)


def facts_add(
    statement: str,
    workspace: Workspace = None,
    channel: Channels = None,
    by: Reviewer = "",
    valid_from: Annotated[str | None, typer.Option("--valid-from", help="When it became true.")] = None,
    fact_type: Annotated[FactType, typer.Option("--type")] = FactType.STATEMENT,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Add a fact by hand; it outranks anything extracted from messages."""
    if not by.strip():
        raise typer.BadParameter("a manual fact needs your name (--by)")
    scope = Scope(workspace or "", channel or [])
    lore = open_lore(data_dir)
    fact = lore.review.add_fact(
        scope, statement, by, parse_option_time(valid_from, "--valid-from"), fact_type
    )
    lore.wiki.flush(everything=True)
    emit_json(views.fact_json(fact)) if as_json else out.print(
        f"added {fact.fact_id} ({fact.status})", markup=False
    )
    return 0


def facts_correct(
    fact_id: str,
    statement: str,
    workspace: Workspace = None,
    channel: Channels = None,
    by: Reviewer = "",
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Replace a fact with your wording; the old one is superseded from now on."""
    if not by.strip():
        raise typer.BadParameter("a correction needs your name (--by)")
    scope = Scope(workspace or "", channel or [])
    lore = open_lore(data_dir)
    fact = lore.review.correct_fact(fact_id, scope, statement, by)
    lore.wiki.flush(everything=True)
    emit_json(views.fact_json(fact)) if as_json else out.print(
        f"{fact_id} corrected by {fact.fact_id}", markup=False
    )
    return 0


def erase(
    workspace: Workspace = None,
    author: Annotated[str, typer.Option("--author", help="The person's user id.")] = "",
    by: Reviewer = "",
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> int:
    """Erase a person's message text and the facts only they support, everywhere."""
    from teamlore.capabilities.holding import admin_holding, erasure_channels

    lore = open_lore(data_dir)
    # With Redis, no worker ingests the workspace's channels meanwhile (and no undo holds the words).
    with admin_holding(lore, erasure_channels(lore, workspace or ""), log_ahead=False):
        report = lore.erase_author(workspace or "", author, by)
    lore.wiki.flush(everything=True)
    if as_json:
        emit_json(views.erasure_json(report))
    else:
        out.print(
            f"erased {report.messages} message(s) of {report.author_id}: {len(report.facts_erased)} fact(s) "
            f"removed, {len(report.facts_kept_without_their_evidence)} kept on others' evidence, "
            f"{report.vectors} vector(s) deleted; {report.answers_reread} answer(s) to their questions"
            f" read again without them; {report.files} shared file(s) forgotten, {report.blobs} deleted",
            markup=False,
        )
    return 0
